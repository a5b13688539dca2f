"""``score_domain``: run one scorer over every (task, candidate) of a domain."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pandas as pd

from camdf.data.model import Domain
from camdf.rankers.problem import Problem, long_frame, rank_matrix
from camdf.rankers.dense import score_dense
from camdf.rankers.fusion import score_hybrid
from camdf.rankers.lexical import score_bm25
from camdf.rankers.oracle import score_noisy_oracle
from camdf.rankers.supervised import score_prior, score_supervised

SCORERS = {
    "bm25": score_bm25,
    "dense": score_dense,
    "supervised": score_supervised,
    "hybrid": score_hybrid,
    "prior": score_prior,
    "noisy_oracle": score_noisy_oracle,
}
COMMON = ("cache_dir", "random_state")


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
    **params,
) -> pd.DataFrame:
    """Score and rank every candidate tool of every task.

    Parameters
    ----------
    domain : Domain
    scorer : {"bm25", "dense", "supervised", "hybrid", "prior", "noisy_oracle"}
    folds : ndarray of int, shape (T,)
        From :func:`camdf.core.folds.assign_folds`; ``supervised`` and ``prior`` score a
        task in fold f with models fitted on tasks of other folds (fold -1: inner
        cross-fit among training-only tasks).
    cache_dir : path, optional
        Root of the embedding cache (``dense``, ``hybrid``).
    random_state : int
        Seeds the inner cross-fit and ``noisy_oracle``'s noise.
    **params
        Scorer parameters (see :func:`scorer_params`), e.g. ``quality`` in [0, 1]
        for ``noisy_oracle``.

    Returns
    -------
    DataFrame
        Columns task_id (str), tool (str), score (float64), rank (int, 1 = best,
        ties broken by catalog order; ``prior`` breaks ties by bm25 first), fold
        (int); one row per (task, candidate), sorted by task order then rank.
    """
    allowed = scorer_params(scorer)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"scorer {scorer}: unknown parameter(s) {unknown}, expected some of {sorted(allowed)}")
    problem = Problem.from_domain(domain, folds)
    out = SCORERS[scorer](problem, cache_dir=cache_dir, random_state=random_state, **params)
    scores, secondary = out if isinstance(out, tuple) else (out, None)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != problem.mask.shape:
        raise ValueError(f"scorer {scorer}: returned shape {scores.shape}, expected {problem.mask.shape}")
    return long_frame(problem, scores, rank_matrix(scores, problem.mask, secondary))
