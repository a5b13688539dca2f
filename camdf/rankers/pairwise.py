"""pairwise: a learned ranker over (query, tool) pairs, cross-fitted, for catalogs of thousands of tools.

The per-tool ``supervised`` ranker needs training positives of every tool; in a catalog of
2,479 APIs most tools are gold for no training task, and under the unseen-tool protocols
for none at all. This ranker learns instead *how much to trust each signal* about a pair:
a weighted L2 logistic regression of ``1{tool in G_x}`` on label-free pair features

- bm25 of the query against the tool's document: raw, z-scored within the query, its
  share of the query's best score and the log of its rank;
- the cosine of MiniLM embeddings (:mod:`camdf.rankers.dense`, catalog encoded once and
  cached): the same four transforms;

fitted on every gold pair of the training tasks and the pairs either signal ranks in its
top ``pool`` (the negatives that matter); its decision function scores every pair. Every
task is scored by a model fitted on other tasks only (:func:`~camdf.rankers.problem.crossfit_groups`),
and :func:`camdf.rankers.score_domain` runs the nested cross-fit (:func:`~camdf.rankers.problem.learned`).
The features do not depend on labels, so they are computed once per problem and reused by
every fit.
"""

from __future__ import annotations

import numpy as np

from camdf.rankers.dense import DEFAULT_THREADS, score_dense
from camdf.rankers.lexical import score_bm25
from camdf.rankers.problem import Problem, crossfit_groups, learned, rank_matrix

#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"pairwise": "score_pairwise"}


#: Feature names, in column order.
FEATURES = tuple(f"{s}_{t}" for s in ("bm25", "dense") for t in ("raw", "z", "share", "log_rank"))


def _transforms(scores: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
    """Raw, within-query z-score, share of the query's best, log rank: four (T, A) arrays."""
    s = np.where(mask, scores, np.nan)
    mean, std = np.nanmean(s, axis=1, keepdims=True), np.nanstd(s, axis=1, keepdims=True)
    z = (scores - mean) / np.where(std > 0, std, 1.0)
    top = np.nanmax(np.abs(s), axis=1, keepdims=True)
    share = scores / np.where(top > 0, top, 1.0)
    return [scores, z, share, np.log(rank_matrix(scores, mask).clip(min=1))]


#: Raw bm25 and dense rows of each query text against one catalog (keyed by the catalog's documents): the
#: nested cross-fit scores subsets of the same tasks six times, and neither score of a query depends on the
#: other queries (bm25's IDF is the catalog's), so each text is scored once per process.
_ROWS: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}


def _raw_scores(problem: Problem, cache_dir, n_threads: int) -> tuple[np.ndarray, np.ndarray]:
    """bm25 and dense scores (T, A) of the problem's texts, each distinct text computed once per catalog."""
    rows = _ROWS.setdefault(hash((tuple(problem.tools), tuple(problem.docs))), {})
    missing = [t for t in dict.fromkeys(problem.texts) if t not in rows]
    if missing:
        part = Problem(task_ids=missing, texts=missing, tools=problem.tools, docs=problem.docs,
                       mask=np.ones((len(missing), len(problem.tools)), dtype=bool),
                       membership=np.zeros((len(missing), len(problem.tools)), dtype=bool),
                       folds=np.zeros(len(missing), dtype=int))
        bm25 = score_bm25(part)
        dense = score_dense(part, cache_dir=cache_dir, n_threads=n_threads)
        rows.update({t: (bm25[i], dense[i]) for i, t in enumerate(missing)})
    return (np.vstack([rows[t][0] for t in problem.texts]), np.vstack([rows[t][1] for t in problem.texts]))


def pair_features(problem: Problem, cache_dir=None, n_threads: int = DEFAULT_THREADS) -> np.ndarray:
    """The label-free features of every (task, tool) pair, shape (T, A, len(FEATURES))."""
    bm25, dense = _raw_scores(problem, cache_dir, n_threads)
    return np.stack(_transforms(bm25, problem.mask) + _transforms(dense, problem.mask), axis=-1)


@learned
def score_pairwise(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    C: float = 1.0,
    pool: int = 100,
    inner_folds: int = 5,
    n_threads: int = DEFAULT_THREADS,
) -> np.ndarray:
    """Cross-fitted logistic regression over pair features; shape (T, A), the model's log-odds.

    Parameters
    ----------
    C : float
        Inverse L2 regularisation strength.
    pool : int
        Training negatives per task: the candidates bm25 or dense ranks in its top ``pool``.
    inner_folds : int
        K of the inner cross-fit that scores training-only tasks (fold -1).
    n_threads : int
        Torch CPU threads of the dense encoder (only texts not in the cache are encoded).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X = pair_features(problem, cache_dir=cache_dir, n_threads=n_threads)
    ranks = np.exp(X[..., [FEATURES.index("bm25_log_rank"), FEATURES.index("dense_log_rank")]]).min(axis=-1)
    y = problem.membership & problem.mask
    in_pool = problem.mask & ((ranks <= pool) | y)
    out = np.zeros(problem.mask.shape, dtype=np.float64)
    for scored, train in crossfit_groups(problem.folds, inner_folds, random_state):
        rows = in_pool[train]
        Xt, yt = X[train][rows], y[train][rows]
        if len(train) == 0 or yt.min() == yt.max():
            out[scored] = X[scored][..., FEATURES.index("bm25_z")]  # nothing to learn: bm25's own order
            continue
        scaler = StandardScaler().fit(Xt)
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=1000, random_state=random_state)
        model.fit(scaler.transform(Xt), yt)
        flat = X[scored].reshape(-1, X.shape[-1])
        out[scored] = model.decision_function(scaler.transform(flat)).reshape(len(scored), -1)
    return out
