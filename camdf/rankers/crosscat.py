"""crosscat: a learned ranker that transfers across catalogs: nothing it reads names a tool or a catalog's labels.

Every other learned ranker here reads the catalog's own labels (``supervised``'s per-tool models, ``rerank``'s
G_x rates), so on a catalog nobody labelled it has nothing to read. This one is fitted on *other* catalogs, on
features that any tool list has (a harness's tools: a name, a description, parameter names;
:class:`CatalogIndex`):

- bm25 of the query against the whole document (raw, z-scored within the query, share of the query's best,
  log rank), against the name words alone and the description alone (z);
- the cosine of character 3-5-gram TF-IDF vectors (``service`` meets ``services``, ``weatherapi`` meets
  ``weather``): raw, z, log rank; the log rank in the reciprocal-rank fusion of bm25 and that cosine (the
  first stage);
- each sentence of the query on its own (a query asking for two things): the best bm25 and cosine z-scores
  over its sentences and the best fused log rank;
- how much of the query the document holds (distinct query words found) and how much of the tool's name the
  query holds;
- the tool's 5 nearest catalog neighbours (by the TF-IDF cosine of the documents: the endpoints of one
  service): their largest and mean bm25 and cosine z-scores; the tool's largest cosine to the first stage's
  top 3 tools;
- the shape of the request: the catalog's size (log), the query's words and sentences.

A LightGBM binary model of ``1{tool in G_x}``, monotone in every lexical match (:data:`MONOTONE`), scores each
query's first-stage top :data:`POOL` (below the pool the first stage's order continues), and the ranking is the
reciprocal-rank fusion of its order with the first stage's, scored by the model's confidence (:func:`fused`).
Its features need numpy, scipy and bm25s, its fit LightGBM (the runtime evaluates the shipped trees with numpy).
Fitted on the other catalogs only (:mod:`camdf.rankers.loco`: the catalogs, the fit, the scorer), it is judged on
the one left out (``camdf data ranking``). Deterministic: LightGBM on one thread with ``deterministic``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from camdf.rankers.text import clauses, document, split_identifier

#: Tools per query the model ranks (the first stage's top POOL); below it the first stage's order continues.
POOL = 100
#: Catalog neighbours (by document cosine) whose scores are a tool's features.
NEIGHBOURS = 5
#: The largest share of a catalog's tools an n-gram may be in and still say who a tool's neighbours are.
NEIGHBOUR_DF = 0.05
#: First-stage depth whose largest cosine to a tool is a feature.
CO_DEPTH = 3
#: Reciprocal-rank fusion's constant.
RRF_K = 60
FEATURES = (
    "bm25_raw", "bm25_z", "bm25_share", "bm25_log_rank", "name_z", "desc_z",
    "char_cos", "char_z", "char_log_rank", "hybrid_log_rank",
    "clause_bm25_z", "clause_char_z", "clause_log_rank",
    "query_cover", "name_cover",
    "nbr_bm25_z_max", "nbr_bm25_z_mean", "nbr_char_z_max", "nbr_char_z_mean", "cos_top3",
    "log_catalog", "query_words", "clauses",
)
#: Features whose rise never lowers a tool's score (+1) or never raises it (-1) in the fitted model: a better lexical
#: match is never worth less, whatever catalog the model meets (fitted without them, a model learned on catalogs
#: of one or two gold tools ranked a long multi-turn query's later gold tools below bm25's order).
MONOTONE = {**dict.fromkeys(("bm25_raw", "bm25_z", "bm25_share", "name_z", "desc_z", "char_cos", "char_z",
                             "clause_bm25_z", "clause_char_z", "query_cover", "name_cover"), 1),
            **dict.fromkeys(("bm25_log_rank", "char_log_rank", "hybrid_log_rank", "clause_log_rank"), -1)}
#: LightGBM's settings of the fit (one thread, deterministic: the same booster on every machine).
PARAMS = {"objective": "binary", "learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 50, "lambda_l2": 1.0,
          "feature_fraction": 0.9, "monotone_constraints": [MONOTONE.get(f, 0) for f in FEATURES],
          "num_threads": 1, "deterministic": True, "force_row_wise": True, "verbose": -1, "seed": 0}
ROUNDS = 100


def _z(scores: np.ndarray) -> np.ndarray:
    """Row-wise z-scores (a constant row: 0)."""
    std = scores.std(axis=1, keepdims=True)
    return (scores - scores.mean(axis=1, keepdims=True)) / np.where(std > 0, std, 1.0)


def ranks(scores: np.ndarray) -> np.ndarray:
    """Row-wise ranks (1 = best; ties by column order), shape of ``scores``."""
    order = np.argsort(-scores, axis=1, kind="stable")
    out = np.empty(scores.shape, dtype=np.float64)
    np.put_along_axis(out, order, np.arange(1, scores.shape[1] + 1, dtype=np.float64)[None, :], axis=1)
    return out


def _rrf(*rank_arrays: np.ndarray) -> np.ndarray:
    return sum(1.0 / (RRF_K + r) for r in rank_arrays)


class _Field:
    """A bm25 index over one field of every tool, from its tokens (None when no document has a word)."""

    def __init__(self, tokens: list[list[str]]):
        from camdf.rankers.lexical import _bm25s

        self.size = len(tokens)
        self.retriever = None
        if any(map(any, tokens)):
            self.retriever = _bm25s().BM25(k1=1.5, b=0.75)
            self.retriever.index(tokens, show_progress=False)

    def scores(self, query_tokens: list[list[str]]) -> np.ndarray:
        if self.retriever is None:
            return np.zeros((len(query_tokens), self.size))
        return np.vstack([self.retriever.get_scores(q).astype(np.float64) if q else np.zeros(self.size)
                          for q in query_tokens])


@dataclass
class CatalogIndex:
    """What the ranker keeps of one tool list: built once (:meth:`build`), then :meth:`features` per query.

    Attributes
    ----------
    full, name, desc : _Field
        bm25 over each tool's whole document, its name words, its description.
    vectorizer : CharTfidf
        Character 3-5-gram TF-IDF fitted on the documents (:mod:`camdf.rankers.chargrams`).
    doc_vectors : scipy.sparse.csr_matrix, shape (A, V)
        The documents' L2-normalised TF-IDF rows; ``doc_columns`` the same transposed (V, A), kept so that a
        query's cosines are one sparse product with no conversion.
    doc_words : scipy.sparse.csr_matrix, shape (A, W)
        Which of the query vocabulary's words each document holds (1/0); ``name_words`` the same for names.
    vocab : dict
        Word -> column of ``doc_words``.
    neighbours : ndarray of int, shape (A, K)
        Each tool's nearest other tools by document cosine, nearest first.
    """

    full: _Field
    name: _Field
    desc: _Field
    vectorizer: object
    doc_vectors: object
    doc_columns: object
    doc_words: object
    name_words: object
    name_sizes: np.ndarray
    vocab: dict
    neighbours: np.ndarray

    @classmethod
    def build(cls, names: Sequence[str], descriptions: Sequence[str],
              parameters: Sequence[Sequence[str]]) -> "CatalogIndex":
        """Index a tool list from its names, descriptions and parameter names (length A each)."""
        import scipy.sparse as sp

        from camdf.rankers.chargrams import CharTfidf
        from camdf.rankers.lexical import tokenize
        from camdf.rankers.text import normalize

        docs = [document(n, d, tuple(p)) for n, d, p in zip(names, descriptions, parameters)]
        name_texts = [split_identifier(n) for n in names]
        vectorizer = CharTfidf()
        doc_vectors = vectorizer.fit_transform([normalize(d) for d in docs]).tocsr()
        doc_columns = doc_vectors.T.tocsr()
        doc_tokens, name_tokens = tokenize(docs), tokenize(name_texts)
        vocab: dict[str, int] = {}
        for words in doc_tokens:
            for w in words:
                vocab.setdefault(w, len(vocab))

        def binary(token_lists):
            rows = [sorted({vocab[w] for w in words if w in vocab}) for words in token_lists]
            indptr = np.r_[0, np.cumsum([len(r) for r in rows])]
            data = np.ones(indptr[-1])
            return sp.csr_matrix((data, np.concatenate(rows or [[]]).astype(np.int64), indptr),
                                 shape=(len(rows), max(len(vocab), 1)))

        name_words = binary(name_tokens)
        return cls(full=_Field(doc_tokens), name=_Field(name_tokens), desc=_Field(tokenize(list(descriptions))),
                   vectorizer=vectorizer, doc_vectors=doc_vectors, doc_columns=doc_columns,
                   doc_words=binary(doc_tokens),
                   name_words=name_words, name_sizes=np.asarray(name_words.sum(axis=1)).ravel(),
                   vocab=vocab, neighbours=_neighbours(doc_vectors))

    @property
    def size(self) -> int:
        return self.doc_vectors.shape[0]

    def features(self, queries: Sequence[str], pool: int = POOL
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The features of each query's first-stage top ``pool`` tools.

        Returns
        -------
        features : ndarray, shape (Q, P, len(FEATURES))
        columns : ndarray of int, shape (Q, P)
            The tools (catalog columns) of each query's pool, first stage's order.
        first_rank : ndarray, shape (Q, A)
            Every tool's first-stage rank (1 = best), for the order below the pool.
        bm25 : ndarray, shape (Q, A)
            bm25 of each query against every tool's document (the runtime's ranker before this one).
        """
        from camdf.rankers.lexical import tokenize
        from camdf.rankers.text import normalize

        queries = list(queries)
        n_tools, q = self.size, len(queries)
        p = min(pool, n_tools)
        # The queries and their sentences are tokenised, scored and ranked together (one call each): every row is
        # what it would be alone.
        parts = [clauses(x) for x in queries]
        flat = [c for cs in parts for c in cs]
        starts = np.r_[0, np.cumsum([len(cs) for cs in parts])[:-1]]
        every = tokenize(queries + flat)
        tokens = every[:q]
        both = self.full.scores(every)
        texts = self.vectorizer.transform([normalize(x) for x in queries + flat])
        cosines = (texts @ self.doc_columns).toarray()
        rank_all = ranks(np.vstack([both, cosines]))
        bm25, c_bm25, char, c_char = both[:q], both[q:], cosines[:q], cosines[q:]
        bm25_rank, c_bm25_rank = rank_all[:q], rank_all[q:len(both)]
        char_rank, c_char_rank = rank_all[len(both):len(both) + q], rank_all[len(both) + q:]
        bm25_z, char_z = _z(bm25), _z(char)
        name_z, desc_z = _z(self.name.scores(tokens)), _z(self.desc.scores(tokens))
        fusion = ranks(np.vstack([_rrf(bm25_rank, char_rank), _rrf(c_bm25_rank, c_char_rank)]))
        first_rank = fusion[:q]
        # Sentences: the best per query.
        clause_bm25_z = np.maximum.reduceat(_z(c_bm25), starts)
        clause_char_z = np.maximum.reduceat(_z(c_char), starts)
        clause_rank = np.minimum.reduceat(fusion[q:], starts)
        # Word coverage, over the catalog's vocabulary.
        q_sets = [sorted({self.vocab[w] for w in words if w in self.vocab}) for words in tokens]
        q_bin = np.zeros((q, self.doc_words.shape[1]))
        for i, cols in enumerate(q_sets):
            q_bin[i, cols] = 1.0
        q_len = np.array([max(len(set(words)), 1) for words in tokens], dtype=np.float64)
        query_cover = np.asarray(self.doc_words @ q_bin.T).T / q_len[:, None]
        name_cover = np.asarray(self.name_words @ q_bin.T).T / np.maximum(self.name_sizes, 1)[None, :]
        # The first stage's top tools, their neighbours' scores and their cosines to the top few.
        columns = np.empty(first_rank.shape, dtype=np.int64)  # ranks are 1..A in each row: the order is their inverse
        np.put_along_axis(columns, first_rank.astype(np.int64) - 1, np.arange(n_tools)[None, :], axis=1)
        columns = columns[:, :p]
        nb = self.neighbours[columns]  # (Q, P, K)
        rows = np.arange(q)[:, None, None]
        nbr = [f(x[rows, nb], axis=2) if nb.shape[2] else np.zeros(columns.shape)
               for x in (bm25_z, char_z) for f in (np.max, np.mean)]
        cos_top = _co_retrieval(self.doc_vectors, CO_DEPTH, columns)
        shape = [np.full(columns.shape, np.log(n_tools)),
                 np.repeat(np.log1p(q_len)[:, None], p, axis=1),
                 np.repeat(np.array([len(cs) for cs in parts], dtype=np.float64)[:, None], p, axis=1)]

        def take(x):
            return np.take_along_axis(x, columns, axis=1)

        full = [bm25, bm25_z, bm25 / np.where(bm25.max(axis=1, keepdims=True) > 0, bm25.max(axis=1, keepdims=True), 1),
                np.log(bm25_rank), name_z, desc_z, char, char_z, np.log(char_rank), np.log(first_rank),
                clause_bm25_z, clause_char_z, np.log(clause_rank), query_cover, name_cover]
        feats = np.stack([take(x) for x in full] + nbr + [cos_top] + shape, axis=-1)
        return feats, columns, first_rank, bm25


def _neighbours(doc_vectors, block: int = 512) -> np.ndarray:
    """Each document's :data:`NEIGHBOURS` nearest others, nearest first (ties by column), by the cosine of its
    TF-IDF row cut to the n-grams in at most :data:`NEIGHBOUR_DF` of the documents (and at least 20; rows
    normalised again): the n-grams nearly every tool has say little about which tools are alike and make the
    product dense, so a catalog of 2,000 tools finds its neighbours in a fraction of a second. ``block`` rows of
    the cosine matrix at a time (memory linear in the catalog)."""
    import scipy.sparse as sp

    n = doc_vectors.shape[0]
    k = min(NEIGHBOURS, n - 1)
    if k <= 0:
        return np.zeros((n, 0), dtype=np.int64)
    df = np.bincount(doc_vectors.indices, minlength=doc_vectors.shape[1])
    rare = doc_vectors @ sp.diags((df <= max(NEIGHBOUR_DF * n, 20)).astype(np.float64))
    norms = np.sqrt(np.asarray(rare.multiply(rare).sum(axis=1)).ravel())
    rare = (sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ rare).tocsr()
    columns = rare.T.tocsr()
    out = []
    for start in range(0, n, block):
        cos = (rare[start:start + block] @ columns).toarray()
        rows = np.arange(len(cos))
        cos[rows, rows + start] = -np.inf
        top = np.sort(np.argpartition(-cos, k - 1, axis=1)[:, :k], axis=1)
        order = np.argsort(-np.take_along_axis(cos, top, axis=1), axis=1, kind="stable")
        out.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(out)


def _co_retrieval(doc_vectors, depth: int, columns: np.ndarray) -> np.ndarray:
    """Each pooled tool's largest cosine to its query's first ``depth`` pooled tools (itself left out), shape of
    ``columns``."""
    out = np.empty(columns.shape)
    d = min(depth, columns.shape[1])
    for i in range(len(columns)):
        pool = doc_vectors[columns[i]]
        cos = (pool @ pool[:d].T).toarray()
        cos[np.arange(d), np.arange(d)] = -np.inf
        out[i] = cos.max(axis=1) if d else 0.0
    return np.where(np.isfinite(out), out, 0.0)


def pooled_scores(raw: np.ndarray, columns: np.ndarray, first_rank: np.ndarray,
                  offered: np.ndarray | None = None) -> np.ndarray:
    """One ranking per query over the whole catalog, shape (Q, A): the model's ``raw`` scores (Q, P) on the
    pool's ``columns``, below them the first stage's order (each below-pool tool under the pool's lowest score by
    ``(rank - P) / rank``: gaps that shrink down the list). ``offered`` (Q, P), when given, marks the pool
    entries the query was offered; the rest, and every tool whose first-stage rank is past the catalog (never
    offered), score ``-inf``."""
    p, a = columns.shape[1], first_rank.shape[1]
    ok = np.ones(raw.shape, dtype=bool) if offered is None else offered
    floor = np.where(ok, raw, np.inf).min(axis=1, keepdims=True) if p else np.zeros((len(raw), 1))
    floor = np.where(np.isfinite(floor), floor, 0.0)
    out = floor - (first_rank - p) / first_rank
    np.put_along_axis(out, columns, np.where(ok, raw, -np.inf), axis=1)
    return np.where(first_rank > a, -np.inf, out)


def fused(model: np.ndarray, first_rank: np.ndarray) -> np.ndarray:
    """Scores (Q, A) in the order of the reciprocal-rank fusion of the model's ranking (``model``: pooled raw
    scores, :func:`pooled_scores`) with the first stage's, each the model's probability of the tool being needed
    capped by every tool ranked above it (a running minimum down the fused order, less 1e-12 a place, so the
    scores fall strictly and a stopper reading them sees where the model's confidence drops, not the fusion's
    smooth reciprocal ranks); tools never offered (``model`` -inf): ``-inf``."""
    order = np.argsort(-np.where(np.isfinite(model), _rrf(ranks(model), first_rank), -np.inf), axis=1, kind="stable")
    with np.errstate(over="ignore"):
        prob = 1.0 / (1.0 + np.exp(-np.take_along_axis(model, order, axis=1)))
    capped = np.minimum.accumulate(prob, axis=1) - 1e-12 * np.arange(model.shape[1])[None, :]
    out = np.empty_like(capped)
    np.put_along_axis(out, order, capped, axis=1)
    return np.where(np.isfinite(model), out, -np.inf)


def rank_query(index: CatalogIndex, predict_raw, query: str, pool: int = POOL) -> np.ndarray:
    """One query's scores over every tool of ``index`` (shape (A,)), as :func:`camdf.rankers.loco.score` ranks
    a catalog's queries.
    ``predict_raw`` maps features (n, len(FEATURES)) to the model's raw scores (a booster's
    ``predict(X, raw_score=True)``, or the runtime's numpy forest: :class:`camdf.policies.trees.Forest`)."""
    feats, columns, first_rank, _ = index.features([query], pool=pool)
    raw = np.asarray(predict_raw(feats.reshape(-1, feats.shape[-1]))).reshape(columns.shape)
    return fused(pooled_scores(raw, columns, first_rank), first_rank)[0]
