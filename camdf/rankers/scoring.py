"""``score_domain``: run one scorer over every (task, candidate) of a domain."""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np
import pandas as pd

from camdf.data.model import Domain
from camdf.core.folds import fold_ids
from camdf.rankers.problem import VIEW, Problem, is_learned, long_frame, rank_matrix
from camdf.rankers import SCORER_FUNCTIONS

#: Scorer name -> its function (:data:`camdf.rankers.SCORER_FUNCTIONS`).
def _function(ref: str):
    """The function a ``"module:function"`` reference of :data:`camdf.rankers.SCORER_FUNCTIONS` names."""
    module, _, function = ref.partition(":")
    return getattr(importlib.import_module(f"camdf.rankers.{module}"), function)


SCORERS = {name: _function(ref) for name, ref in SCORER_FUNCTIONS.items()}
COMMON = ("cache_dir", "random_state", "data_dir")


def scorer_params(scorer: str) -> dict[str, object]:
    """The parameters a scorer accepts beyond ``cache_dir`` and ``random_state``, with defaults."""
    if scorer not in SCORERS:
        raise ValueError(f"scorer: unknown scorer {scorer!r}, expected one of {', '.join(SCORERS)}")
    sig = inspect.signature(SCORERS[scorer])
    return {n: p.default for n, p in list(sig.parameters.items())[1:] if n not in COMMON}


def score_domain(
    domain: Domain,
    scorer: str,
    folds: np.ndarray,
    *,
    cache_dir: str | os.PathLike | None = None,
    random_state: int = 0,
    data_dir: str | os.PathLike | None = None,
    **params,
) -> pd.DataFrame:
    """Score and rank every candidate tool of every task.

    Parameters
    ----------
    domain : Domain
    scorer : {"bm25", "dense", "supervised", "hybrid", "prior", "pairwise", "rerank", "noisy_oracle"}
    folds : ndarray of int, shape (T,)
        From :func:`camdf.core.folds.assign_folds`. A learned scorer (``supervised``,
        ``prior``; :func:`~camdf.rankers.problem.learned`) is scored by the *nested
        cross-fit*: for each evaluated (outer) fold f, the tasks of f are scored by the
        model fitted on every task outside f, and the tasks outside f by the scorer's
        cross-fit run on those tasks alone (a task of fold g by a model fitted on the
        tasks in neither f nor g; a training-only task, fold -1, by the inner cross-fit
        among the training-only tasks). So the fold-f stopper's training tasks are scored
        as its test tasks are, by a model that saw neither them nor fold f's labels.
    cache_dir : path, optional
        Root of the embedding cache (``dense``, ``hybrid``).
    random_state : int
        Seeds the inner cross-fit and ``noisy_oracle``'s noise.
    data_dir : path, optional
        The built domains, for a scorer that learns from other catalogs (``crosscat``; given to those only).
    **params
        Scorer parameters (see :func:`scorer_params`), e.g. ``quality`` in [0, 1]
        for ``noisy_oracle``.

    Returns
    -------
    DataFrame
        Columns task_id (str), tool (str), score (float64), rank (int, 1 = best,
        ties broken by catalog order; ``prior`` breaks ties by bm25 first), fold
        (int); one row per (task, candidate), sorted by task order then rank. A learned
        scorer's frame adds the column ``view`` (int): one such block of rows per
        evaluated fold f, in fold order, the scores the fold-f stopper trains on;
        :func:`~camdf.rankers.problem.evaluation_view` and
        :func:`~camdf.rankers.problem.training_view` read it.
    """
    allowed = scorer_params(scorer)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"scorer {scorer}: unknown parameter(s) {unknown}, expected some of {sorted(allowed)}")
    problem = Problem.from_domain(domain, folds)
    if data_dir is not None and "data_dir" in inspect.signature(SCORERS[scorer]).parameters:
        params = {**params, "data_dir": data_dir}

    def run(part: Problem) -> tuple[np.ndarray, np.ndarray | None]:
        out = SCORERS[scorer](part, cache_dir=cache_dir, random_state=random_state, **params)
        scores, secondary = out if isinstance(out, tuple) else (out, None)
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != part.mask.shape:
            raise ValueError(f"scorer {scorer}: returned shape {scores.shape}, expected {part.mask.shape}")
        return scores, secondary

    scores, secondary = run(problem)
    if not is_learned(SCORERS[scorer]):
        return long_frame(problem, scores, rank_matrix(scores, problem.mask, secondary))
    views = []
    for f, (view, view_secondary) in nested_views(problem, run, (scores, secondary)).items():
        frame = long_frame(problem, view, rank_matrix(view, problem.mask, view_secondary))
        views.append(frame.assign(**{VIEW: np.int64(f)}))
    return pd.concat(views, ignore_index=True)


def nested_views(problem: Problem, run, outer=None) -> dict[int, tuple[np.ndarray, np.ndarray | None]]:
    """A learned scorer's nested cross-fit: per evaluated fold f, every task's (scores, secondary).

    Fold f keeps its scores from the model fitted on every task outside f (``outer``, the
    scorer's cross-fit over all tasks); the training tasks are re-scored by the scorer's
    own cross-fit run on the training tasks alone.

    Parameters
    ----------
    problem : Problem
    run : callable
        Problem -> (scores (T', A), secondary (T', A) or None): the scorer's cross-fit.
    outer : tuple, optional
        ``run(problem)`` when already computed.
    """
    scores, secondary = outer if outer is not None else run(problem)
    out = {}
    for f in fold_ids(problem.folds):
        train = np.flatnonzero(problem.folds != f)
        inner, inner_secondary = run(problem.subset(train))
        view, view_secondary = scores.copy(), None if secondary is None else np.array(secondary, dtype=np.float64)
        view[train] = inner
        if view_secondary is not None:
            view_secondary[train] = inner_secondary
        out[f] = (view, view_secondary)
    return out
