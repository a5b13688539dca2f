"""rerank: a learned re-ranker (LightGBM) over what every other ranker here knows, cross-fitted.

The pairwise ranker weighs bm25 and MiniLM against one another, query by query and tool by
tool. Two things it cannot see cost it most of its misses at catalog scale (A28):

- **A query asks for several things** ("generate ten passwords ... Furthermore, convert 500
  grams to pounds"): the first intent's APIs crowd the top of every whole-query ranking, so
  the second intent's gold API sits at rank 87. Each sentence of the query (:func:`clauses`)
  is scored on its own, by bm25 and MiniLM, and a tool's best sentence counts.
- **APIs come in families** (the endpoints of one service): a tool whose nearest catalog
  neighbours (MiniLM cosine of the documents) score high, or sit near the query's top
  results, is likelier gold.

Features of a (query, tool) pair (:data:`FEATURES`): the pairwise ranker's eight; the log rank
in the bm25 + MiniLM reciprocal-rank fusion and in the fusion of that with the best sentence's
rank; the best sentence's z-scores and log ranks (bm25, MiniLM, their fusion); the maximum
and mean of the bm25 and MiniLM z-scores over the tool's 5 and 15 nearest neighbours, and of
the best sentence's z-scores over 5; the largest cosine to the query's first 3, 10 and 30
tools (the first stage); and, learned from labels, the tool's rate in the training tasks' G_x
and its neighbours' largest and mean rates. A LightGBM binary model of ``1{tool in G_x}`` is
fitted on the pairs the first stage ranks in its top ``pool`` (a gold pair below it is left out:
in the fit it would be the only kind of pair there, and the model would learn that depth means gold),
and its raw score ranks them; below the pool the first stage's order continues (:func:`_below_pool`).

No leak: every task is scored by a model fitted on other tasks only
(:func:`~camdf.rankers.problem.crossfit_groups`; :func:`camdf.rankers.score_domain` runs the nested
cross-fit), and the label rates a training row carries are themselves cross-fitted among the
training tasks (:func:`~camdf.rankers.supervised.prior_rates`), so the model trains on rates as
noisy as those it is applied to. Deterministic: MiniLM's grid vectors give exact cosines
(:mod:`camdf.rankers.dense`), LightGBM runs on one thread with ``deterministic``.
"""

from __future__ import annotations

import numpy as np

from camdf.rankers.dense import DEFAULT_THREADS, embed
from camdf.rankers.fusion import rrf
from camdf.rankers.lexical import bm25_scores
from camdf.rankers.pairwise import FEATURES as PAIR_FEATURES, pair_features
from camdf.rankers.problem import Problem, crossfit_groups, learned, rank_matrix
from camdf.rankers.supervised import prior_rates
from camdf.rankers.text import clauses  # noqa: F401  (the query's sentences; its name here too)

#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"rerank": "score_rerank"}

#: Neighbourhood sizes (nearest catalog tools by document cosine) the features read.
NEIGHBOURS = (5, 15)
#: The first stage's depths whose largest cosine to a tool is a feature.
CO_DEPTHS = (3, 10, 30)
_LABEL_FREE = (
    PAIR_FEATURES
    + ("hybrid_log_rank", "fused_log_rank", "clause_bm25_z", "clause_dense_z",
       "clause_bm25_log_rank", "clause_dense_log_rank", "clause_hybrid_log_rank")
    + tuple(f"nbr{k}_{s}_{a}" for k in NEIGHBOURS for s in ("bm25_z", "dense_z") for a in ("max", "mean"))
    + tuple(f"nbr5_clause_{s}_{a}" for s in ("bm25_z", "dense_z") for a in ("max", "mean"))
    + tuple(f"cos_top{m}" for m in CO_DEPTHS)
)
#: Feature names, in column order: the label-free ones, then the three learned from G_x.
FEATURES = _LABEL_FREE + ("prior", "nbr5_prior_max", "nbr5_prior_mean")

def _z(scores: np.ndarray) -> np.ndarray:
    """Row-wise z-scores (a constant row: 0)."""
    std = scores.std(axis=1, keepdims=True)
    return (scores - scores.mean(axis=1, keepdims=True)) / np.where(std > 0, std, 1.0)


#: Per catalog (keyed by its documents): its documents' nearest neighbours and embeddings, computed once per process.
_CATALOG: dict[int, tuple[np.ndarray, np.ndarray]] = {}
#: Catalog tools whose cosines to the whole catalog are held at once (memory linear in the catalog, not quadratic).
BLOCK = 256


def _catalog(problem: Problem, cache_dir, n_threads: int) -> tuple[np.ndarray, np.ndarray]:
    """(neighbours (A, max K): each tool's nearest other tools by document cosine, nearest first; the documents'
    MiniLM vectors (A, 384)). The cosines are taken ``BLOCK`` tools at a time: exact (grid vectors), never A x A."""
    key = hash((tuple(problem.tools), tuple(problem.docs)))
    if key not in _CATALOG:
        vecs = embed(problem.docs, cache_dir=cache_dir, n_threads=n_threads)
        k = min(max(NEIGHBOURS), len(problem.docs) - 1)
        near = [np.zeros((0, k), dtype=np.int64)]
        for start in range(0, len(vecs), BLOCK):
            cos = vecs[start:start + BLOCK] @ vecs.T
            cos[np.arange(len(cos)), np.arange(start, start + len(cos))] = -np.inf  # a tool is not its own neighbour
            near.append(np.argsort(-cos, axis=1, kind="stable")[:, :k])
        _CATALOG[key] = (np.concatenate(near), vecs)
    return _CATALOG[key]


def _co_retrieval(first: np.ndarray, vecs: np.ndarray) -> list[np.ndarray]:
    """Per depth m of :data:`CO_DEPTHS`: each tool's largest cosine to the task's first m tools (itself left out),
    (T, A) each; one task's first tools against the catalog at a time."""
    out = [np.empty(first.shape) for _ in CO_DEPTHS]
    for t, row in enumerate(first):
        top = row[:max(CO_DEPTHS)]
        cos = vecs[top] @ vecs.T
        cos[np.arange(len(top)), top] = -np.inf
        running = np.maximum.accumulate(cos, axis=0)
        for i, m in enumerate(CO_DEPTHS):
            out[i][t] = running[min(m, len(top)) - 1]
    return out


def _clause_features(problem: Problem, cache_dir, n_threads: int) -> list[np.ndarray]:
    """Per task, over its sentences: the best bm25 and MiniLM z-scores and the best log ranks (bm25, MiniLM,
    their fusion), five (T, A) arrays."""
    parts = [clauses(t) for t in problem.texts]
    flat = [c for cs in parts for c in cs]
    owner = np.repeat(np.arange(len(parts)), [len(cs) for cs in parts])
    vecs = embed(flat + problem.docs, cache_dir=cache_dir, n_threads=n_threads)
    bm25 = bm25_scores(flat, problem.docs)
    dense = (vecs[: len(flat)] @ vecs[len(flat):].T).clip(-1.0, 1.0)
    mask = problem.mask[owner]
    ranks = [rank_matrix(bm25, mask), rank_matrix(dense, mask)]
    ranks.append(rank_matrix(rrf(ranks, mask), mask))
    starts = np.r_[0, np.cumsum([len(cs) for cs in parts])[:-1]]
    best = [np.maximum.reduceat(_z(bm25), starts), np.maximum.reduceat(_z(dense), starts)]
    return best + [np.log(np.minimum.reduceat(r, starts).clip(min=1)) for r in ranks]


def _neighbour_stats(values: np.ndarray, neighbours: np.ndarray, k: int) -> list[np.ndarray]:
    """Max and mean of ``values`` (T, A) over each tool's ``k`` nearest neighbours (0 in a one-tool catalog)."""
    if neighbours.shape[1] == 0:
        return [np.zeros_like(values), np.zeros_like(values)]
    near = values[:, neighbours[:, :k]]
    return [near.max(axis=2), near.mean(axis=2)]


#: Label-free feature rows per catalog, keyed by (task text, its candidate mask): every feature of a task reads
#: that task's text and candidates and the catalog only, and the nested cross-fit scores subsets of the same tasks
#: six times, so each row is computed once per process.
_FREE: dict[int, dict[tuple[str, bytes], np.ndarray]] = {}


def label_free_features(problem: Problem, cache_dir=None, n_threads: int = DEFAULT_THREADS) -> np.ndarray:
    """The features that read no label, shape (T, A, len(_LABEL_FREE)), each distinct (text, candidates) row
    computed once per catalog and process."""
    rows = _FREE.setdefault(hash((tuple(problem.tools), tuple(problem.docs))), {})
    keys = [(t, m.tobytes()) for t, m in zip(problem.texts, problem.mask)]
    missing = list(dict.fromkeys(k for k in keys if k not in rows))
    if missing:
        part = Problem(task_ids=[t for t, _ in missing], texts=[t for t, _ in missing], tools=problem.tools,
                       docs=problem.docs, mask=np.stack([np.frombuffer(m, dtype=bool) for _, m in missing]),
                       membership=np.zeros((len(missing), len(problem.tools)), dtype=bool),
                       folds=np.zeros(len(missing), dtype=int))
        rows.update(zip(missing, _label_free(part, cache_dir, n_threads)))
    return np.stack([rows[k] for k in keys])


def _label_free(problem: Problem, cache_dir, n_threads: int) -> np.ndarray:
    """:func:`label_free_features` of every task of ``problem`` (no cache)."""
    pair = pair_features(problem, cache_dir=cache_dir, n_threads=n_threads)
    neighbours, vecs = _catalog(problem, cache_dir, n_threads)
    mask = problem.mask
    hybrid = rrf([np.rint(np.exp(pair[..., PAIR_FEATURES.index(f"{s}_log_rank")])) for s in ("bm25", "dense")], mask)
    hybrid_rank = rank_matrix(hybrid, mask)
    clause = _clause_features(problem, cache_dir, n_threads)
    fused_rank = rank_matrix(rrf([hybrid_rank, np.rint(np.exp(clause[-1]))], mask), mask)
    columns = [pair[..., i] for i in range(len(PAIR_FEATURES))]
    columns += [np.log(hybrid_rank.clip(min=1)), np.log(fused_rank.clip(min=1))] + clause
    for k in NEIGHBOURS:
        for s in ("bm25_z", "dense_z"):
            columns += _neighbour_stats(pair[..., PAIR_FEATURES.index(s)], neighbours, k)
    for best in clause[:2]:
        columns += _neighbour_stats(best, neighbours, NEIGHBOURS[0])
    first = np.argsort(fused_rank + np.where(mask, 0, len(problem.tools) + 1), axis=1, kind="stable")
    columns += _co_retrieval(first, vecs)
    return np.stack(columns, axis=-1)


def gold_rates(problem: Problem, train: np.ndarray, inner_folds: int = 5, random_state: int = 0
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each tool's rate in G_x among the training tasks offering it: (the rates each training task carries,
    shape (len(train), A), cross-fitted among the training tasks by their folds so that no task's own G_x is in
    its rates; the rates of a task scored by the fit, shape (A,), over every training task)."""
    y = problem.membership[train] & problem.mask[train]
    offered = problem.mask[train].sum(axis=0)
    rates = np.divide(y.sum(axis=0), offered, out=np.zeros(len(offered)), where=offered > 0)
    return prior_rates(problem.subset(train), inner_folds, random_state), rates


def _rate_columns(rates: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """The G_x rates (T, A) and their neighbours' largest and mean: the last three feature columns, (T, A, 3)."""
    return np.stack([rates] + _neighbour_stats(rates, neighbours, NEIGHBOURS[0]), axis=-1)


@learned
def score_rerank(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    pool: int = 100,
    trees: int = 300,
    leaves: int = 15,
    learning_rate: float = 0.05,
    inner_folds: int = 5,
    n_threads: int = DEFAULT_THREADS,
) -> np.ndarray:
    """Cross-fitted LightGBM re-ranker over the features above; shape (T, A), the model's raw scores.

    Parameters
    ----------
    pool : int
        The tools per task the model ranks and learns from: the first stage's (fusion of bm25, MiniLM and
        the best sentence) top ``pool``.
    trees, leaves, learning_rate : int, int, float
        LightGBM's boosting rounds, leaves per tree and shrinkage.
    inner_folds : int
        K of the inner cross-fit that scores training-only tasks (fold -1).
    n_threads : int
        Torch CPU threads of the dense encoder (only texts not in the cache are encoded); LightGBM runs on one.
    """
    import lightgbm as lgb

    free = label_free_features(problem, cache_dir=cache_dir, n_threads=n_threads)
    neighbours, _ = _catalog(problem, cache_dir, n_threads)
    fused_rank = np.rint(np.exp(free[..., _LABEL_FREE.index("fused_log_rank")]))
    y = problem.membership & problem.mask
    in_pool = problem.mask & (fused_rank <= pool)
    params = {"objective": "binary", "learning_rate": learning_rate, "num_leaves": leaves, "min_data_in_leaf": 20,
              "lambda_l2": 1.0, "num_threads": 1, "deterministic": True, "force_row_wise": True, "verbose": -1,
              "seed": random_state}
    out = np.zeros(problem.mask.shape, dtype=np.float64)
    for scored, train in crossfit_groups(problem.folds, inner_folds, random_state):
        if len(train) == 0 or not y[train].any():
            out[scored] = -fused_rank[scored]  # nothing to learn: the first stage's order
            continue
        train_rates, rates = gold_rates(problem, train, inner_folds, random_state)
        rows = in_pool[train]
        X = np.concatenate([free[train][rows], _rate_columns(train_rates, neighbours)[rows]], axis=1)
        booster = lgb.train(params, lgb.Dataset(X, y[train][rows].astype(np.float64)), num_boost_round=trees)
        sel = in_pool[scored]  # the model ranks each task's pool; _below_pool orders the rest
        Xs = np.concatenate([free[scored][sel], _rate_columns(rates[None, :], neighbours)[0][np.nonzero(sel)[1]]],
                            axis=1)
        block = np.zeros(sel.shape)
        block[sel] = booster.predict(Xs, raw_score=True) if len(Xs) else []
        out[scored] = block
    return _below_pool(out, fused_rank, in_pool, problem.mask, pool)


def _below_pool(scores: np.ndarray, first: np.ndarray, in_pool: np.ndarray, mask: np.ndarray, pool: int) -> np.ndarray:
    """The model's scores in each task's pool; below it, the first stage's order continues: the pool's lowest
    score minus (rank - pool) / rank, so the list stays one ranking with gaps that shrink down the list (a quotient,
    rounded the same on every machine, where a logarithm's last bit moves with the SIMD path)."""
    floor = np.where(in_pool, scores, np.inf).min(axis=1, keepdims=True)
    floor = np.where(np.isfinite(floor), floor, 0.0)
    rank = np.maximum(first, 1).astype(np.float64)
    below = floor - (rank - pool) / rank
    return np.where(mask, np.where(in_pool, scores, below), 0.0)
