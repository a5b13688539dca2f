"""Shared helpers of the benchmark suite: timing, machine facts, configs, synthetic data.

Absolute times on the shared 2-core machines are noisy, so every benchmark times
a plain reference of the same work in the same run and reports the ratio; the
helpers here keep the conventions in one place (best of ``repeats`` wall times,
median kept too, load average sampled around each measurement).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `python benchmarks/<file>.py` from a checkout
    sys.path.insert(0, str(ROOT))

# The cell of issue 5 (and of the end-to-end benchmark): retail, bm25, schema tokens, lambda 0.12, d 1, 5 folds.
CELL_OVERRIDES = ["domain=retail", "scorer=bm25", "cost=schema_tokens", "cost.lam=0.12", "cost.d=1",
                  "folds.n_folds=5", "folds.protocol=kfold", "seed=0"]


@dataclass
class Timing:
    """Wall times (s) of repeated runs of one function, and its last result."""

    best: float
    median: float
    times: list[float]
    result: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"best_s": self.best, "median_s": self.median, "runs_s": self.times}


def timed(fn: Callable[[], Any], repeats: int = 3) -> Timing:
    """Run ``fn`` ``repeats`` times; best and median wall time (``time.perf_counter``)."""
    times, out = [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return Timing(min(times), float(np.median(times)), times, out)


def load() -> list[float]:
    """1, 5 and 15 minute load averages (runnable processes; the machine has ``os.cpu_count()`` cores)."""
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - a missing package is reported, not fatal
        return "not installed"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts() -> dict[str, Any]:
    """CPU, cores, memory, library versions, BLAS threading, git state and the load average now."""
    from threadpoolctl import threadpool_info

    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gb": mem_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {m: _version(m) for m in ("numpy", "scipy", "pandas", "sklearn", "lightgbm", "bm25s")},
        "blas": [
            {k: lib.get(k) for k in ("internal_api", "version", "num_threads", "prefix")}
            for lib in threadpool_info() if lib.get("user_api") == "blas"
        ],
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "load_avg": load(),
    }


def cell_config(overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved ``conf/evaluate.yaml`` (Hydra compose API) with ``overrides``, as a plain dict."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import camdf.pipeline.resolvers  # noqa: F401  (registers the resolvers)

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=list(overrides if overrides is not None else CELL_OVERRIDES))
    return OmegaConf.to_container(cfg, resolve=True)


def method_names(group: str) -> list[str]:
    """Method names of ``conf/method/<group>.yaml``."""
    import yaml

    return list(yaml.safe_load((ROOT / "conf" / "method" / f"{group}.yaml").read_text())["names"])


def emit_json(figures: dict) -> None:
    """Print the figures as JSON when ``BENCH_JSON`` is set (a script's machine-readable output)."""
    if os.environ.get("BENCH_JSON"):
        import json

        print(json.dumps(figures, default=float))


def print_figures(figures: dict) -> None:
    """Print flat figures as aligned ``name  value`` lines, then :func:`emit_json`."""
    width = max(map(len, figures))
    for key, val in figures.items():
        shown = f"{val:.4f}" if isinstance(val, float) else str(val)
        print(f"{key:<{width}}  {shown}")
    emit_json(figures)
