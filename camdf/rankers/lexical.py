"""bm25: Okapi BM25 (bm25s) of the task text against each tool's document.

The index holds the domain's acquirable tools (name words, description,
parameter names; see :func:`~camdf.rankers.text.tool_document`), so IDF is taken
over the whole catalog, also in domains where a task sees only part of it.
Tokens: lower-cased words of two or more characters, English stop words
removed, plurals conflated (:func:`~camdf.rankers.text.s_stem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from camdf.rankers.text import normalize, stem_words

if TYPE_CHECKING:  # the run-time stopper's bm25 imports this module without pandas or the folds
    from camdf.rankers.problem import Problem


#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"bm25": "score_bm25"}


def _bm25s():
    """bm25s, imported on first use; it sets its logger to DEBUG on import, which puts a line
    per index into every stage's log, so its level is put back to WARNING."""
    import logging

    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def tokenize(texts: list[str]) -> list[list[str]]:
    """The bm25 ranker's tokens of each text (normalised, English stopwords out, stemmed): what it indexes and
    queries with, so a caller can tell a text that gives the ranker nothing to match (the runtime's requests)."""
    bm25s = _bm25s()

    return bm25s.tokenize(
        [normalize(t) for t in texts], stopwords="en", stemmer=stem_words, return_ids=False, show_progress=False
    )


def bm25_scores(queries: list[str], docs: list[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """BM25 score of every query against every document.

    Parameters
    ----------
    queries : list of str, length Q
    docs : list of str, length A
    k1, b : float
        BM25's term-frequency saturation and length normalisation.

    Returns
    -------
    ndarray of float64, shape (Q, A)
        Each distinct query is scored once.
    """
    bm25s = _bm25s()

    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(tokenize(docs), show_progress=False)
    distinct = list(dict.fromkeys(queries))
    tokens = tokenize(distinct)
    table = np.vstack([retriever.get_scores(q) if q else np.zeros(len(docs)) for q in tokens]).astype(np.float64)
    row = {q: i for i, q in enumerate(distinct)}
    return table[[row[q] for q in queries]]


def score_bm25(problem: Problem, *, cache_dir=None, random_state: int = 0, k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """BM25 scores, shape (T, A) (deterministic: ``cache_dir`` and ``random_state`` are unused)."""
    return bm25_scores(problem.texts, problem.docs, k1=k1, b=b)
