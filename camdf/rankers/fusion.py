"""hybrid: reciprocal-rank fusion (RRF) of bm25 and dense.

score(t, j) = 1 / (k + rank_bm25(t, j)) + 1 / (k + rank_dense(t, j)), ranks taken
within the task's candidates (Cormack, Clarke and Buettcher, SIGIR 2009; k = 60).
"""

from __future__ import annotations

import numpy as np

from camdf.rankers.problem import Problem, rank_matrix
from camdf.rankers.dense import DEFAULT_THREADS, score_dense
from camdf.rankers.lexical import score_bm25


#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"hybrid": "score_hybrid"}


def rrf(ranks: list[np.ndarray], mask: np.ndarray, k: float = 60.0) -> np.ndarray:
    """Reciprocal-rank fusion of rank matrices (1 = best), shape (T, A); 0 outside ``mask``."""
    fused = sum(1.0 / (k + r.astype(np.float64)) for r in ranks)
    return np.where(mask, fused, 0.0)


def score_hybrid(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    k: float = 60.0,
    n_threads: int = DEFAULT_THREADS,
) -> np.ndarray:
    """RRF of the bm25 and dense rankings, shape (T, A)."""
    bm25 = score_bm25(problem)
    dense = score_dense(problem, cache_dir=cache_dir, n_threads=n_threads)
    return rrf([rank_matrix(bm25, problem.mask), rank_matrix(dense, problem.mask)], problem.mask, k)
