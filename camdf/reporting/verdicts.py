"""The wording rule of every verdict ("beats X", "worse than X", "does not beat X") and the comparisons it reads.

A paired payoff difference counts as a win (a loss) only when its CI lies above (below) 0
AND the difference has that sign in more than :data:`MOST_FITS` of the cell's (repeat, fold)
fits: a CI that excludes 0 because a few fits picked another model is model-selection
noise, reported as "does not beat X (the loss is carried by k of n fits)". Without the
cell's outcomes (an older run) the CI alone decides, and the text says so.

:class:`Judge` builds the :class:`Comparison` s from the store: the logged CI where the cell
logged one, the per-task and per-fit differences from the run's outcomes, and the same
CIs re-drawn under other bootstrap seeds (:meth:`Judge.at_seed`) for the stability of a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.policies import REFERENCE
from camdf.evaluation.fits import paired_differences
from camdf.evaluation.power import min_detectable_difference, seed_intervals
from camdf.reporting.artifacts import CellArtifacts
from camdf.reporting.store import mkey

#: A difference is a win (loss) only when more than this share of the fits has a positive (negative) mean difference.
MOST_FITS = 0.5
#: Bootstrap seeds a verdict is re-judged under (its stability: the share giving the committed verdict).
STABILITY_SEEDS = tuple(range(20))
#: A verdict given by fewer than this share of the seeds is flagged knife-edge.
KNIFE_EDGE = 0.9

#: The rule as the tables state it.
RULE_TEXT = (f"X beats Y only when the paired CI of X - Y lies above 0 and X - Y > 0 in more than "
             f"{MOST_FITS:.0%} of the cell's (repeat, fold) fits; X is worse than Y only when the CI lies below 0 "
             f"and X - Y < 0 in more than {MOST_FITS:.0%} of the fits; otherwise X does not beat Y (the CI covers 0, "
             "or the gain or loss is carried by fewer fits: model-selection noise)")


@dataclass(frozen=True)
class Comparison:
    """X minus Y over the tasks of a cell: mean, 95% CI, per-task and per-fit differences.

    Attributes
    ----------
    mean, lo, hi : float
    per_task : ndarray or None
        Each task's mean difference over the repeats (what the CI resamples); None without outcomes.
    per_fit : ndarray or None
        The mean difference of each (repeat, fold) fit; None without outcomes.
    """

    mean: float
    lo: float
    hi: float
    per_task: np.ndarray | None = None
    per_fit: np.ndarray | None = None

    @property
    def n_fits(self) -> int:
        """Number of fits (0 without outcomes)."""
        return 0 if self.per_fit is None else len(self.per_fit)

    @property
    def fits_lower(self) -> int:
        """Fits where X - Y < 0."""
        return 0 if self.per_fit is None else int((self.per_fit < -1e-12).sum())

    @property
    def fits_higher(self) -> int:
        """Fits where X - Y > 0."""
        return 0 if self.per_fit is None else int((self.per_fit > 1e-12).sum())

    @property
    def sd(self) -> float:
        """SD (ddof = 1) of the per-task differences (nan without outcomes)."""
        return float(np.std(self.per_task, ddof=1)) if self.per_task is not None and len(self.per_task) > 1 else np.nan

    @property
    def mdd(self) -> float:
        """Minimum detectable difference at 80% power, two-sided 5% (:func:`min_detectable_difference`)."""
        return min_detectable_difference(self.sd, len(self.per_task)) if np.isfinite(self.sd) else np.nan

    @property
    def text(self) -> str:
        """``+mean [+lo, +hi]``: the difference with its CI, signed (a value that rounds to 0 unsigned)."""
        return f"{signed(self.mean)} [{signed(self.lo)}, {signed(self.hi)}]"

    def negated(self) -> Comparison:
        """Y minus X."""
        return Comparison(-self.mean, -self.hi, -self.lo, None if self.per_task is None else -self.per_task,
                          None if self.per_fit is None else -self.per_fit)

    def with_ci(self, lo: float, hi: float) -> Comparison:
        """The same differences with another CI (another bootstrap seed)."""
        return Comparison(self.mean, lo, hi, self.per_task, self.per_fit)


def direction(c: Comparison) -> int:
    """+1: X beats Y; -1: X is worse than Y; 0: X does not beat Y (:data:`RULE_TEXT`; CI alone without fits)."""
    if c.lo > 0 and (c.per_fit is None or c.fits_higher > MOST_FITS * c.n_fits):
        return 1
    if c.hi < 0 and (c.per_fit is None or c.fits_lower > MOST_FITS * c.n_fits):
        return -1
    return 0


def reason(c: Comparison) -> str:
    """Why a comparison is (or is not) a win or loss: the CI and the fits carrying the difference."""
    if c.per_fit is None:
        return "CI only: the cell's outcomes were not read"
    carried = c.fits_higher if c.mean > 0 else c.fits_lower
    what = "gain" if c.mean > 0 else "loss"
    if c.lo <= 0 <= c.hi:
        return f"CI covers 0; {what} in {carried} of {c.n_fits} fits"
    return f"{what} in {carried} of {c.n_fits} fits" if direction(c) else \
        f"the {what} is carried by {carried} of {c.n_fits} fits"


def verdict_text(c: Comparison, higher: str, lower: str) -> str:
    """``higher`` / ``lower`` / ``no difference shown`` by :func:`direction`, then ``(<reason>)``."""
    return {1: higher, -1: lower, 0: "no difference shown"}[direction(c)] + f" ({reason(c)})"


def wording(c: Comparison, rival: str) -> str:
    """``beats <rival>`` / ``is worse than <rival>`` / ``does not beat <rival> (<reason>)``."""
    d = direction(c)
    if d > 0:
        return f"beats {rival}"
    if d < 0:
        return f"is worse than {rival}"
    return f"does not beat {rival} ({reason(c)})"


def fits_text(c: Comparison) -> str:
    """``lower / higher of n`` fits, or empty without outcomes."""
    return "" if c.per_fit is None else f"{c.fits_lower} / {c.fits_higher} of {c.n_fits}"


class Judge:
    """Comparisons of methods within a cell run or across two runs over the same tasks.

    Parameters
    ----------
    artifacts : CellArtifacts or None
        Where the runs' outcomes are read; None: logged CIs only, no fits.
    seed : int or None
        None: each comparison's CI as the cell logged it (or, for one it did not log, drawn
        with the cell's seed); an int: every CI re-drawn with that bootstrap seed.
    """

    def __init__(self, artifacts: CellArtifacts | None = None, seed: int | None = None,
                 _cache: dict | None = None):
        self.artifacts = artifacts
        self.seed = seed
        self._cache = {} if _cache is None else _cache  # shared by every seed's judge

    def at_seed(self, seed: int) -> Judge:
        """The same comparisons with every CI drawn with bootstrap seed ``seed``."""
        return Judge(self.artifacts, seed, self._cache)

    @property
    def reads_fits(self) -> bool:
        """Whether the runs' outcomes can be read (per-fit rule, MDD, seed stability)."""
        return self.artifacts is not None

    def _differences(self, run_a: pd.Series, a: str, run_b: pd.Series, b: str, column: str):
        key = ("diff", run_a["run_id"], a, run_b["run_id"], b, column)
        if key not in self._cache:
            out = None
            if self.artifacts is not None:
                oa, ob = self.artifacts.outcomes(run_a["run_id"]), self.artifacts.outcomes(run_b["run_id"])
                if oa is not None and ob is not None and column in oa and column in ob:
                    try:
                        task, fit = paired_differences(oa, a, ob, b, column)
                        out = task.to_numpy(), fit.to_numpy()
                    except LookupError:
                        out = None
            self._cache[key] = out
        return self._cache[key]

    def _seed_cis(self, key, per_task: np.ndarray, n_resamples: int, seeds: Sequence[int]):
        ckey = ("ci", *key, n_resamples, tuple(seeds))
        if ckey not in self._cache:
            lo, hi = seed_intervals(per_task[None, :], n_resamples, seeds)
            self._cache[ckey] = dict(zip(seeds, zip(lo[:, 0], hi[:, 0])))
        return self._cache[ckey]

    def seed_ci(self, run: pd.Series, key: tuple, per_task: np.ndarray) -> tuple[float, float]:
        """The bootstrap CI of ``per_task``'s mean, drawn as ``run`` draws its CIs (its resamples) with this judge's
        seed, else the run's (every stability seed drawn at once, cached under ``key``: the comparison)."""
        n_resamples = int(float(run.get("p:stats.n_resamples", 2000)))
        seed = int(float(run.get("p:seed", 0))) if self.seed is None else self.seed
        seeds = STABILITY_SEEDS if seed in STABILITY_SEEDS else (seed,)
        lo, hi = self._seed_cis(key, per_task, n_resamples, seeds)[seed]
        return float(lo), float(hi)

    def compare(self, run_a: pd.Series, a: str, b: str, run_b: pd.Series | None = None,
                column: str = "payoff") -> Comparison:
        """``a`` (in ``run_a``) minus ``b`` (in ``run_b``, default ``run_a``).

        The logged CI is used where the cell logged this difference (``b`` the reference,
        CAM-DF, or ``a`` a family member against the cell's best baseline); any other CI is
        drawn from the per-task differences. LookupError when neither is available.
        """
        run_b = run_a if run_b is None else run_b
        same = run_b["run_id"] == run_a["run_id"] and column == "payoff"
        logged = _logged(run_a, a, b) if same else None
        diffs = self._differences(run_a, a, run_b, b, column)
        if diffs is None and logged is None:
            raise LookupError(f"no logged or computable difference {a} - {b} in run {run_a['run_id']}")
        per_task, per_fit = diffs if diffs is not None else (None, None)
        if logged is not None and self.seed is None:
            mean, lo, hi = logged
        else:
            if per_task is None:  # re-drawing needs the per-task differences: keep the logged CI
                return Comparison(*logged)
            lo, hi = self.seed_ci(run_a, (run_a["run_id"], a, run_b["run_id"], b, column), per_task)
            mean = float(per_task.mean()) if logged is None else logged[0]
        return Comparison(float(mean), float(lo), float(hi), per_task, per_fit)


def _logged(run: pd.Series, a: str, b: str) -> tuple[float, float, float] | None:
    """``a - b`` (mean, lo, hi) as the cell logged it, or None."""
    def get(m, k):
        v = run.get(mkey(m, k), np.nan)
        return None if pd.isna(v) else float(v)
    orientations = ((a, b, 1.0), (b, a, -1.0))
    # The difference to the reference (CAM-DF) first, then a family member's to the cell's best baseline.
    for kind, applies in (("diff_vs_ref", lambda ref: ref == REFERENCE),
                          ("diff_vs_best_baseline", lambda ref: run.get(mkey(ref, "is_best_baseline"), np.nan) == 1.0)):
        for m, ref, sign in orientations:
            if applies(ref) and get(m, kind) is not None:
                d, lo, hi = get(m, kind), get(m, f"{kind}_ci_low"), get(m, f"{kind}_ci_high")
                return (d, lo, hi) if sign > 0 else (-d, -hi, -lo)
    return None
