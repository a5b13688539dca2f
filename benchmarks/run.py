"""The benchmark suite (`make bench`): every benchmark, then outputs/bench/bench.json and summary.md.

Benchmarks, in order (each also times a plain reference of the same work in the same
run and reports the ratio, since absolute times on shared machines are noisy):

- labels: Delta labels of 100 000 synthetic tasks x 20 tools (bench_core.py)
- features: state features + CAM-DF prediction for a whole cell, per state (bench_core.py)
- bootstrap: paired bootstrap, B = 10 000 x n = 2 285 x 12 methods (bench_stats.py)
- cell: the issue-5 retail cell end to end and by parts (bench_cell.py)
- scaling: the retail cell with 0 / 100 / 500 / 1 000 / 2 472 distractor tools (bench_cell.py)
- profile: cProfile of the retail cell's evaluation (bench_cell.py)
- sufficiency: G_x derivation by execution, cold and warm (bench_sufficiency.py)
- rankers: scoring four domains x five scorers from a cold cache (bench_rankers.py)
- runtime: StopPolicy per-decision latency p50/p99 and batch throughput (bench_runtime.py)
- adapters: every harness adapter's decision at 300 and 2,000 tools vs a plain bm25 top 5 (bench_adapters.py)
- sets: plugin_set, risk_set and every cv_set pool member deciding one request of 7 / 100 / 1 000 tools vs the prefix rules (bench_sets.py)
- catalog: every rule fitted on StableToolBench's 2,479 APIs at N = 20, bm25 per query, A28's cell, the re-ranker's nested cross-fit (bench_catalog.py)
- fit: `camdf fit` end to end, 1,000 logged tasks over a 2,000-tool catalog, against an exported base (bench_fit.py)
- data: `camdf data validate` and the data stage on 5 000 tools x 50 000 tasks (bench_data.py)
- cli: `camdf select` wall time for one request from the shell, p50 (bench_cli.py)
- select: `camdf select`, default policy, 300 / 2,000 tools, start-up included, p50 (bench_select.py)

Needs the built domains (`make data`).  Options: ``--only NAME[,NAME]`` runs a subset;
``--skip NAME[,NAME]`` leaves some out; ``--skip-dense`` scores without the dense and
hybrid scorers (the cold MiniLM embeddings are most of the rankers benchmark);
``--scaling-counts 100,1000`` runs the scaling part at those distractor counts only;
``--out DIR`` changes the output folder (default ``outputs/bench``).  A failing
benchmark is recorded with its error and the others still run; the exit status is 1
when any failed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, load, machine_facts  # noqa: E402

BUDGET_S = 600.0  # acceptance 1: the whole suite under 10 minutes


def _core(name: str) -> Callable[[], Any]:
    def go():
        import bench_core

        if name == "labels":
            return bench_core.bench_labels()
        domains = [d for d in ("retail", "retail_d100") if (ROOT / "data" / d / "catalog.json").is_file()]
        return {"domains": [bench_core.bench_features(d) for d in domains]}
    return go


def _cell(name: str, counts: tuple[int, ...] | None = None) -> Callable[[], Any]:
    def go():
        import bench_cell

        if name == "scaling" and counts:
            return bench_cell.bench_scaling(counts)
        return {"cell": bench_cell.bench_cell, "scaling": bench_cell.bench_scaling,
                "profile": bench_cell.profile_cell}[name]()
    return go


def _module_run(module: str, **kwargs) -> Callable[[], Any]:
    def go():
        mod = importlib.import_module(module)  # imported here: bench_rankers times its process from import
        if not callable(getattr(mod, "run", None)):
            raise RuntimeError(f"benchmarks/{module}.py has no run() function")
        return mod.run(**kwargs)
    return go


def _fresh_process(module: str) -> Callable[[], Any]:
    """Run ``benchmarks/<module>.py`` in a process of its own and read the JSON it prints.

    Latency is measured as a harness would see it: in a process that holds the stopper,
    not one that has loaded torch and run the heavier benchmarks before.
    """
    def go():
        proc = subprocess.run([sys.executable, str(Path(__file__).with_name(f"{module}.py"))],
                              capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise RuntimeError(f"benchmarks/{module}.py exited {proc.returncode}: {proc.stderr[-2000:]}")
        return json.loads(proc.stdout)
    return go


def steps(skip_dense: bool, scaling_counts: tuple[int, ...] | None = None) -> dict[str, tuple[str, Callable[[], Any]]]:
    """name -> (description, function returning the figures)."""
    rankers_kwargs = {"scorers": ["bm25", "supervised", "prior"]} if skip_dense else {}
    out = {
        "labels": ("Delta labels, 100 000 tasks x 20 tools", _core("labels")),
        "features": ("features + CAM-DF prediction per state", _core("features")),
        "bootstrap": ("paired bootstrap, B 10 000 x n 2 285 x 12", _module_run("bench_stats")),
        "cell": ("retail cell end to end (issue 5)", _cell("cell")),
        "scaling": (f"retail + {'/'.join(map(str, scaling_counts or (0, 100, 500, 1000, 2472)))} distractors",
                    _cell("scaling", scaling_counts)),
        "profile": ("cProfile of the retail cell", _cell("profile")),
        "sufficiency": ("G_x by execution, cold and warm", _module_run("bench_sufficiency")),
        "rankers": ("scoring, 4 domains x scorers, cold cache", _module_run("bench_rankers", **rankers_kwargs)),
        "runtime": ("run-time stopper latency and batch throughput (own process)", _fresh_process("bench_runtime")),
        "adapters": ("harness adapters' decision at 300 / 2,000 tools vs a plain bm25 top 5 (own process)",
                     _fresh_process("bench_adapters")),
        "sets": ("set rules vs prefix rules, one request of 7 / 100 / 1 000 tools", _module_run("bench_sets")),
        "catalog": ("every rule fitted on the 2,479-API catalog at N = 20; bm25 per query; A28's cell; the re-ranker",
                    _module_run("bench_catalog")),
        "fit": ("camdf fit, 1 000 tasks x 2 000 tools, inner 5-fold comparison with the base", _module_run("bench_fit")),
        "data": ("validate + data stage, 5 000 tools x 50 000 tasks", _module_run("bench_data")),
        "cli": ("camdf select from the shell, one request", _module_run("bench_cli")),
        "select": ("camdf select, default policy, 300 / 2,000 tools, start-up included", _module_run("bench_select")),
        "search": ("the search at catalog scale: every gold API in the top k, 2,479 APIs, rankers and as served",
                   _module_run("bench_search", **({"scorers": ["bm25", "crosscat"]} if skip_dense else {}))),
    }
    if not (Path(__file__).parent / "bench_sufficiency.py").is_file():
        del out["sufficiency"]
    return out


# ---------------------------------------------------------------- markdown


def _f(x: Any, digits: int = 3) -> str:
    if isinstance(x, bool) or x is None:
        return "yes" if x is True else ("no" if x is False else "")
    if isinstance(x, float):
        return f"{x:,.{digits}f}" if abs(x) < 1e5 else f"{x:,.0f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _table(header: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    from camdf.common.markdown import markdown_table

    cells = ([c if isinstance(c, str) else _f(c) for c in row] for row in rows)
    return "\n".join(markdown_table(header, cells, align or "l" + "r" * (len(header) - 1)))


def _md_labels(r: dict) -> str:
    rows = [
        ["vectorised (payoffs, Deltas, labels)", r["tasks"], r["states"], r["vectorised"]["best_s"],
         r["vectorised"]["median_s"], f"{r['states_per_s'] / 1e6:.1f} M", "1"],
        ["reference loop (tests/unit/core/reference.py)", r["reference_tasks"], r["reference_tasks"] * r["tools"],
         r["reference"]["best_s"], r["reference"]["median_s"], f"{r['reference_states_per_s'] / 1e3:.0f} k",
         f"{r['ratio_vs_reference']:.0f}x"],
        ["tuned single-pass Python loop", r["loop_tasks"], r["loop_tasks"] * r["tools"], r["loop"]["best_s"],
         r["loop"]["median_s"], f"{r['loop_states_per_s'] / 1e3:.0f} k", f"{r['ratio_vs_loop']:.0f}x"],
    ]
    return (_table(["implementation", "tasks", "states", "best (s)", "median (s)", "states/s", "vectorised speed-up"],
                   rows)
            + f"\n\nTarget: >= 5 M states/s and >= 50x the reference loop: "
              f"**{'met' if r['meets_target'] else 'missed'}**.")


def _md_features(r: dict) -> str:
    rows = [[d["domain"], d["tasks"], d["states"], d["features_us_per_state"], d["prediction_us_per_state"],
             d["us_per_state"], d["reference_us_per_state"], f"{d['ratio_vs_reference']:.0f}x"] for d in r["domains"]]
    return (_table(["cell", "tasks", "states", "features (us/state)", "prediction (us/state)",
                    "features + prediction (us/state)", "reference (us/state)", "speed-up"], rows)
            + "\n\nReference: per-task Python features from the definitions and one `predict_proba` per task "
              "(checked equal). Times are best of 5 (reference: best of 3).")


def _md_bootstrap(r: dict) -> str:
    keys = [("bootstrap_indices_s", "index matrix B x n"), ("resample_means_s", "resample means (all methods)"),
            ("paired_bootstrap_percentile_given_indices_s", "paired bootstrap, percentile"),
            ("paired_bootstrap_bca_given_indices_s", "paired bootstrap, BCa"),
            ("paired_bootstrap_end_to_end_s", "end to end (indices + percentile)"),
            ("loop_extrapolated_full_B_s", f"reference: loop over resamples ({r['loop_resamples']:,} rows, "
                                           f"extrapolated to B)")]
    rows = [[label, r[k]] for k, label in keys]
    return (_table(["step", "best (s)"], rows)
            + f"\n\nB = {r['B']:,}, n = {r['n_tasks']:,}, {r['n_methods']} methods. Speed-up of the resample means "
              f"over the loop: {r['speedup_means_vs_loop']:.0f}x; end to end over loop + indices: "
              f"{r['speedup_end_to_end_vs_loop_plus_indices']:.1f}x. Target end to end <= "
              f"{r['target_end_to_end_s']:.0f} s: **{'met' if r['meets_target'] else 'missed'}**.")


def _md_cell(r: dict) -> str:
    def row(label, t):
        return [label, t["best_s"], t["median_s"], ", ".join(f"{x:.2f}" for x in t["runs_s"])]
    rows = [
        row(f"run_cell end to end, {r['methods_all']} methods (cold score cache)", r["run_cell_end_to_end"]),
        *([row(f"run_cell end to end, {r['methods_all']} methods, R = 5 repeats (cold caches)",
               r["run_cell_end_to_end_r5"])] if "run_cell_end_to_end_r5" in r else []),
        row("cell_instances (load, score, price, pad)", r["cell_instances"]),
        row(f"evaluate_cell, all {r['methods_all']} methods", r["evaluate_cell_all_methods"]),
        row(f"evaluate_cell, Table 2 methods ({r['methods_main']})", r["evaluate_cell_main_methods"]),
        row("reference: evaluate_cell, all methods, default BLAS threads", r["reference_default_threads"]),
    ]
    if "evaluate_cell_grid_methods" in r:
        rows += [row("evaluate_cell, grid methods (before: membership fitted in the cell)", r["evaluate_cell_grid_methods"]),
                 row("evaluate_cell, grid methods (after: membership from the grid's cache)",
                     r["evaluate_cell_grid_methods_cached_membership"])]
    return (_table(["measurement", "best (s)", "median (s)", "runs (s)"], rows)
            + f"\n\n{r['cell']}; {r['tasks']} tasks, {r['states']} states. Summary + plot (end to end minus parts): "
              f"{r['summary_and_plot_s']:.2f} s. Default BLAS threads / single-thread BLAS: "
              f"{r['ratio_reference_vs_evaluate']:.2f}x (outcomes identical: "
              f"{_f(r['reference_outcomes_identical'])}). "
              + (f"Grid cell before / after the membership cache: {r['ratio_grid_uncached_vs_cached']:.2f}x "
                 f"(outcomes identical: {_f(r['cached_outcomes_identical'])}). "
                 if "ratio_grid_uncached_vs_cached" in r else "")
              + f"Target end to end <= {r['target_s']:.0f} s: "
              f"**{'met' if r['meets_target'] else 'missed'}**.")


def _md_scaling(r: dict) -> str:
    base = next((x for x in r["rows"] if x["distractors"] == 100), r["rows"][0])
    rows = [[x["distractors"], x["candidates"], x["states"], x["instances_s"], x["evaluate_s"], x["cell_s"],
             f"{x['us_per_state']:.0f}", f"{x['states'] / base['states']:.2f}x", f"{x['cell_s'] / base['cell_s']:.2f}x",
             *([x["cpu_s"], f"{x['cpu_us_per_state']:.0f}", f"{x['cpu_s'] / base['cpu_s']:.2f}x"]
               if "cpu_s" in x and "cpu_s" in base else ["", "", ""])]
            for x in r["rows"]]
    text = _table(["distractors", "candidates / task", "states", "instances (s)", "evaluate_cell (s)", "cell (s)",
                   "us / state", "states vs 100", "time vs 100", "CPU (s)", "CPU us / state", "CPU vs 100"],
                  rows, "r" * 12)
    text += f"\n\nMethods: {', '.join(r['methods'])}."
    if "time_ratio_1000_vs_100" in r:
        text += (f" 1 000 vs 100 distractors: time {r['time_ratio_1000_vs_100']:.1f}x for "
                 f"{r['state_ratio_1000_vs_100']:.1f}x the states (target <= {r['target_ratio']:.0f}x): "
                 f"**{'met' if r['meets_target'] else 'missed'}**.")
    return text


def _md_catalog(r: dict) -> str:
    f = r["fits"]
    rows = [[x["method"], x["fit_s"], x["select_s"], x["mean_exposed"]] for x in f["rows"]]
    text = (f"{f['catalog']}: {f['tasks']} queries, {f['apis']:,} APIs; bm25 over the whole catalog "
            f"{f['ranker_ms_per_query']:.1f} ms per query ({f['ranker_s']:.1f} s from a cold cache); candidates: "
            f"each query's top {f['top_k']} (every gold API inside for {f['recall_at_k']:.3f} of the queries). "
            f"Every rule fitted on the first fold's {f['train_tasks']} training tasks ({f['train_states']:,} states; "
            f"membership probabilities {f['membership_s']:.1f} s, computed once) and deciding its {f['test_tasks']}:"
            "\n\n" + _table(["rule", "fit (s)", "decide (s)", "mean exposed"], rows)
            + f"\n\nSlowest fit: {f['slowest_fit']} {f['slowest_fit_s']:.1f} s (target each < {f['target_fit_s']:.0f} s: "
              f"**{'met' if f['meets_target'] else 'missed'}**).")
    a = r["a28"]
    if a["ran"]:
        text += (f"\n\nA28 cell at N = 1,000 (`{' '.join(a['overrides'])}`), a fresh process: {a['wall_s']:.0f} s, "
                 f"peak resident memory {a['peak_gb']:.2f} GB (target < {a['target_gb']:.0f} GB: "
                 f"**{'met' if a['meets_target'] else 'missed'}**).")
    else:
        text += f"\n\nA28 cell: not run ({a['reason']})."
    rr = r.get("rerank")
    if rr:
        text += (f"\n\nThe learned re-ranker (`scorer=rerank`) scoring the whole catalog with its nested cross-fit "
                 f"(5 folds: 30 LightGBM fits), a fresh process from a cold cache (MiniLM encodes every API, query "
                 f"and query sentence on the conf's one thread): {rr['wall_s']:.0f} s ({rr['scoring_s']:.0f} s "
                 f"scoring), {rr['rows']:,} (query, API) rows of {rr['catalog'].split(' (')[0]}, peak resident memory "
                 f"{rr['peak_gb']:.2f} GB (target < {rr['target_gb']:.0f} GB: **{'met' if rr['meets_target'] else 'missed'}**).")
    return text


def _md_profile(r: dict) -> str:
    own = _table(["function (by own time)", "calls", "own (s)", "cumulative (s)"],
                 [[x["function"], x["calls"], x["own_s"], x["cumulative_s"]] for x in r["by_own_time"]])
    cum = _table(["function (by cumulative time)", "calls", "own (s)", "cumulative (s)"],
                 [[x["function"], x["calls"], x["own_s"], x["cumulative_s"]] for x in r["by_cumulative_time"]])
    pkg = _table(["package", "own time (s)", "share"],
                 [[k, v, f"{v / r['profiled_s']:.0%}"] for k, v in r["own_time_by_package"].items()])
    return f"Profiled total: {r['profiled_s']:.2f} s (cProfile overhead included).\n\n{own}\n\n{cum}\n\n{pkg}"


def _md_flat(r: dict) -> str:
    rows = [[k, v] for k, v in r.items() if not isinstance(v, (dict, list))]
    return _table(["figure", "value"], rows)


def _md_rankers(r: dict) -> str:
    jobs = _table(["domain", "scorer", "seconds", "(task, candidate) rows", "MRR"],
                  [[j["domain"], j["scorer"], j["seconds"], j["rows"], j["mrr"]] for j in r["jobs"]], "llrrr")
    return (jobs + f"\n\nAll jobs {r['all_jobs_s']:.1f} s; with imports {r['process_s']:.1f} s "
                   f"(target {r['target_s']:.0f} s: **{'met' if r['meets_target'] else 'missed'}**). "
                   f"Scorers: {', '.join(r['scorers'])}.")


def _md_sets(r: dict) -> str:
    rows = [[x["candidates"], x["plugin_set_numpy_us"], x["risk_set_numpy_us"], x["prefix_plugin_numpy_us"],
             x["prefix_risk_numpy_us"], f"{x['plugin_set_vs_prefix_plugin_numpy']:.1f}x",
             f"{x['risk_set_vs_prefix_risk_numpy']:.1f}x", x["plugin_set_python_us"], x["risk_set_python_us"],
             x["prefix_risk_python_us"]] for x in r["rows"]]
    return (_table(["candidates", "plugin_set (us)", "risk_set (us)", "prefix plug-in (us)", "camdf_risk (us)",
                    "plugin_set / prefix plug-in", "risk_set / camdf_risk", "plugin_set, Python (us)",
                    "risk_set, Python (us)", "camdf_risk, Python (us)"], rows, "r" * 10)
            + f"\n\nMedian decision time for one synthetic request (numpy on one thread; membership model left out), "
              f"lambda {r['lam']}, alpha {r['alpha']}.")


def search_table(r: dict) -> str:
    """The search rows of docs/harness.md: each ranker's and the served search's shares at k."""
    rows = [[f"{name}, top k", k, f"{row[f'all_gold@{k}']:.3f}", f"{row[f'per_api@{k}']:.3f}", k, ""]
            for name, row in r["rankers"].items() for k in (3, 5)]
    for cap in ("k3", "k5", "uncapped"):
        s = r["served"][cap]
        rows.append(["served: the default policy's cost-aware set over crosscat (left out)",
                     "none" if cap == "uncapped" else cap[1:],
                     f"{s['all_gold']:.3f}", f"{s['per_api']:.3f}", f"{s['mean_size']:.2f}", f"{s['ms_p50']}"])
    what = r["catalog"].split(" (")[0]
    return (_table(["search", "at most k", "all gold", "per API", "tools returned (mean)", "p50 (ms)"], rows, "lrrrrr")
            + f"\n\n{r['queries']} queries over {r['apis']:,} APIs ({what}). Goal: all gold at k = 5 >= "
              f"{r['goal_all_gold@5']:.2f} (best ranker {r['best_all_gold@5']:.3f}: "
              f"**{'met' if r['goal_met'] else 'missed'}**).")


def adapters_table(r: dict) -> str:
    """The adapters rows of docs/speed.md: each adapter's decision p50 / p95 (and CPU p50) per catalog size, and
    its ratio to a plain bm25 top 5 over the same tools in the same run."""
    rows = []
    for row in r["rows"]:
        ref, rule = row["reference"], row["policy_select_scores_given"]
        for name, a in row["adapters"].items():
            rows.append([name, f"{row['tools']:,}", f"{a['p50_ms']:.2f} ms", f"{a['p95_ms']:.2f} ms",
                         f"{a['cpu_p50_ms']:.2f} ms", f"{a['ratio_vs_reference']:.0f}x"])
        for name, h in row.get("harness_alone", {}).items():
            rows.append([name, f"{row['tools']:,}", f"{h['p50_ms']:.2f} ms",
                         f"{h['p95_ms']:.2f} ms", f"{h['cpu_p50_ms']:.2f} ms", ""])
        rows.append(["policy.select, scores given (the floor)", f"{row['tools']:,}", f"{rule['p50_ms']:.2f} ms",
                     f"{rule['p95_ms']:.2f} ms", f"{rule['cpu_p50_ms']:.2f} ms", ""])
        if "builtin_ranker" in row:
            k = row["builtin_ranker"]
            rows.append([f"the built-in ranker alone ({r.get('ranker', 'bm25')}), index kept", f"{row['tools']:,}",
                         f"{k['p50_ms']:.2f} ms", f"{k['p95_ms']:.2f} ms", f"{k['cpu_p50_ms']:.2f} ms",
                         f"{k['ratio_vs_reference']:.0f}x"])
        rows.append(["plain bm25 top 5, prebuilt index (reference)", f"{row['tools']:,}", f"{ref['p50_ms']:.2f} ms",
                     f"{ref['p95_ms']:.2f} ms", f"{ref['cpu_p50_ms']:.2f} ms", "1x"])
    before = ", ".join(f"{row['index_rebuilt_p50_ms']:.0f} ms at {row['tools']:,}" for row in r["rows"])
    return (_table(["decision", "tools", "p50", "p95", "CPU p50", "p50 vs bm25 top 5"], rows, "lrrrrr")
            + f"\n\nbm25's index built for every query (before it was kept): {before} per decision. Target: "
              f"p50 <= {r['target_p50_ms']:.0f} ms at {r['target_tools']:,} tools for every adapter: "
              f"**{'met' if r['meets_target'] else 'missed'}**.")


RENDER = {"adapters": adapters_table, "labels": _md_labels, "sets": _md_sets, "features": _md_features, "bootstrap": _md_bootstrap, "cell": _md_cell,
          "scaling": _md_scaling, "profile": _md_profile, "sufficiency": _md_flat, "rankers": _md_rankers,
          "catalog": _md_catalog, "search": search_table}


def acceptance(results: dict, total_s: float, partial: bool = False) -> list[dict]:
    """The issue's acceptance points this suite can check (the suite's time only when all of it ran)."""
    def get(name, key, default=None):
        r = results.get(name, {})
        return r.get("figures", {}).get(key, default) if r.get("ok") else default

    checks = [] if partial else [
        {"point": "1. make bench under 10 minutes", "value": f"{total_s:.0f} s", "met": total_s <= BUDGET_S}]
    rate, ratio = get("labels", "states_per_s"), get("labels", "ratio_vs_reference")
    if rate is not None:
        checks.append({"point": "2. labels >= 5 M states/s and >= 50x the reference loop",
                       "value": f"{rate / 1e6:.1f} M states/s, {ratio:.0f}x", "met": rate >= 5e6 and ratio >= 50})
    sc = get("scaling", "time_ratio_1000_vs_100")
    if sc is not None:
        checks.append({"point": "3. 1 000 vs 100 distractors <= 12x time per cell", "value": f"{sc:.1f}x",
                       "met": sc <= 12})
    fits = get("catalog", "fits")
    if fits is not None:
        checks.append({"point": "issue 39: every rule fitted on the 2,479-API catalog at N = 20, each < 60 s",
                       "value": f"slowest {fits['slowest_fit']} {fits['slowest_fit_s']:.1f} s ({fits['catalog'].split(' (')[0]})",
                       "met": fits["meets_target"]})
    a28 = get("catalog", "a28")
    if a28 is not None and a28.get("ran"):
        checks.append({"point": "issue 39: A28 cell at N = 1,000 under 4 GB",
                       "value": f"{a28['peak_gb']:.2f} GB, {a28['wall_s']:.0f} s", "met": a28["meets_target"]})
    rerank = get("catalog", "rerank")
    if rerank is not None:
        checks.append({"point": "issue 54: the re-ranker's nested cross-fit over the 2,479-API catalog under 4 GB",
                       "value": f"{rerank['peak_gb']:.2f} GB, {rerank['wall_s']:.0f} s", "met": rerank["meets_target"]})
    cell = get("cell", "run_cell_end_to_end")
    if cell is not None:
        checks.append({"point": "issue 5: retail cell, all methods, <= 10 s", "value": f"{cell['best_s']:.1f} s",
                       "met": cell["best_s"] <= 10})
    runtime = results.get("runtime", {})
    if runtime.get("ok"):
        f = runtime["figures"]
        for key, label in [("camdf_lite_7_p50_us", "camdf_lite, 7 tools, p50"), ("camdf_7_p50_us", "camdf, 7 tools, p50"),
                           ("camdf_risk_7_p50_us", "camdf_risk, 7 tools, p50"),
                           ("camdf_1000_p50_us", "camdf, 1 000 tools, p50")]:
            checks.append({"point": f"issue 9: {label} <= {f['targets'][key]:,.0f} us",
                           "value": f"{f[key]:,.0f} us (p99 {f[key.replace('p50', 'p99')]:,.0f} us; round p50s "
                                    f"{f[key.replace('p50', 'round_p50_min')]:,.0f}-{f[key.replace('p50', 'round_p50_max')]:,.0f})",
                           "met": f["met"][key]})
        checks.append({"point": "issue 9: camdf_lite batch >= 50 000 decisions/s",
                       "value": f"{f['camdf_lite_batch_per_s']:,.0f}/s best round (median "
                                f"{f['camdf_lite_batch_per_s_median']:,.0f}, worst {f['camdf_lite_batch_per_s_worst']:,.0f})",
                       "met": f["met"]["camdf_lite_batch_per_s"]})
    adapters = get("adapters", "rows")
    if adapters:
        big = adapters[-1]
        ranker = get("adapters", "ranker") or "bm25"
        checks.append({"point": f"issue 68: every adapter's decision at {big['tools']:,} tools with the built-in "
                                f"ranker ({ranker}), p50 <= {get('adapters', 'target_p50_ms'):.0f} ms",
                       "value": ", ".join(f"{k} {a['p50_ms']:.1f} ms" for k, a in big["adapters"].items())
                                + (f"; the ranker alone {big['builtin_ranker']['p50_ms']:.1f} ms, "
                                   f"{big['builtin_ranker']['ratio_vs_reference']:.0f}x the bm25 top 5"
                                   if "builtin_ranker" in big else ""),
                       "met": all(a["met"] for a in big["adapters"].values())})
    for name, point in (("data", "issue 20: validate and data stage of 5 000 tools x 50 000 tasks <= 5 s each"),
                        ("cli", "issue 20: camdf select from the shell, p50 <= 2 s")):
        r = results.get(name, {})
        if r.get("ok"):
            f = r["figures"]
            value = (f"validate {f['validate_s']:.2f} s, data stage {f['data_stage_s']:.2f} s" if name == "data"
                     else f"p50 {f['p50_s']:.2f} s (p90 {f['p90_s']:.2f} s, {f['calls']} calls)")
            checks.append({"point": point, "value": value, "met": f["meets_target"]})
    search = get("search", "best_all_gold@5")
    if search is not None:
        checks.append({"point": "issue 50: the search at 2,479 APIs, every gold API in the top 5 >= 0.80",
                       "value": f"{search:.3f} (best ranker)", "met": search >= 0.80})
    select = results.get("select", {})
    if select.get("ok"):
        for row in select["figures"]["rows"]:
            checks.append({"point": f"camdf select, default policy, {row['tools']:,} tools, start-up included, p50 < 1 s",
                           "value": f"p50 {row['p50_s']:.2f} s (best {row['best_s']:.2f} s); heavy imports: "
                                    f"{', '.join(row['heavy_imports']) or 'none'}",
                           "met": row["meets_target"] and not row["heavy_imports"]})
    return checks


def summary_md(report: dict) -> str:
    m = report["machine"]
    v = m["versions"]
    blas = "; ".join(f"{b['internal_api']} {b['version']} ({b['num_threads']} threads)" for b in m["blas"])
    facts = _table(["fact", "value"], [
        ["CPU", m["cpu"]], ["cores (usable)", f"{m['cores']} ({m['cores_usable']})"], ["memory", f"{m['memory_gb']} GB"],
        ["platform", m["platform"]], ["python", m["python"]],
        ["numpy / scipy / pandas", f"{v['numpy']} / {v['scipy']} / {v['pandas']}"],
        ["scikit-learn / lightgbm / bm25s", f"{v['sklearn']} / {v['lightgbm']} / {v['bm25s']}"],
        ["BLAS", blas], ["git", f"{m['git_commit']}{' (uncommitted changes)' if m['git_dirty'] else ''}"],
        ["load average at start / end (1, 5, 15 min)", f"{report['load_avg_start']} / {report['load_avg_end']}"],
        ["started (UTC)", report["started"]], ["total", f"{report['total_s']:.0f} s"],
    ])
    parts = [
        "# Benchmarks\n",
        "Generated by `make bench` (`benchmarks/run.py`); figures in `bench.json`. Times are wall-clock seconds, "
        "best of the repeats unless stated; each benchmark times a plain reference of the same work in the same "
        "run, and the ratios are the figures to compare across machines.\n",
        "## Machine\n", facts,
        "\n## Acceptance\n",
        _table(["point", "value", "met"], [[c["point"], c["value"], _f(c["met"])] for c in report["acceptance"]], "lrl"),
    ]
    for name, res in report["benchmarks"].items():
        parts.append(f"\n## {name}: {res['description']}\n")
        if not res["ok"]:
            parts.append(f"Failed after {res['seconds']:.1f} s: `{res['error']}`")
            continue
        parts.append(RENDER.get(name, _md_flat)(res["figures"]))
        parts.append(f"\n\n_{res['seconds']:.1f} s; load average {res['load_avg']}._")
    skipped = report.get("skipped") or []
    if skipped:
        parts.append(f"\n\nNot run: {', '.join(skipped)}.")
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- main


def runtime_table(f: dict) -> str:
    """The latency table of docs/speed.md, from the runtime benchmark's figures."""
    def us(x: float) -> str:
        return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.0f} µs"

    def cpu(key: str) -> str:
        return us(f[f"{key}_cpu_p50_us"]) if f"{key}_cpu_p50_us" in f else ""

    t = f["targets"]
    rows = [["camdf_lite, 7 tools", us(f["camdf_lite_7_p50_us"]), us(f["camdf_lite_7_p99_us"]),
             f"p50 <= {us(t['camdf_lite_7_p50_us'])}", cpu("camdf_lite_7")],
            ["camdf, 7 tools", us(f["camdf_7_p50_us"]), us(f["camdf_7_p99_us"]), f"p50 <= {us(t['camdf_7_p50_us'])}",
             cpu("camdf_7")],
            ["camdf_risk, 7 tools", us(f["camdf_risk_7_p50_us"]), us(f["camdf_risk_7_p99_us"]),
             f"p50 <= {us(t['camdf_risk_7_p50_us'])}", cpu("camdf_risk_7")],
            ["camdf, 1,000 tools (worst case: it exposes all 1,000, every state is scored)",
             us(f["camdf_1000_p50_us"]), us(f["camdf_1000_p99_us"]), f"p50 <= {us(t['camdf_1000_p50_us'])}",
             cpu("camdf_1000")]]
    n = f.get("catalog_candidates")
    for m in f.get("catalog_rules", []):
        exposed = f.get("catalog_mean_exposed", {}).get(m)
        shown = "" if exposed is None else f" (exposes {exposed:,.0f})"
        rows.append([f"{m}, {n:,} tools{shown}", us(f[f"{m}_{n}_p50_us"]), us(f[f"{m}_{n}_p99_us"]), "",
                     cpu(f"{m}_{n}")])
    rows.append(["camdf_lite, batches of 2,280 requests",
                 f"{f['camdf_lite_batch_per_s']:,.0f} decisions/s (median round {f['camdf_lite_batch_per_s_median']:,.0f})",
                 "", f">= {t['camdf_lite_batch_per_s']:,.0f}/s", ""])
    return _table(["request", "p50", "p99", "target", "CPU p50"], rows, "lrrrr")


def splice_readme(readme: Path, f: dict) -> None:
    """Write :func:`runtime_table` between the runtime-latency markers of a page (docs/speed.md)."""
    splice(readme, "runtime-latency", runtime_table(f))


def splice(page: Path, marker: str, text: str) -> None:
    """Write ``text`` between the ``<!-- marker -->`` and ``<!-- /marker -->`` lines of a page."""
    from camdf.reporting.readme import update_readme

    page.write_text(update_readme(page.read_text(), text, f"<!-- {marker} -->", f"<!-- /{marker} -->"))


def scaling_table(f: dict, commit: str = "") -> str:
    """The scaling rows of docs/speed.md (cell wall and CPU time per candidate count), from the scaling figures."""
    base = next((x for x in f["rows"] if x["distractors"] == 100), f["rows"][0])
    rows = [[f"{x['candidates']:,}", f"{x['states']:,}", f"{x['cell_s']:.1f} s", f"{x['us_per_state']:,.0f}",
             f"{x['cell_s'] / base['cell_s']:.1f}x",
             f"{x['cpu_s']:.1f} s" if "cpu_s" in x else "", f"{x['cpu_us_per_state']:,.0f}" if "cpu_s" in x else ""]
            for x in f["rows"]]
    text = _table(["candidates per task", "states", "cell wall time", "µs per state", "time vs 107", "cell CPU time",
                   "CPU µs per state"], rows, "r" * 7)
    if "time_ratio_1000_vs_100" in f:
        text += (f"\n\n1,000 vs 100 distractors: {f['time_ratio_1000_vs_100']:.1f}x the time (CPU "
                 f"{f.get('cpu_ratio_1000_vs_100', float('nan')):.1f}x) for {f['state_ratio_1000_vs_100']:.1f}x the "
                 f"states; target <= {f['target_ratio']:.0f}x: **{'met' if f['meets_target'] else 'missed'}**"
                 + (f" (code {commit})." if commit else "."))
    return text


def catalog_table(f: dict) -> str:
    """The catalog rows of docs/speed.md: each rule's fit on the 2,479-API catalog at N = 20, bm25 per query, A28."""
    return _md_catalog(f)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated benchmarks to run")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    parser.add_argument("--skip-dense", action="store_true", help="rankers without the dense and hybrid scorers")
    parser.add_argument("--out", default=str(ROOT / "outputs" / "bench"), help="output folder")
    parser.add_argument("--scaling-counts", default="",
                        help="comma-separated distractor counts of the scaling part (default 0,100,500,1000,2472)")
    parser.add_argument("--readme", action="store_true",
                        help="write the runtime, scaling, catalog and adapters figures into docs/speed.md")
    args = parser.parse_args(argv)

    try:
        counts = tuple(int(c) for c in args.scaling_counts.split(",") if c.strip())
    except ValueError:
        parser.error(f"--scaling-counts: expected comma-separated integers, got {args.scaling_counts!r}")
    if any(c < 0 for c in counts):
        parser.error(f"--scaling-counts: counts must be >= 0, got {args.scaling_counts!r}")
    plan = steps(args.skip_dense, counts or None)
    only = [s for s in args.only.split(",") if s]
    skip = [s for s in args.skip.split(",") if s]
    unknown = [s for s in only + skip if s not in plan]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; expected names from {list(plan)}")
    chosen = [s for s in plan if (not only or s in only) and s not in skip]

    console = Console(stderr=True)
    report: dict[str, Any] = {
        "machine": machine_facts(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_avg_start": load(),
        "options": {"only": only, "skip": skip, "skip_dense": args.skip_dense, "scaling_counts": list(counts)},
        "benchmarks": {},
        "skipped": [s for s in plan if s not in chosen],
    }
    m = report["machine"]
    console.print(f"[bold]make bench[/]: {m['cpu']}, {m['cores']} cores, python {m['python']}, "
                  f"load {report['load_avg_start']}")
    t0 = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=console, transient=False) as progress:
        overall = progress.add_task("benchmarks", total=len(chosen))
        for name in chosen:
            description, fn = plan[name]
            step = progress.add_task(f"  {name}: {description}", total=1)
            start = time.perf_counter()
            entry: dict[str, Any] = {"description": description}
            try:
                entry["figures"] = fn()
                entry["ok"] = True
            except Exception as err:  # noqa: BLE001 - recorded; the other benchmarks still run
                entry.update(ok=False, error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc())
                progress.console.print(f"[red]{name} failed[/]: {entry['error']}")
            entry["seconds"] = time.perf_counter() - start
            entry["load_avg"] = load()
            report["benchmarks"][name] = entry
            progress.update(step, completed=1)
            progress.advance(overall)
    report["total_s"] = time.perf_counter() - t0
    report["load_avg_end"] = load()
    report["acceptance"] = acceptance(report["benchmarks"], report["total_s"], partial=bool(report["skipped"]))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    (out / "summary.md").write_text(summary_md(report))
    runtime = report["benchmarks"].get("runtime", {})
    if args.readme and runtime.get("ok"):
        splice_readme(ROOT / "docs" / "speed.md", runtime["figures"])
        console.print("wrote the runtime figures into docs/speed.md")
    commit = m["git_commit"] + (" with uncommitted changes" if m["git_dirty"] else "")
    for name, marker, render in (("scaling", "scaling", lambda f: scaling_table(f, commit)),
                                 ("catalog", "catalog", catalog_table), ("adapters", "adapters", adapters_table)):
        entry = report["benchmarks"].get(name, {})
        if args.readme and entry.get("ok"):
            splice(ROOT / "docs" / "speed.md", marker, render(entry["figures"]))
            console.print(f"wrote the {name} figures into docs/speed.md")
    search = report["benchmarks"].get("search", {})
    if args.readme and search.get("ok"):
        splice(ROOT / "docs" / "harness.md", "bench:search", search_table(search["figures"]))
        console.print("wrote the search figures into docs/harness.md")
    for c in report["acceptance"]:
        console.print(f"{'[green]met[/]' if c['met'] else '[red]missed[/]'}  {c['point']}: {c['value']}")
    console.print(f"wrote {out / 'bench.json'} and {out / 'summary.md'} ({report['total_s']:.0f} s)")
    return 0 if all(e["ok"] for e in report["benchmarks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
