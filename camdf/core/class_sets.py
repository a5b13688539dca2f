"""A multinomial over the training tasks' sufficient-set classes, and the tool set of highest expected payoff under it.

The plug-in set (:func:`camdf.core.sets.plugin_set`) models each tool's need on its own; the
static set (:class:`camdf.core.set_baselines.StaticSet`) exposes the one subset of highest mean
training payoff to every task. :class:`ClassSetModel` is between the two and contains the second:

- a task's *class* is what decides every set's value on it: its sufficient sets (G_x and its
  alternatives) as tool ids under the exact payoff, its G_x under the partial one (:func:`task_classes`);
- ``P(class | x)`` is a multinomial logistic regression (L2 penalty ``1 / (2C)`` on the weights,
  intercepts free) on the task's vocabulary score vector (each known tool's score, 0 when not
  listed: :func:`camdf.core.vector_calibration.vocab_matrix`), standardised on the training tasks;
- the decision is the subset S of the vocabulary maximising
  ``sum_c P(c | x) v_c(S & listed) - lam * C_x(S & listed)``, every subset enumerated
  (:func:`camdf.core.set_baselines._subsets`: ties go to the smaller set), so whole sets that are
  needed together are exposed together and an alternative counts as success.

As C -> 0 the weights vanish, ``P(c | x)`` becomes the training frequency of c and the decision is
the static set's (the subset of highest mean training payoff); a larger C lets the task's scores move
the decision. The model is for vocabularies of at most :data:`MAX_EXACT` tools, whose subsets it
enumerates (:class:`camdf.policies.class_set.ClassSet` exposes the static set above that: the model's
no-score limit, found by the static set's own search).

Determinism: the fit (scipy's L-BFGS-B on the exact gradient) runs under the BLAS kernel the stages
pin; probabilities are rounded to :data:`camdf.core.membership.PROBA_DECIMALS` and expected payoffs
to 10 decimals before any argmax, so the last bits of a solver never pick a set.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from camdf.core.membership import round_proba
from camdf.core.score_calibration import score_feature
from camdf.core.set_baselines import _subsets
from camdf.core.vector_calibration import vocab_matrix

__all__ = ["ClassSetModel", "MAX_EXACT", "class_sets", "task_classes"]

#: The largest vocabulary whose subsets are enumerated (and whose score vector the model reads); as StaticSet's.
MAX_EXACT = 12


def task_classes(tool_ids: np.ndarray, sets: np.ndarray, present: np.ndarray) -> list[tuple]:
    """Each task's class ``(has_gx, gx, alternatives)``: G_x's tool ids (sorted; ``has_gx`` False when G_x is not
    present, e.g. a tool of it is off the list) and the other present sufficient sets, sorted (a set naming a tool
    without an id, -1, is left out: no vocabulary subset can hold it). An empty present set is always satisfied."""
    ids = np.asarray(tool_ids)
    out = []
    for i in range(len(ids)):
        known = []
        for k in np.flatnonzero(present[i]):
            members = ids[i][sets[i, k]]
            known.append(tuple(sorted(int(t) for t in members)) if (members >= 0).all() else None)
        has_gx = bool(present[i, 0]) and bool(known) and known[0] is not None
        gx = known[0] if has_gx else ()
        alternatives = tuple(sorted({s for s in known[1 if present[i, 0] else 0:] if s is not None} - {gx}))
        out.append((has_gx, gx, alternatives))
    return out


def class_sets(cls: tuple) -> list[tuple[int, ...]]:
    """The sufficient sets of a class (:func:`task_classes`), G_x first."""
    has_gx, gx, alternatives = cls
    return ([gx] if has_gx else []) + list(alternatives)


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    return P / P.sum(axis=1, keepdims=True)


def fit_softmax(X: np.ndarray, y: np.ndarray, K: int, C: float) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression: minimises ``-sum log P(y_i | x_i) + ||W||^2 / (2C)`` (intercepts free).

    Started from zero weights and the log class frequencies (so a fit that stops early stays near the
    frequencies); returns ``W`` (d, K) and ``b`` (K,).
    """
    n, d = X.shape
    Y = np.zeros((n, K))
    Y[np.arange(n), y] = 1.0
    counts = Y.sum(axis=0)

    def objective(theta):
        W, b = theta[:d * K].reshape(d, K), theta[d * K:]
        P = _softmax(X @ W + b)
        loss = -float((Y * np.log(np.maximum(P, 1e-300))).sum()) + float((W ** 2).sum()) / (2.0 * C)
        G = P - Y
        return loss, np.concatenate([(X.T @ G + W / C).ravel(), G.sum(axis=0)])

    theta0 = np.concatenate([np.zeros(d * K), np.log(np.maximum(counts, 1e-3) / n)])
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-8})
    return res.x[:d * K].reshape(d, K), res.x[d * K:]


class ClassSetModel:
    """The class multinomial and its expected-payoff decision (module docstring).

    Parameters
    ----------
    C : float
        Inverse L2 strength on the score weights.
    feature : {"normalised", "raw"}
        The score feature of the vocabulary vector (:func:`camdf.core.score_calibration.score_feature`).

    Attributes
    ----------
    classes_ : list of tuple
        The training classes, each its first task's :func:`task_classes` key, sorted by what tells classes apart:
        the family of sufficient sets under the exact payoff, G_x under the partial one.
    vocab_size_ : int
    value_ : ndarray, shape (K, 2^V)
        Each class's value of each enumerated subset.
    """

    def __init__(self, C: float = 1.0, feature: str = "normalised"):
        self.C = C
        self.feature = feature

    def _vectors(self, scores, tool_ids, valid):
        z = score_feature(scores, valid, self.feature, self.centre_, self.spread_)
        return (vocab_matrix(z, tool_ids, valid, self.vocab_size_) - self.mean_) / self.scale_

    def fit(self, scores: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray, classes: list, n_vocab: int,
            kind: str = "exact") -> "ClassSetModel":
        """Fit on training tasks: ``scores`` (T, N), their classes (:func:`task_classes`), the vocabulary's size."""
        valid = np.asarray(valid, dtype=bool)
        if not 0 <= int(n_vocab) <= MAX_EXACT:
            raise ValueError(f"n_vocab: ClassSetModel enumerates the subsets of at most {MAX_EXACT} tools, got {n_vocab}")
        self.vocab_size_ = int(n_vocab)
        self.kind_ = "partial" if kind == "partial" else "exact"
        # What tells two tasks' classes apart: the family of sufficient sets (exact payoff) or G_x (partial); each
        # class keeps its first task's (has_gx, gx, alternatives) as its representative.
        reduced = [self._reduce(c) for c in classes]
        first = {}
        for r, c in zip(reduced, classes):
            first.setdefault(r, c)
        order = sorted(first)
        self.classes_ = [first[r] for r in order]
        index = {r: k for k, r in enumerate(order)}
        y = np.array([index[r] for r in reduced], dtype=np.int64)
        raw = np.nan_to_num(np.asarray(scores, dtype=float))[valid]
        self.centre_ = float(raw.mean()) if len(raw) else 0.0
        self.spread_ = float(raw.std()) if len(raw) and raw.std() > 0 else 1.0
        self.mean_, self.scale_ = 0.0, 1.0
        X = self._vectors(scores, tool_ids, valid)
        self.mean_ = X.mean(axis=0)
        self.scale_ = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        X = (X - self.mean_) / self.scale_
        self.coef_, self.intercept_ = fit_softmax(X, y, len(self.classes_), float(self.C))
        self.subsets_ = _subsets(self.vocab_size_)
        codes = self.subsets_ @ (1 << np.arange(self.vocab_size_, dtype=np.int64))
        self.value_ = np.array([self._class_value(c, codes) for c in self.classes_]).reshape(len(self.classes_), -1)
        return self

    def _reduce(self, cls: tuple) -> tuple:
        if self.kind_ == "partial":
            return cls[:2]
        return tuple(sorted(set(class_sets(cls))))

    def _class_value(self, cls: tuple, codes: np.ndarray) -> np.ndarray:
        """v_c(S) for every enumerated subset code S: exact, some sufficient set of c inside S (none present: 0);
        partial, the share of c's G_x inside S (an empty G_x: 1; G_x not present: 0)."""
        if self.kind_ == "partial":
            has_gx, gx, _ = cls
            if not has_gx:
                return np.zeros(len(codes))
            if not gx:
                return np.ones(len(codes))
            return sum(((codes >> t) & 1) for t in gx) / len(gx)
        value = np.zeros(len(codes), dtype=bool)
        for s in class_sets(cls):
            m = sum(1 << t for t in s)
            value |= (codes & m) == m
        return value.astype(float)

    def probabilities(self, scores: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """``P(class | x)``, (T, K), rounded."""
        X = self._vectors(scores, tool_ids, np.asarray(valid, dtype=bool))
        return round_proba(_softmax(X @ self.coef_ + self.intercept_))

    def select(self, scores: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray, costs: np.ndarray,
               lam: float) -> np.ndarray:
        """The exposed mask (T, N) of every task."""
        valid = np.asarray(valid, dtype=bool)
        ids = np.where(valid, np.asarray(tool_ids), -1)
        P = self.probabilities(scores, ids, valid)
        V, T = self.vocab_size_, len(ids)
        known = (ids >= 0) & (ids < V)
        rows = np.broadcast_to(np.arange(T)[:, None], ids.shape)
        tool_cost = np.zeros((T, V))
        np.add.at(tool_cost, (rows[known], ids[known]), np.asarray(costs, dtype=float)[known])
        listed = np.zeros((T, V), dtype=bool)
        listed[rows[known], ids[known]] = True
        mask = np.zeros(ids.shape, dtype=bool)
        subsets = self.subsets_
        codes = subsets @ (1 << np.arange(V, dtype=np.int64))
        position = np.empty(1 << V, dtype=np.int64)
        position[codes] = np.arange(len(codes))
        for i in range(T):
            held = subsets & listed[i]                          # what each subset exposes of task i's list
            at = position[held @ (1 << np.arange(V, dtype=np.int64))]
            value = P[i] @ self.value_[:, at] - lam * (held @ tool_cost[i])
            best = held[int(np.argmax(np.round(value, 10)))]
            mask[i] = known[i] & best[np.where(known[i], ids[i], 0)]
        return mask
