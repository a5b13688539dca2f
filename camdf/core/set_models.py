"""Correlation-aware set models: a distribution over the G_x sets seen in training, and the set it makes best.

The plug-in set (:func:`camdf.core.sets.plugin_set`) treats the tools' memberships as
independent. The models here put the probability on whole sets instead, so tools that are
needed together are exposed together:

- :class:`SeenSets`, a multinomial over the distinct G_x of the training tasks (by tool
  identity) whose log-odds are the calibrated per-tool log-odds summed over the set:
  ``P(S | x) propto prod_{t in S} p_t / (1 - p_t)`` over the seen sets S whose tools are all
  listed. It is the independent model conditioned on G_x being one of the seen sets: a set
  never seen gets no mass, a combination seen often keeps the mass its tools' scores give it.
- :class:`NeighbourSets`, the G_x of the k training tasks nearest in their vocabulary score
  vectors (each tool's within-task normalised score, 0 when not listed), each with weight 1/k.

Both give, per task, weights w_k on candidate sets S_k (ranked positions). The decision
(:func:`task_union_set`) maximises ``q * sum_k w_k 1{S_k inside A} - lam * C(A)`` (exact
payoff) greedily over unions of the sets: from the empty set, add the set whose union gains
most, while the gain is positive. It is exact when the sets are disjoint or nested chains of
one set, and a heuristic otherwise (the optimum over unions is a weighted set-union problem,
NP-hard in general). Partial payoff: ``q * sum_k w_k |S_k & A| / |S_k| - lam * C(A)`` is
modular, so ``A = {j : q * sum_k w_k 1{j in S_k} / |S_k| > lam * c_j}``.

The batch path and the one-task run-time path run the same per-task functions, so they give
the same sets. Per task, the weights are numpy over the training side (the seen sets as one
padded id array, the training tasks' vocabulary vectors as one matrix; sums in a fixed
order, no BLAS, so the same on any machine) and the decision is plain Python: cost per task
O(S L) for S seen sets of at most L tools, O(T n) for T training tasks and n listed tools,
and O(K^2 n) for the K candidate sets decided on (at most :data:`MAX_SETS` with weight above
:data:`MIN_WEIGHT`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: Candidate sets of a task with weight below this are dropped before the decision.
MIN_WEIGHT = 1e-3
#: At most this many candidate sets per task (the heaviest) enter the decision.
MAX_SETS = 16


def seen_sets(tool_ids: np.ndarray, member: np.ndarray, valid: np.ndarray) -> list[tuple[int, ...]]:
    """The distinct G_x (sorted tool-id tuples) of the tasks whose G_x tools all have ids, in first-seen order."""
    out: dict[tuple[int, ...], None] = {}
    for ids, m, v in zip(np.asarray(tool_ids), np.asarray(member, dtype=bool), np.asarray(valid, dtype=bool)):
        s = ids[m & v]
        if (s >= 0).all():
            out.setdefault(tuple(sorted(int(t) for t in s)), None)
    return list(out)


def _positions(ids: Sequence[int]) -> dict[int, int]:
    """Tool id -> ranked position (the first, should an id repeat); unseen ids (-1) are left out."""
    out: dict[int, int] = {}
    for j, t in enumerate(ids):
        if t >= 0 and t not in out:
            out[int(t)] = j
    return out


def _kept(share: np.ndarray) -> np.ndarray:
    """Indices of the candidate sets worth deciding on: weight above MIN_WEIGHT, the MAX_SETS heaviest (heaviest
    first, ties in their order) when there are more."""
    keep = np.flatnonzero(share > MIN_WEIGHT)
    if keep.size > MAX_SETS:
        keep = keep[np.argsort(-share[keep], kind="stable")[:MAX_SETS]]
    return keep


def _top(weights: list[tuple[float, list[int]]]) -> list[tuple[float, list[int]]]:
    """The ``(weight, positions)`` pairs :func:`_kept` keeps, in its order."""
    return [weights[i] for i in _kept(np.array([w for w, _ in weights], dtype=float)).tolist()]


def support_array(support: Sequence[Sequence[int]]) -> np.ndarray:
    """The seen sets as one (S, L) int array of tool ids, each row padded with -1 (L the largest set; at least 1)."""
    width = max([len(s) for s in support] + [1])
    out = np.full((len(support), width), -1, dtype=np.int64)
    for i, s in enumerate(support):
        out[i, :len(s)] = s
    return out


def seen_set_weights(support: list[tuple[int, ...]], p: Sequence[float], ids: Sequence[int],
                     padded: np.ndarray | None = None) -> list[tuple[float, list[int]]]:
    """:class:`SeenSets`' weights for one task: ``(w_k, positions of S_k)`` over the seen sets all listed.

    ``log w_k = sum_{t in S_k} logit(p_t)`` normalised over those sets (p clipped to [1e-6, 1 - 1e-6]);
    the sum runs over each set's tools in ascending id order. ``padded``: :func:`support_array` of
    ``support`` (computed here when not given).
    """
    pos = _positions(ids)
    if not support or not pos:
        return []
    if padded is None:
        padded = support_array(support)
    top_id = max(int(padded.max()), max(pos))
    logit = np.full(top_id + 2, np.nan)  # the last entry (index -1, the padding) adds 0.0
    logit[-1] = 0.0
    for t, j in pos.items():
        x = min(max(float(p[j]), 1e-6), 1.0 - 1e-6)
        logit[t] = math.log(x) - math.log1p(-x)
    table = logit[padded]
    listed = np.flatnonzero(~np.isnan(table).any(axis=1))
    if listed.size == 0:
        return []
    table = table[listed]
    total = table[:, 0].copy()
    for col in range(1, table.shape[1]):  # left to right, as a plain sum over the set would
        total += table[:, col]
    values = total.tolist()
    top = max(values)
    w = [math.exp(v - top) for v in values]
    norm = sum(w)
    share = np.array(w) / norm  # IEEE division: the same numbers as x / norm one at a time
    keep = _kept(share)  # positions only for the sets decided on
    return [(float(share[i]), [pos[t] for t in support[listed[i]]]) for i in keep.tolist()]


def task_union_set(weights: list[tuple[float, list[int]]], costs: Sequence[float], lam: float, kind: str = "exact",
                   coverage: float = 1.0) -> list[int]:
    """The exposed ranked positions (ascending) for one task's weighted candidate sets (module docstring).

    Sets are bit masks over the positions, so a union and a containment test are one integer operation.
    """
    if kind == "partial":
        gain = [0.0] * len(costs)
        for w, s in weights:
            for j in s:
                gain[j] += w / len(s)
        return [j for j, c in enumerate(costs) if coverage * gain[j] > lam * float(c)]
    bits = [sum(1 << j for j in set(s)) for _, s in weights]
    w = [x for x, _ in weights]
    chosen, cost = 0, 0.0
    value = coverage * sum(x for x, b in zip(w, bits) if not b)  # an empty set is always covered
    while True:
        best, best_bits, best_cost = value, -1, 0.0
        for b in bits:
            if b & ~chosen == 0:
                continue
            union = chosen | b
            new = b & ~chosen
            extra = sum(float(costs[j]) for j in range(new.bit_length()) if new >> j & 1)
            v = coverage * sum(x for x, b2 in zip(w, bits) if b2 & ~union == 0) - lam * (cost + extra)
            if v > best + 1e-12:
                best, best_bits, best_cost = v, union, cost + extra
        if best_bits < 0:
            break
        chosen, cost, value = best_bits, best_cost, best
    return [j for j in range(chosen.bit_length()) if chosen >> j & 1]


def union_masks(weights: list[list[tuple[float, list[int]]]], costs: np.ndarray, valid: np.ndarray, lam: float,
                kind: str = "exact", coverage: float = 1.0) -> np.ndarray:
    """:func:`task_union_set` for every task: the (T, N) bool masks (padding never exposed)."""
    mask = np.zeros(np.shape(valid), dtype=bool)
    for i, w in enumerate(weights):
        n = int(np.asarray(valid[i]).sum())
        mask[i, task_union_set(w, [float(c) for c in costs[i, :n]], lam, kind, coverage)] = True
    return mask & valid


class SeenSets:
    """The multinomial over seen G_x sets (module docstring); the per-tool probabilities come from the caller.

    Attributes
    ----------
    support_ : list of tuple of int
        The distinct training G_x, as sorted tool ids.
    padded_ : ndarray of shape (S, L)
        ``support_`` as one padded id array (:func:`support_array`).
    """

    def fit(self, tool_ids: np.ndarray, member: np.ndarray, valid: np.ndarray) -> "SeenSets":
        self.support_ = seen_sets(tool_ids, member, valid)
        self.padded_ = support_array(self.support_)
        return self

    def weights(self, p: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> list[list[tuple[float, list[int]]]]:
        """Per task, ``(w_k, positions)`` of the seen sets it lists (:func:`seen_set_weights`)."""
        out = []
        for pi, ids, v in zip(np.asarray(p), np.asarray(tool_ids), np.asarray(valid, dtype=bool)):
            n = int(v.sum())
            out.append(seen_set_weights(self.support_, pi[:n].tolist(), ids[:n].tolist(), self.padded_))
        return out

    def to_numbers(self) -> dict:
        return {"support": [list(s) for s in self.support_]}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "SeenSets":
        model = cls()
        model.support_ = [tuple(int(t) for t in s) for s in numbers["support"]]
        model.padded_ = support_array(model.support_)
        return model


def vocab_vector(z: Sequence[float], ids: Sequence[int], n_vocab: int) -> dict[int, float]:
    """A task's vocabulary score vector, sparse: each known tool's normalised score (the largest, should an id
    repeat); every other tool of the vocabulary is 0."""
    out: dict[int, float] = {}
    for x, t in zip(z, ids):
        t = int(t)
        if 0 <= t < n_vocab:
            out[t] = max(out.get(t, 0.0), float(x))
    return out


def _distances(train: np.ndarray, norms: np.ndarray, x: dict[int, float]) -> np.ndarray:
    """Squared Euclidean distances from the sparse vector ``x`` to every row of ``train``, rounded to 1e-12.

    ``|r - x|^2 = |r|^2 - sum_j r_j^2 + sum_j (r_j - x_j)^2`` over x's tools j: numpy over the rows,
    no BLAS; the rounding keeps float noise from reordering equal distances (ties: training order).
    """
    if not x:
        return np.round(norms, 12)
    cols = np.fromiter(x, dtype=np.int64, count=len(x))
    vals = np.fromiter(x.values(), dtype=np.float64, count=len(x))
    sub = train[:, cols]
    d = norms - (sub * sub).sum(axis=1) + ((sub - vals) ** 2).sum(axis=1)
    return np.round(np.maximum(d, 0.0), 12)


def neighbour_set_weights(train: np.ndarray, sets: list[tuple[int, ...]], k: int, z: Sequence[float],
                          ids: Sequence[int], norms: np.ndarray | None = None) -> list[tuple[float, list[int]]]:
    """:class:`NeighbourSets`' weights for one task: the G_x of its k nearest training tasks (1/k each, merged).

    ``train``: the training tasks' vocabulary vectors, (T, V); ``norms`` their squared norms (computed
    here when not given). Distance: squared Euclidean (:func:`_distances`); ties by training order. A
    neighbour's set with a tool not on this task's list is dropped (its weight is lost).
    """
    train = np.asarray(train, dtype=np.float64)
    if train.shape[0] == 0:
        return []
    if norms is None:
        norms = (train * train).sum(axis=1)
    d = _distances(train, norms, vocab_vector(z, ids, train.shape[1]))
    near = np.argsort(d, kind="stable")[:k].tolist()
    pos = _positions(ids)
    merged: dict[tuple[int, ...], float] = {}
    for i in near:
        s = sets[i]
        if all(t in pos for t in s):
            merged[s] = merged.get(s, 0.0) + 1.0 / len(near)
    return _top([(w, [pos[t] for t in s]) for s, w in merged.items()])


class NeighbourSets:
    """Nearest training tasks' G_x (module docstring).

    Parameters
    ----------
    k : int

    Attributes
    ----------
    train_ : ndarray of shape (T, V)
        The training tasks' vocabulary score vectors (:func:`vocab_vector`) whose G_x tools all have ids.
    sets_ : list of tuple of int
        Their G_x.
    """

    def __init__(self, k: int = 5):
        self.k = k

    def fit(self, z: np.ndarray, tool_ids: np.ndarray, member: np.ndarray, valid: np.ndarray,
            n_vocab: int) -> "NeighbourSets":
        """``z`` the within-task normalised scores, (T, N)."""
        rows, self.sets_ = [], []
        for zi, ids, m, v in zip(np.asarray(z), np.asarray(tool_ids), np.asarray(member, dtype=bool),
                                 np.asarray(valid, dtype=bool)):
            s = ids[m & v]
            if (s >= 0).all():
                n = int(v.sum())
                rows.append(vocab_vector(zi[:n].tolist(), ids[:n].tolist(), n_vocab))
                self.sets_.append(tuple(sorted(int(t) for t in s)))
        self._set_rows(rows, n_vocab)
        return self

    def _set_rows(self, rows: list[dict[int, float]], n_vocab: int) -> None:
        self.train_ = np.zeros((len(rows), n_vocab))
        for i, row in enumerate(rows):
            self.train_[i, list(row)] = list(row.values())
        self.norms_ = (self.train_ * self.train_).sum(axis=1)

    def with_k(self, k: int) -> "NeighbourSets":
        """The same training tasks with another k (the arrays shared, not copied)."""
        other = NeighbourSets(k)
        other.train_, other.norms_, other.sets_ = self.train_, self.norms_, self.sets_
        return other

    def weights(self, z: np.ndarray, tool_ids: np.ndarray, valid: np.ndarray) -> list[list[tuple[float, list[int]]]]:
        out = []
        for zi, ids, v in zip(np.asarray(z), np.asarray(tool_ids), np.asarray(valid, dtype=bool)):
            n = int(v.sum())
            out.append(neighbour_set_weights(self.train_, self.sets_, int(self.k), zi[:n].tolist(), ids[:n].tolist(),
                                             self.norms_))
        return out

    def to_numbers(self) -> dict:
        """``rows``: per training task, its vocabulary vector's nonzero entries as ``[[tool id, score], ...]``."""
        rows = [[[int(j), float(self.train_[i, j])] for j in np.flatnonzero(self.train_[i])]
                for i in range(self.train_.shape[0])]
        return {"k": int(self.k), "n_vocab": int(self.train_.shape[1]), "rows": rows,
                "sets": [list(s) for s in self.sets_]}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "NeighbourSets":
        model = cls(int(numbers["k"]))
        model._set_rows([{int(j): float(x) for j, x in row} for row in numbers["rows"]], int(numbers["n_vocab"]))
        model.sets_ = [tuple(int(t) for t in s) for s in numbers["sets"]]
        return model
