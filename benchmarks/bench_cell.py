"""Benchmarks of whole cells: retail end to end, catalog scaling, and a cProfile of the cell.

Cell (the issue-5 cell)
    retail, bm25, schema-token costs, lambda 0.12, d 1, 5 folds, every method of
    :data:`camdf.policies.METHODS`, one cross-fit (R = 1; also timed once at the default R = 5):
    :func:`camdf.pipeline.cell_job.run_cell` end to end from a
    cold score cache (load, score, price, pad, evaluate, summarise with the bootstrap,
    plot), and its parts timed alone: :func:`camdf.pipeline.assembly.cell_instances` and
    :func:`camdf.evaluation.cell.evaluate_cell` (also with the Table 2 methods of
    ``conf/method/main.yaml``).  Target: <= 10 s end to end.  Reference: the same
    ``evaluate_cell`` with BLAS threads left at the library default (the code before the
    single-thread limit); its outcomes are checked identical.

Scaling
    The same cell with the Table 2 methods on retail plus 0, 100, 500, 1 000 and 2 472
    distractor tools (7 to 2 479 candidates per task; :func:`camdf.data.distractors.with_distractors`,
    seed 0), built into a temporary folder.  The built sources (airline, telecom, bfcl_multi_turn)
    offer only 181 distinct tools, so the pool adds ``bfcl_single_turn``: the function
    definitions of BFCL's single-turn categories (package ``bfcl-eval``), written to the
    same temporary folder; beyond 1 000 distractors it also draws on StableToolBench's
    catalog (:func:`bench_catalog.catalog_domain`: the folder, or a synthetic catalog of its
    shape).  Wall and CPU seconds per row.  Target: time per cell at 1 000 distractors <= 12x
    the time at 100 (the candidate states grow 9.4x), and flat time per state.

Profile
    :mod:`cProfile` of ``evaluate_cell`` on the issue-5 cell: the top functions by own
    time and by cumulative time, and own time grouped by package.

Needs the built domains (``make data``).  Run as ``python benchmarks/bench_cell.py``
(``BENCH_JSON=1`` also prints the figures as JSON) or call :func:`run`.
"""

from __future__ import annotations

import contextlib
import cProfile
import importlib.resources
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_cell.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ROOT, cell_config, emit_json, load, method_names, timed  # noqa: E402

from camdf.evaluation import cell as cell_module  # noqa: E402
from camdf.evaluation.cell import evaluate_cell  # noqa: E402
from camdf.pipeline.assembly import Paths, cell_instances  # noqa: E402
from camdf.pipeline.cell_job import run_cell  # noqa: E402
from camdf.policies import METHODS  # noqa: E402

TARGET_CELL_S = 10.0
DISTRACTORS = (0, 100, 500, 1000, 2472)  # 7 to 2,479 candidates per task (StableToolBench's catalog size)
SOURCES = ("airline", "telecom", "bfcl_multi_turn")
# Beyond this many distractors the pool also draws on StableToolBench's catalog (the rows up to it keep theirs).
POOL_WITHOUT_CATALOG = 1000
CATALOG_SOURCE = "stabletoolbench"
BFCL_SOURCE = "bfcl_single_turn"
BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple")
TARGET_SCALING = 12.0
SEED = 0


def _cfg(methods: list[str]) -> dict:
    cfg = cell_config()
    cfg["method"] = {**cfg["method"], "names": list(methods)}
    return cfg


def _evaluate(inst, cfg: dict, membership_cache: str | None = None):
    return evaluate_cell(inst, float(cfg["cost"]["lam"]), list(cfg["method"]["names"]), kind=cfg["payoff"],
                         random_state=int(cfg["seed"]), label_noise=float(cfg.get("label_noise", 0.0)),
                         membership_cache=membership_cache)


def _instances(cfg: dict, data_dir: Path):
    with tempfile.TemporaryDirectory(prefix="bench-cell-") as cache:  # cold score cache every time
        return cell_instances(cfg, Paths(data_dir, Path(cache)))[0]


class _DefaultThreads:
    """Stands in for ``camdf.evaluation.cell._blas_controller()``: leaves BLAS threads as the libraries set them."""

    def limit(self, **_):
        return contextlib.nullcontext()


def bench_cell(repeats: int = 2) -> dict:
    """The issue-5 cell end to end and by parts, the Table 2 cell, and the default-threads reference."""
    cfg_all, cfg_main = _cfg(list(METHODS)), _cfg(method_names("main"))
    data_dir = ROOT / "data"
    cfg_r5 = {**cfg_all, "folds": {**cfg_all["folds"], "repeats": 5}}
    cfg_all = {**cfg_all, "folds": {**cfg_all["folds"], "repeats": 1}}  # the issue-5 cell: one cross-fit

    def end_to_end(cfg=cfg_all):
        with tempfile.TemporaryDirectory(prefix="bench-cell-") as cache:
            return run_cell(cfg, Paths(data_dir, Path(cache)))

    e2e = timed(end_to_end, repeats)
    e2e_r5 = timed(lambda: end_to_end(cfg_r5), 1)  # the default protocol: R = 5 repeated cross-fits
    inst_t = timed(lambda: _instances(cfg_all, data_dir), 3)
    inst = inst_t.result
    ev_all = timed(lambda: _evaluate(inst, cfg_all), repeats)
    ev_main = timed(lambda: _evaluate(inst, cfg_main), repeats)
    with mock.patch.object(cell_module, "_blas_controller", lambda: _DefaultThreads()):
        ref = timed(lambda: _evaluate(inst, cfg_all), 1)
    # Decisions and tuned parameters must be identical; the lite coefficients (written with 6 significant
    # digits) may differ in the last bits of a double between the two thread settings.
    identical = bool(ref.result.outcomes.equals(ev_all.result.outcomes)
                     and ref.result.tuned.equals(ev_all.result.tuned)
                     and np.allclose(ref.result.lite_coefficients, ev_all.result.lite_coefficients, rtol=0, atol=1e-12))
    assert identical, "evaluate_cell: outcomes differ between the BLAS thread settings"
    # The grid cells' speed-up: membership probabilities depend on rankings, labels and folds, not on
    # lambda or d, so the 50 cells of a lambda x d grid share them through the membership cache.
    cfg_grid = _cfg(method_names("grid"))
    with tempfile.TemporaryDirectory(prefix="bench-membership-") as mcache:
        grid_cold = timed(lambda: _evaluate(inst, cfg_grid), repeats)
        _evaluate(inst, cfg_grid, mcache)  # fill the cache
        grid_warm = timed(lambda: _evaluate(inst, cfg_grid, mcache), repeats)
    same = bool(grid_cold.result.outcomes.equals(grid_warm.result.outcomes))
    assert same, "evaluate_cell: outcomes differ with cached membership probabilities"
    return {
        "cell": "retail, bm25, schema_tokens, lambda=0.12, d=1, 5 folds",
        "tasks": inst.T,
        "states": int(inst.n.sum()),
        "methods_all": len(METHODS),
        "methods_main": len(cfg_main["method"]["names"]),
        "run_cell_end_to_end": e2e.as_dict(),
        "run_cell_end_to_end_r5": e2e_r5.as_dict(),
        "cell_instances": inst_t.as_dict(),
        "evaluate_cell_all_methods": ev_all.as_dict(),
        "evaluate_cell_main_methods": ev_main.as_dict(),
        "summary_and_plot_s": max(0.0, e2e.best - inst_t.best - ev_all.best),
        "reference_default_threads": ref.as_dict(),
        "reference_outcomes_identical": identical,
        "ratio_reference_vs_evaluate": ref.best / ev_all.best,
        "evaluate_cell_grid_methods": grid_cold.as_dict(),
        "evaluate_cell_grid_methods_cached_membership": grid_warm.as_dict(),
        "ratio_grid_uncached_vs_cached": grid_cold.best / grid_warm.best,
        "cached_outcomes_identical": same,
        "target_s": TARGET_CELL_S,
        "meets_target": e2e.best <= TARGET_CELL_S,
        "load_avg": load(),
    }


# ---------------------------------------------------------------- scaling


def bfcl_single_turn_source():
    """A distractor source: every distinct function of BFCL's single-turn categories (first definition per name).

    Its tasks are the categories' questions with empty required sets (the domain is only
    read for its catalog).
    """
    from camdf.data.model import Domain, Task, Tool

    tools: dict[str, Tool] = {}
    tasks = []
    for category in BFCL_CATEGORIES:
        text = importlib.resources.files("bfcl_eval").joinpath("data", f"BFCL_v4_{category}.json").read_text("utf-8")
        for line in text.splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            turn = row.get("question") or [[{"content": ""}]]
            tasks.append(Task(id=row["id"], text=str(turn[0][-1].get("content", "")), required=()))
            for fn in row.get("function") or []:
                tools.setdefault(fn["name"], Tool(name=fn["name"], description=fn.get("description", ""),
                                                  parameters=fn.get("parameters"), kind="generic"))
    from camdf.integrations.bfcl.convert import package_version

    return Domain(name=BFCL_SOURCE, source=f"bfcl-eval {package_version()} single-turn functions",
                  tools=list(tools.values()), tasks=tasks)


def scaling_data(folder: Path, counts=DISTRACTORS, base: str = "retail", domain_cfg: dict | None = None) -> dict:
    """Build ``base`` with each number of distractors under ``folder``; return ``count -> domain name``."""
    from camdf.data.distractors import with_distractors
    from camdf.data.io import write_domain

    domain_cfg = domain_cfg or cell_config()["domain"]
    for name in (base, *SOURCES):
        (folder / name).symlink_to(ROOT / "data" / name, target_is_directory=True)
    write_domain(bfcl_single_turn_source(), folder / BFCL_SOURCE)
    names = {}
    for n in counts:
        sources = [*SOURCES, BFCL_SOURCE]
        if n > POOL_WITHOUT_CATALOG:
            if not (folder / CATALOG_SOURCE).is_dir():
                from bench_catalog import catalog_domain

                write_domain(catalog_domain()[0], folder / CATALOG_SOURCE)
            sources.append(CATALOG_SOURCE)
        dom = with_distractors(base, n, SEED, folder, sources,
                               domain_cfg["acquirable_kinds"], domain_cfg["never_acquirable"])
        write_domain(dom, folder / dom.name)
        names[n] = dom.name
    return names


def bench_scaling(counts=DISTRACTORS) -> dict:
    """Time per cell (instances from a cold cache + evaluate_cell, Table 2 methods) against catalog size."""
    cfg = _cfg(method_names("main"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        folder = Path(tmp)
        names = scaling_data(folder, counts, domain_cfg=cfg["domain"])
        for n in counts:
            cfg_n = {**cfg, "domain": {**cfg["domain"], "name": names[n]}}
            c0 = time.process_time()
            inst_t = timed(lambda: _instances(cfg_n, folder), 1)
            inst = inst_t.result
            states = int(inst.n.sum())
            repeats = 2 if states < 20_000 else 1
            c1 = time.process_time()
            ev = timed(lambda: _evaluate(inst, cfg_n), repeats)
            # CPU seconds of this process (the cell runs on one thread): on a busy shared machine wall time
            # also counts waiting for a core, CPU time much less so.
            cpu = (c1 - c0) + (time.process_time() - c1) / repeats
            rows.append({
                "distractors": n,
                "candidates": int(inst.N),
                "states": states,
                "instances_s": inst_t.best,
                "evaluate_s": ev.best,
                "cell_s": inst_t.best + ev.best,
                "us_per_state": (inst_t.best + ev.best) / states * 1e6,
                "cpu_s": cpu,
                "cpu_us_per_state": cpu / states * 1e6,
                "load_avg": load(),
            })
    by_n = {r["distractors"]: r for r in rows}
    out = {"methods": cfg["method"]["names"], "rows": rows, "target_ratio": TARGET_SCALING}
    if 100 in by_n and 1000 in by_n:
        out["time_ratio_1000_vs_100"] = by_n[1000]["cell_s"] / by_n[100]["cell_s"]
        out["state_ratio_1000_vs_100"] = by_n[1000]["states"] / by_n[100]["states"]
        out["meets_target"] = out["time_ratio_1000_vs_100"] <= TARGET_SCALING
        out["cpu_ratio_1000_vs_100"] = by_n[1000]["cpu_s"] / by_n[100]["cpu_s"]
    return out


# ---------------------------------------------------------------- profile


def _package(filename: str) -> str:
    """Group a profiled file by top-level package (``camdf``, ``lightgbm``, ...; built-ins as ``<built-in>``)."""
    if filename.startswith("~") or filename.startswith("<"):
        return "<built-in>"
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if "camdf" in parts:
        return "camdf"
    return "stdlib"


def _label(func: tuple) -> str:
    filename, line, name = func
    if filename.startswith("~"):
        return name
    parts = Path(filename).parts
    if "site-packages" in parts:
        parts = parts[parts.index("site-packages") + 1:]
    elif "camdf" in parts:
        parts = parts[parts.index("camdf"):]
    else:
        parts = parts[-1:]
    return f"{'/'.join(parts)}:{line}({name})"


def profile_cell(top: int = 12) -> dict:
    """cProfile of evaluate_cell on the issue-5 cell: top functions by own and cumulative time, own time by package."""
    cfg = _cfg(list(METHODS))
    inst = _instances(cfg, ROOT / "data")
    prof = cProfile.Profile()
    prof.enable()
    _evaluate(inst, cfg)
    prof.disable()
    stats = pstats.Stats(prof).stats  # func -> (primitive calls, calls, own time, cumulative time, callers)
    total = sum(v[2] for v in stats.values())

    def rows(key: int) -> list[dict]:
        ranked = sorted(stats.items(), key=lambda kv: kv[1][key], reverse=True)[:top]
        return [{"function": _label(f), "calls": v[1], "own_s": v[2], "cumulative_s": v[3]} for f, v in ranked]

    packages: dict[str, float] = {}
    for func, v in stats.items():
        packages[_package(func[0])] = packages.get(_package(func[0]), 0.0) + v[2]
    return {
        "profiled_s": total,
        "by_own_time": rows(2),
        "by_cumulative_time": rows(3),
        "own_time_by_package": dict(sorted(packages.items(), key=lambda kv: -kv[1])),
        "load_avg": load(),
    }


def run(scaling: bool = True, profile: bool = True) -> dict:
    """Every cell benchmark; returns the figures (seconds)."""
    out = {"cell": bench_cell()}
    if scaling:
        out["scaling"] = bench_scaling()
    if profile:
        out["profile"] = profile_cell()
    return out


def main() -> None:
    figures = run()
    c = figures["cell"]
    print(f"issue-5 cell end to end: {c['run_cell_end_to_end']['best_s']:.2f} s (target {c['target_s']:.0f} s: "
          f"{'met' if c['meets_target'] else 'MISSED'}); instances {c['cell_instances']['best_s']:.2f} s, "
          f"evaluate_cell {c['evaluate_cell_all_methods']['best_s']:.2f} s ({c['methods_all']} methods), "
          f"{c['evaluate_cell_main_methods']['best_s']:.2f} s ({c['methods_main']} methods); default BLAS threads "
          f"{c['reference_default_threads']['best_s']:.2f} s (x{c['ratio_reference_vs_evaluate']:.2f})")
    s = figures["scaling"]
    from camdf.common.markdown import markdown_table

    print("\n".join(markdown_table(
        ["distractors", "candidates", "states", "instances (s)", "evaluate (s)", "cell (s)", "us/state"],
        ([r["distractors"], r["candidates"], r["states"], f"{r['instances_s']:.2f}", f"{r['evaluate_s']:.2f}",
          f"{r['cell_s']:.2f}", f"{r['us_per_state']:.0f}"] for r in s["rows"]),
        "r" * 7)))
    if "time_ratio_1000_vs_100" in s:
        print(f"1000 vs 100 distractors: time x{s['time_ratio_1000_vs_100']:.1f}, states "
              f"x{s['state_ratio_1000_vs_100']:.1f} (target <= x{s['target_ratio']:.0f})")
    for r in figures["profile"]["by_own_time"]:
        print(f"{r['own_s']:8.2f} s own {r['cumulative_s']:8.2f} s cum {r['calls']:7d}  {r['function']}")
    emit_json(figures)


if __name__ == "__main__":
    main()
