"""supervised and prior: the two scorers that learn from G_x, both cross-fitted.

Every task is scored by a model fitted only on other tasks
(:func:`~camdf.rankers.problem.crossfit_groups`), so changing a task's G_x never
changes that task's scores. Both are :func:`~camdf.rankers.problem.learned`, so
:func:`camdf.rankers.score_domain` scores them by the nested cross-fit.

- ``supervised``: one logistic regression per tool on TF-IDF features of the
  task text, estimating P(tool in G_x | text).  Tool j's model is fitted on the
  training tasks that have j among their candidates; the TF-IDF vocabulary is
  fitted on the training texts only.  A tool whose training labels are all equal
  (or absent) gets the smoothed rate (positives + 1/2) / (n + 1) as its score.
- ``prior``: the training-fold rate at which each tool is in G_x among the
  training tasks offering it (0 when none does); ties broken by bm25.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.rankers.problem import Problem, crossfit_groups, learned
from camdf.rankers.lexical import score_bm25


#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"supervised": "score_supervised", "prior": "score_prior"}


def _smoothed_rate(y: np.ndarray) -> float:
    return (y.sum() + 0.5) / (len(y) + 1.0)


@learned
def score_supervised(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    C: float = 1.0,
    ngram_max: int = 2,
    min_df: int = 1,
    inner_folds: int = 5,
) -> np.ndarray:
    """Cross-fitted per-tool logistic regression on TF-IDF; shape (T, A), values in (0, 1).

    Parameters
    ----------
    C : float
        Inverse L2 regularisation strength of each logistic regression.
    ngram_max : int
        TF-IDF uses word n-grams of length 1..ngram_max.
    min_df : int
        Minimum number of distinct training texts a term must occur in.
    inner_folds : int
        K of the inner cross-fit that scores training-only tasks (fold -1).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    # Tasks often share a text (telecom: 2,285 tasks, 5 texts): fit on distinct (text, label)
    # pairs weighted by their counts, the same loss as one row per task at a fraction of the cost.
    codes, distinct = pd.factorize(pd.Series(problem.texts, dtype=object))
    distinct = np.asarray(distinct, dtype=object)
    y_all = problem.membership
    out = np.zeros(problem.mask.shape, dtype=np.float64)
    for scored, train in crossfit_groups(problem.folds, inner_folds, random_state):
        if len(train) == 0:
            out[scored] = 0.5  # nothing to learn from: every tool equally likely
            continue
        train_texts = np.unique(codes[train])
        vec = TfidfVectorizer(ngram_range=(1, ngram_max), min_df=min_df, sublinear_tf=True)
        try:
            # min_df counts distinct texts here, not tasks.
            x_train = vec.fit_transform(distinct[train_texts])
        except ValueError:  # empty vocabulary (e.g. only stop words): no text signal
            x_train = None
        scored_texts, scored_inv = np.unique(codes[scored], return_inverse=True)
        x_scored = None if x_train is None else vec.transform(distinct[scored_texts])
        for j in range(len(problem.tools)):
            rows = train[problem.mask[train, j]]
            y = y_all[rows, j]
            if x_train is None or len(rows) == 0 or y.min() == y.max():
                out[scored, j] = _smoothed_rate(y)
                continue
            pairs, weight = np.unique(np.c_[codes[rows], y], axis=0, return_counts=True)
            clf = LogisticRegression(C=C, solver="liblinear", random_state=random_state)
            clf.fit(x_train[np.searchsorted(train_texts, pairs[:, 0])], pairs[:, 1], sample_weight=weight)
            out[scored, j] = clf.predict_proba(x_scored)[:, 1][scored_inv]
    return out


def prior_rates(problem: Problem, inner_folds: int = 5, random_state: int = 0) -> np.ndarray:
    """Cross-fitted training-fold rate of each tool in G_x among the tasks offering it, shape (T, A)."""
    out = np.zeros(problem.mask.shape, dtype=np.float64)
    for scored, train in crossfit_groups(problem.folds, inner_folds, random_state):
        offered = problem.mask[train].sum(axis=0)
        chosen = (problem.membership[train] & problem.mask[train]).sum(axis=0)
        out[scored] = np.divide(chosen, offered, out=np.zeros(len(offered)), where=offered > 0)
    return out


@learned
def score_prior(
    problem: Problem, *, cache_dir=None, random_state: int = 0, inner_folds: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """Training-fold rates (T, A) and the bm25 scores that break their ties."""
    return prior_rates(problem, inner_folds, random_state), score_bm25(problem)
