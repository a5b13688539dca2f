"""Text shared by the tables: an estimate with its interval, how a cell's decisions were made, power and inner-CV choices."""

from __future__ import annotations

import ast

import numpy as np
import pandas as pd

from camdf.evaluation.fits import choice_counts
from camdf.policies import REFERENCE
from camdf.reporting.store import mkey
from camdf.reporting.verdicts import fits_text


def ci_text(mean: float, lo: float, hi: float, digits: int = 3) -> str:
    """``mean [lo, hi]`` with ``digits`` decimals."""
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def payoff_columns(run: pd.Series, method: str) -> dict[str, object]:
    """A method's payoff cells in a cell's table: mean with its CI, the mean, and the range over the repeats."""
    g = lambda k: run.get(mkey(method, k), np.nan)  # noqa: E731
    return {"payoff (95% CI)": ci_text(g("payoff_mean"), g("payoff_ci_low"), g("payoff_ci_high")),
            "payoff": g("payoff_mean"),
            "repeat range": "" if pd.isna(g("payoff_repeat_min")) else
            f"{g('payoff_repeat_min'):.3f}-{g('payoff_repeat_max'):.3f}"}


def diff_text(run: pd.Series, method: str) -> str:
    """The method minus CAM-DF (the cell's reference) with its CI; empty for CAM-DF itself."""
    g = lambda k: run.get(mkey(method, k), np.nan)  # noqa: E731
    return "" if method == REFERENCE else ci_text(g("diff_vs_ref"), g("diff_vs_ref_ci_low"), g("diff_vs_ref_ci_high"))


def by_scorer(cells: pd.DataFrame, scorer: str) -> pd.DataFrame:
    """The cells ranked by ``scorer`` (an empty frame stays empty)."""
    return cells[cells["p:scorer.label"] == scorer] if not cells.empty else cells


def needed_at_scorer(cells: pd.DataFrame, scorer: str, table: str, what: str, experiment: str) -> pd.DataFrame:
    """:func:`by_scorer`, or LookupError naming ``table``, the missing runs (``what``) and the experiment to run."""
    hit = by_scorer(cells, scorer)
    if hit.empty:
        raise LookupError(f"{table} ({scorer}): no FINISHED {what} with scorer {scorer}; "
                          f"run `experiment={experiment}` first")
    return hit


def protocol_note(run: pd.Series) -> str:
    """How a cell's decisions and intervals were made: R repeats, K folds, the fold protocol."""
    repeats = run.get("p:folds.repeats", np.nan)
    repeats = 1 if pd.isna(repeats) else int(float(repeats))
    text = (f"{repeats} repeated cross-fit{'s' if repeats > 1 else ''} of {run['p:folds.n_folds']} folds "
            f"(protocol {run['p:folds.protocol']}; repeat r seeds folds, rankers and models with seed + r)")
    if repeats > 1:
        text += ("; every figure is the mean over tasks of each task's mean over the repeats, CIs are the paired "
                 "bootstrap over tasks applied to those per-task means, and the spread is the min-max of the "
                 "repeat means")
    return text


#: Short names of the booster parameters in an inner-CV choice.
_SHORT = {"num_leaves": "leaves", "n_estimators": "trees", "reg_lambda": "l2", "min_child_samples": "min leaf"}


def choice_label(value: str) -> str:
    """An inner-CV candidate (``tuned.csv``'s ``params`` value, a dict literal) as ``leaves 3, trees 50, ...``."""
    try:
        params = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
    if not isinstance(params, dict):
        return value
    if params.get("n_estimators") == 0:
        return "no correction (trees 0)"
    return ", ".join(f"{_SHORT.get(k, k)} {v:g}" if isinstance(v, (int, float)) else f"{_SHORT.get(k, k)} {v}"
                     for k, v in params.items())


def choice_text(counts: pd.Series) -> str:
    """``21/25 leaves 3, ...; 4/25 leaves 7, ...``: how many fits picked each candidate (empty when none)."""
    total = int(counts.sum())
    return "; ".join(f"{int(k)}/{total} {choice_label(v)}" for v, k in counts.items())


def mdd_text(values) -> str:
    """The range of minimum detectable differences, ``0.019-0.032`` (one value when they agree to 3 decimals)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if not len(v):
        return "n/a (outcomes not read)"
    lo, hi = f"{v.min():.3f}", f"{v.max():.3f}"
    return lo if lo == hi else f"{lo}-{hi}"


#: How the minimum detectable difference is computed, as every note states it.
MDD_NOTE = ("MDD: the minimum detectable difference at 80% power (two-sided 5%), (z_0.975 + z_0.8) * SD / sqrt(n) "
            "= 2.80 SD / sqrt(n) (normal approximation), SD the standard deviation of the n per-task paired "
            "differences (each task's mean over the repeats)")

#: How a learned ranker's scores are made (camdf.rankers.scoring.score_domain), as the main-cell notes state it.
NESTED_NOTE = ("A learned ranker (supervised, prior) is scored by nested cross-fitting: fold f's tasks by the "
               "ranker fitted on every other fold, and the training tasks of fold f by an inner cross-fit among those "
               "training tasks alone, so no feature the fold-f stopper is fitted on depends on fold f's labels")


def fit_columns(evidence, run: pd.Series, method: str) -> dict[str, object]:
    """The selection-noise and power columns of ``method`` against CAM-DF in one cell run of ``evidence``.

    ``evidence`` is the :class:`~camdf.reporting.evidence.Evidence` the table reads (its judge and artifacts).

    ``fits lower / higher than CAM-DF``: of the cell's (repeat, fold) fits, how many have a
    negative / positive mean paired payoff difference; ``MDD``: the minimum detectable
    difference of the paired comparison; ``inner-CV choice``: how many fits picked each candidate
    (methods that tune a ``params`` choice). Empty where the run's outcomes were not read.
    """
    out: dict[str, object] = {"fits lower / higher than CAM-DF": "", "MDD": np.nan, "inner-CV choice (fits)": ""}
    if method != REFERENCE:
        try:
            c = evidence.judge.compare(run, method, REFERENCE)
        except LookupError:
            c = None
        if c is not None:
            out["fits lower / higher than CAM-DF"] = fits_text(c)
            out["MDD"] = c.mdd
    tuned = evidence.artifacts.tuned(run["run_id"]) if evidence.artifacts is not None else None
    if tuned is not None:
        out["inner-CV choice (fits)"] = choice_text(choice_counts(tuned, method))
    return out



def baseline_of(run: pd.Series) -> str | None:
    """The cell's best tuned baseline (:func:`camdf.policies.best_tuned_baseline`, the one definition): the one its
    evaluation flagged (``is_best_baseline``, ties broken in the cell's method order), else picked from its logged
    payoffs; None without one."""
    from camdf.policies import best_tuned_baseline as best
    from camdf.reporting.store import methods_of

    found = methods_of(run)
    flagged = [m for m in found if run.get(mkey(m, "is_best_baseline"), np.nan) == 1.0]
    return flagged[0] if flagged else best({m: float(run.get(mkey(m, "payoff_mean"), np.nan)) for m in found})


def ours_deployable(run: pd.Series) -> list[str]:
    """The CAM-DF family's deployable rules in a cell (the paper's and this project's, ablations left out)."""
    from camdf.policies import methods
    from camdf.reporting.store import methods_of

    family = set(methods(family="camdf"))
    return [m for m in methods_of(run) if m in family]


def vs_best_columns(evidence, run: pd.Series, method: str, best: str | None) -> dict[str, object]:
    """``method`` minus the cell's best tuned baseline (peers included): CI, fits and MDD; empty for other rows."""
    out = {"minus best tuned baseline (95% CI)": "", "fits lower / higher than it": "", "MDD vs it": np.nan}
    if best is None or method not in ours_deployable(run):
        return out
    try:
        c = evidence.judge.compare(run, method, best)
    except LookupError:
        return out
    return {"minus best tuned baseline (95% CI)": c.text,
            "fits lower / higher than it": fits_text(c), "MDD vs it": c.mdd}


#: A helper module: it declares no table (:func:`camdf.reporting.registry.tables` reads ``SPECS``).
SPECS: tuple = ()
