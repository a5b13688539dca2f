"""Power and stability of a cell's verdicts: the minimum detectable difference, CIs over bootstrap seeds, the miss-rate test.

* :func:`min_detectable_difference` -- the smallest paired mean difference a two-sided
  test at level alpha detects with the stated power, from the SD of the per-task differences;
* :func:`seed_intervals` -- percentile CIs of paired mean differences re-drawn under
  several bootstrap seeds (how much a verdict read off a CI depends on the seed);
* :func:`miss_rate_test` -- the exact one-sided binomial test of a realised miss rate against alpha.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import binomtest, norm

from camdf.evaluation.bootstrap import _intervals, _resample_means, bootstrap_indices

__all__ = ["MissRateTest", "min_detectable_difference", "miss_rate_test", "seed_intervals"]


def min_detectable_difference(sd, n, alpha: float = 0.05, power: float = 0.8):
    r"""Minimum detectable paired mean difference (two-sided level ``alpha``, the given ``power``).

    Parameters
    ----------
    sd : float or array_like
        SD (ddof = 1) of the per-task paired differences.
    n : int or array_like
        Number of tasks (pairs), ``n >= 2``.
    alpha : float, default 0.05
        Two-sided level.
    power : float, default 0.8

    Returns
    -------
    float or ndarray
        :math:`(z_{1-\alpha/2} + z_{\text{power}})\,\mathrm{sd}/\sqrt n` -- the normal
        approximation of the paired test (1.96 + 0.84 = 2.80 at the defaults). A true
        difference of this size is detected (CI excluding 0) with probability ``power``.
    """
    n = np.asarray(n, dtype=float)
    if np.any(n < 2):
        raise ValueError(f"n: need at least 2 paired tasks, got {n}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power: must be in (0, 1), got {alpha}, {power}")
    out = (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * np.asarray(sd, dtype=float) / np.sqrt(n)
    return float(out) if out.ndim == 0 else out


@lru_cache(maxsize=64)
def _indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """One seed's bootstrap index matrix, drawn once per process (every comparison over n tasks shares it)."""
    idx = bootstrap_indices(n, n_resamples, seed)
    idx.flags.writeable = False
    return idx


def seed_intervals(differences: np.ndarray, n_resamples: int, seeds: Sequence[int],
                   confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CIs of the mean of each row of ``differences`` under each bootstrap seed.

    Parameters
    ----------
    differences : ndarray, shape (k, n)
        Per-task paired differences of k comparisons over the same n tasks.
    n_resamples : int
        Bootstrap resamples B per seed.
    seeds : sequence of int
        Seed s draws the index matrix ``bootstrap_indices(n, B, s)``, as a cell with seed s
        does (:func:`camdf.evaluation.summary.summarize_cell`), so the cell's own seed
        reproduces its logged CI.
    confidence : float, default 0.95

    Returns
    -------
    lo, hi : ndarray, shape (len(seeds), k)
    """
    values = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    lo = np.empty((len(seeds), values.shape[0]))
    hi = np.empty_like(lo)
    for i, seed in enumerate(seeds):
        idx = _indices(values.shape[1], int(n_resamples), int(seed))
        lo[i], hi[i] = _intervals(values, _resample_means(values, idx), confidence, "percentile")
    return lo, hi


@dataclass(frozen=True)
class MissRateTest:
    """The exact one-sided binomial test of a miss rate against its target alpha.

    Attributes
    ----------
    misses, n : int
        Misses among n decisions (tasks x repeats).
    alpha : float
    pvalue : float
        P(X >= misses) for X ~ Binomial(n, alpha): small when the rule misses more than alpha.
    """

    misses: int
    n: int
    alpha: float
    pvalue: float


def miss_rate_test(misses: int, n: int, alpha: float) -> MissRateTest:
    """Exact binomial test (``scipy.stats.binomtest``, alternative ``greater``) of H0: P(miss) <= alpha.

    The n decisions (every task in every repeat) are treated as independent draws: a task's
    repeats share its G_x, so the test is somewhat anti-conservative when misses cluster by task.
    """
    if not 0 <= misses <= n or n < 1:
        raise ValueError(f"misses, n: need 0 <= misses <= n and n >= 1, got {misses}, {n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: must be in (0, 1), got {alpha}")
    p = binomtest(int(misses), int(n), float(alpha), alternative="greater").pvalue
    return MissRateTest(int(misses), int(n), float(alpha), float(p))


@dataclass(frozen=True)
class ClusteredMissTest:
    """One-sided test of H0 P(miss) <= alpha over tasks (misses clustered by task): rate, tasks, t and p."""

    rate: float
    n_tasks: int
    alpha: float
    statistic: float
    pvalue: float


def clustered_miss_test(task_miss: np.ndarray, alpha: float) -> ClusteredMissTest:
    """Test H0 P(miss) <= alpha with each task as one cluster: a one-sided t-test over the tasks' miss shares.

    ``task_miss[i]`` is task i's share of missed decisions over the repeats (or its 0/1 miss with one
    repeat). The tasks are the independent units: a task's repeats share its G_x and its ranking, so
    their misses are correlated, and the binomial test over tasks x repeats (:func:`miss_rate_test`)
    understates the variance when misses cluster. ``t = (mean - alpha) / (sd / sqrt(n))`` with the
    tasks' SD (ddof 1), p from Student's t with n - 1 degrees of freedom (a large-sample test; with
    every task's share equal, p is 1 at a rate <= alpha and 0 above it).
    """
    from scipy.stats import t as student

    m = np.asarray(task_miss, dtype=float)
    if m.ndim != 1 or len(m) < 2 or not np.isfinite(m).all() or (m < 0).any() or (m > 1).any():
        raise ValueError(f"task_miss: expected >= 2 finite shares in [0, 1], got shape {m.shape}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: must be in (0, 1), got {alpha}")
    rate, sd, n = float(m.mean()), float(m.std(ddof=1)), len(m)
    if sd == 0:
        return ClusteredMissTest(rate, n, float(alpha), float("nan"), 0.0 if rate > alpha else 1.0)
    stat = (rate - alpha) / (sd / np.sqrt(n))
    return ClusteredMissTest(rate, n, float(alpha), float(stat), float(student.sf(stat, n - 1)))
