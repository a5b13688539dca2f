"""Benchmark of the vectorised paired bootstrap in :mod:`camdf.evaluation.bootstrap`.

Workload: B = 10 000 resamples x n = 2 285 tasks x m = 12 methods (11 paired
differences against one reference), percentile and BCa intervals.  Target: at
most 2 s end to end on the development machine (2 cores).

Reference: a plain Python loop over resamples (``D[:, idx[b]].mean(axis=1)``,
already vectorised over methods) run on the first ``LOOP_RESAMPLES`` rows of
the same index matrix and extrapolated linearly to B; its means are checked
against the vectorised ones on those rows.

Times are best of ``REPEATS`` runs (the end-to-end median is reported too).
Run as ``python benchmarks/bench_stats.py`` (``PYTHONPATH`` must reach
``camdf``) or call :func:`run`.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_stats.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_figures  # noqa: E402

from camdf.evaluation import bootstrap  # noqa: E402
from camdf.evaluation.bootstrap import _resample_means  # noqa: E402  (timed separately)

B = 10_000
N_TASKS = 2_285
N_METHODS = 12
LOOP_RESAMPLES = 1_000
REPEATS = 3
SEED = 0


def _best(fn, repeats: int = REPEATS) -> tuple[float, object]:
    """Best-of-``repeats`` wall time (s) and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    _MEDIANS[getattr(fn, "__name__", "?")] = float(np.median(times))
    return min(times), out


_MEDIANS: dict[str, float] = {}


def _workload(seed: int = SEED) -> dict[str, np.ndarray]:
    """12 methods: 0/1 success with method-specific rates and a shared task effect."""
    rng = np.random.default_rng(seed)
    difficulty = rng.random(N_TASKS)
    rates = np.linspace(0.45, 0.65, N_METHODS)
    return {
        f"m{k:02d}": (rng.random(N_TASKS) * 0.5 + difficulty * 0.5 < rates[k]).astype(np.float64)
        for k in range(N_METHODS)
    }


def run() -> dict:
    """Time the paired bootstrap and the per-resample loop; return the figures (seconds)."""
    values = _workload()
    ref = "m00"

    t_idx, idx = _best(lambda: bootstrap.bootstrap_indices(N_TASKS, B, SEED))
    t_pct, res_pct = _best(lambda: bootstrap.paired_bootstrap(values, ref, indices=idx))
    t_bca, _ = _best(lambda: bootstrap.paired_bootstrap(values, ref, indices=idx, method="bca"))
    def end_to_end():
        return bootstrap.paired_bootstrap(values, ref, n_resamples=B, random_state=SEED)

    t_e2e, res_e2e = _best(end_to_end)
    assert res_e2e.equals(res_pct)  # shared index matrix == same seed

    mat = np.vstack(list(values.values()))
    diffs = mat[1:] - mat[0]
    t_means, means = _best(lambda: _resample_means(diffs, idx))

    def loop():
        out = np.empty((LOOP_RESAMPLES, diffs.shape[0]))
        for b in range(LOOP_RESAMPLES):
            out[b] = diffs[:, idx[b]].mean(axis=1)
        return out

    t_loop_sub, loop_means = _best(loop)
    np.testing.assert_allclose(loop_means, means[:LOOP_RESAMPLES], rtol=0, atol=1e-12)
    t_loop_full = t_loop_sub * B / LOOP_RESAMPLES

    return {
        "B": B,
        "n_tasks": N_TASKS,
        "n_methods": N_METHODS,
        "bootstrap_indices_s": t_idx,
        "resample_means_s": t_means,
        "paired_bootstrap_percentile_given_indices_s": t_pct,
        "paired_bootstrap_bca_given_indices_s": t_bca,
        "paired_bootstrap_end_to_end_s": t_e2e,
        "paired_bootstrap_end_to_end_median_s": _MEDIANS["end_to_end"],
        "loop_resamples": LOOP_RESAMPLES,
        "loop_subsample_s": t_loop_sub,
        "loop_extrapolated_full_B_s": t_loop_full,
        "speedup_means_vs_loop": t_loop_full / t_means,
        "speedup_end_to_end_vs_loop_plus_indices": (t_loop_full + t_idx) / t_e2e,
        "target_end_to_end_s": 2.0,
        "meets_target": t_e2e <= 2.0,
    }


def main() -> None:
    print_figures(run())


if __name__ == "__main__":
    main()
