"""State features at every decision depth, for all tasks at once.

The state at depth t holds the prefix A_t (top t tools) and looks at the next
tool, position t. Every feature is a (T, N) array; invalid positions (t >= n) are
ignored downstream.
"""

from __future__ import annotations

import math
import operator
from functools import cached_property
from itertools import accumulate

import numpy as np

from camdf.core.instances import Instances
from camdf.core.targets import deltas
from camdf.core.payoff import cumulative_costs

FEATURES = (
    "depth",            # t
    "rel_depth",        # t / n
    "n_candidates",     # n
    "next_score",       # raw score of the next tool
    "next_score_norm",  # next score min-max normalised within the task
    "gap_prev",         # normalised score of the last exposed tool minus the next one (0 at t = 0)
    "gap_next",         # normalised score of the next tool minus the one after it
    "next_cost",        # c of the next tool
    "lam_cost",         # lambda * c of the next tool
    "score_per_cost",   # normalised next score / its cost
    "cum_score",        # sum of normalised scores in A_t
    "cum_cost",         # C(A_t)
    "lam_cum_cost",     # lambda * C(A_t)
    "remaining_score",  # sum of normalised scores beyond A_t
    "remaining_cost",   # total cost beyond A_t
    "p_next",           # cross-fitted P(next tool in G_x)
    "p_suff",           # estimated P(G_x inside A_t)
    "p_suff_next",      # estimated P(G_x inside A_{t+1})
    "delta_hat",        # plug-in estimate of Delta_t from those probabilities
    "text_len",         # task text length (characters)
    "score_entropy",    # entropy of the softmax of the task's normalised scores
    "lam",              # lambda itself (for the lambda-conditioned policy)
)
COST_FEATURES = (
    "next_cost", "lam_cost", "score_per_cost", "cum_cost", "lam_cum_cost", "remaining_cost", "delta_hat",
)
MEMBERSHIP_FEATURES = ("p_next", "p_suff", "p_suff_next", "delta_hat")
# Constant within a task: a booster that splits on them can memorise tasks rather than learn when to stop.
TASK_FEATURES = ("n_candidates", "text_len", "score_entropy")
LITE_FEATURES = (
    "rel_depth", "next_score_norm", "gap_prev", "lam_cost", "score_per_cost",
    "lam_cum_cost", "p_next", "p_suff", "delta_hat", "score_entropy",
)


#: The grid score_entropy is rounded to (2**-32). numpy's exp and log take other SIMD paths with and without
#: AVX-512, which move their last bit, and through the entropy a booster's thresholds, from machine to machine;
#: a value on this grid (exact in float64 for any entropy) is the same on every machine and in both paths below.
ENTROPY_SCALE = 2.0 ** 32


def normalised_scores(inst: Instances, valid: np.ndarray | None = None) -> np.ndarray:
    """Scores min-max normalised within each task to [0, 1] (0.5 where all are equal); 0 in padding."""
    valid = inst.valid if valid is None else valid
    lo = np.where(valid, inst.scores, np.inf).min(axis=1, keepdims=True)
    hi = np.where(valid, inst.scores, -np.inf).max(axis=1, keepdims=True)
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(span > 0, (inst.scores - lo) / np.where(span > 0, span, 1.0), 0.5)
    return np.where(valid, z, 0.0)


def sufficiency_curve(p: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """P(G_x inside A_t) for t = 0..N under independent memberships: prod_{j >= t} (1 - p_j).

    Returns shape (T, N + 1); 1 at t = n.
    """
    q = np.where(valid, 1.0 - np.clip(p, 0.0, 1.0), 1.0)
    tail = np.cumprod(q[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([tail, np.ones((p.shape[0], 1))], axis=1)


def expected_partial_curve(p: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Plug-in expected partial value sum_{j<t} p_j / sum_j p_j, shape (T, N + 1)."""
    pv = np.where(valid, p, 0.0)
    cum = np.concatenate([np.zeros((p.shape[0], 1)), np.cumsum(pv, axis=1)], axis=1)
    total = cum[:, -1:]
    return np.where(total > 0, cum / np.where(total > 0, total, 1.0), 1.0)


def plugin_payoffs(
    inst: Instances, p: np.ndarray, lam: float, kind: str = "exact", coverage: float = 1.0
) -> np.ndarray:
    """Estimated prefix payoffs from membership probabilities, (T, N + 1), -inf beyond n.

    ``U_hat[i, t] = q * V_hat[i, t] - lam * C(A_t)``, with V_hat the
    :func:`sufficiency_curve` (exact) or :func:`expected_partial_curve` (partial) of the
    listed tools and q the ``coverage``: the estimated P(the full list is sufficient)
    (exact) or expected listed share of G_x (partial). The curves assume all of G_x
    is listed, so q = 1 (the default) when the candidates are not truncated.
    """
    value = sufficiency_curve(p, inst.valid) if kind == "exact" else expected_partial_curve(p, inst.valid)
    u = coverage * value - lam * cumulative_costs(inst.costs)
    return np.where(inst.valid_depth, u, -np.inf)


class _State:
    """Shared intermediates of the state features, each computed on first use."""

    def __init__(self, inst: Instances, p: np.ndarray, lam: float, kind: str, valid: np.ndarray):
        self.inst, self.p, self.lam, self.kind, self.valid = inst, p, float(lam), kind, valid
        self.T, self.N = inst.T, inst.N
        self.n = inst.n[:, None].astype(float)

    @cached_property
    def t(self) -> np.ndarray:
        return np.broadcast_to(np.arange(self.N, dtype=float)[None, :], (self.T, self.N))

    @cached_property
    def z(self) -> np.ndarray:
        return normalised_scores(self.inst, self.valid)

    @cached_property
    def cum_cost(self) -> np.ndarray:
        return cumulative_costs(self.inst.costs)[:, :-1]

    @cached_property
    def cum_score(self) -> np.ndarray:
        return np.concatenate([np.zeros((self.T, 1)), np.cumsum(self.z, axis=1)], axis=1)[:, :-1]

    @cached_property
    def suff(self) -> np.ndarray:
        return sufficiency_curve(self.p, self.valid)

    def z_next(self) -> np.ndarray:
        z_next = np.concatenate([self.z[:, 1:], np.zeros((self.T, 1))], axis=1)
        return np.where(np.arange(self.N)[None, :] + 1 < self.inst.n[:, None], z_next, 0.0)

    def gap_prev(self) -> np.ndarray:
        z_prev = np.concatenate([self.z[:, :1], self.z[:, :-1]], axis=1)
        return np.where(self.t > 0, z_prev - self.z, 0.0)

    def delta_hat(self) -> np.ndarray:
        return np.nan_to_num(deltas(plugin_payoffs(self.inst, self.p, self.lam, self.kind)))

    def entropy(self) -> np.ndarray:
        ez = np.where(self.valid, np.exp(self.z), 0.0)
        prob = ez / ez.sum(axis=1, keepdims=True)
        logp = np.log(np.where(prob > 0, prob, 1.0))
        h = -(np.where(prob > 0, prob * logp, 0.0)).sum(axis=1, keepdims=True)
        h = np.round(h * ENTROPY_SCALE) / ENTROPY_SCALE  # half to even, as round() in task_features
        return np.broadcast_to(h, (self.T, self.N))

    def column(self, value) -> np.ndarray:
        return np.broadcast_to(value, (self.T, self.N))


# How each feature is computed from the shared intermediates (the comments of FEATURES define them).
_BUILD = {
    "depth": lambda s: s.t,
    "rel_depth": lambda s: s.t / np.maximum(s.n, 1.0),
    "n_candidates": lambda s: s.column(s.n),
    "next_score": lambda s: np.nan_to_num(s.inst.scores),
    "next_score_norm": lambda s: s.z,
    "gap_prev": lambda s: s.gap_prev(),
    "gap_next": lambda s: s.z - s.z_next(),
    "next_cost": lambda s: s.inst.costs,
    "lam_cost": lambda s: s.lam * s.inst.costs,
    "score_per_cost": lambda s: s.z / np.where(s.inst.costs > 0, s.inst.costs, 1.0),
    "cum_score": lambda s: s.cum_score,
    "cum_cost": lambda s: s.cum_cost,
    "lam_cum_cost": lambda s: s.lam * s.cum_cost,
    "remaining_score": lambda s: s.z.sum(axis=1, keepdims=True) - s.cum_score,
    "remaining_cost": lambda s: s.inst.costs.sum(axis=1, keepdims=True) - s.cum_cost,
    "p_next": lambda s: s.p,
    "p_suff": lambda s: s.suff[:, :-1],
    "p_suff_next": lambda s: s.suff[:, 1:],
    "delta_hat": lambda s: s.delta_hat(),
    "text_len": lambda s: s.column(s.inst.text_len[:, None]),
    "score_entropy": lambda s: s.entropy(),
    "lam": lambda s: np.full((s.T, s.N), s.lam),
}


def state_features(
    inst: Instances, p: np.ndarray, lam: float, kind: str = "exact", names=FEATURES
) -> dict[str, np.ndarray]:
    """The named features of :data:`FEATURES` (all by default) as (T, N) arrays, 0 at padding.

    Parameters
    ----------
    inst : Instances
    p : ndarray, shape (T, N)
        Cross-fitted membership probabilities of the ranked tools.
    lam : float
    kind : {"exact", "partial"}
    names : sequence of str
        Which features to compute (a stopper needs only its own; intermediates are shared).
    """
    valid = inst.valid
    state = _State(inst, p, lam, kind, valid)
    if valid.all():  # no padding to zero (a batch of equally long rankings)
        return {name: np.array(_BUILD[name](state), dtype=float) for name in names}
    return {name: np.where(valid, _BUILD[name](state), 0.0) for name in names}


def design(feats: dict[str, np.ndarray], names: tuple[str, ...] | list[str], valid: np.ndarray,
           extra: tuple[np.ndarray, ...] = ()) -> np.ndarray:
    """Stack the chosen features of the valid states into a matrix (S, F), row-major over (task, depth).

    ``extra`` arrays of shape (T, N) are appended as further columns (e.g. tool identities).
    """
    columns = [feats[name] for name in names] + [np.asarray(a, dtype=float) for a in extra]
    if valid.all():  # no padding: every state, in the same order, without a boolean gather
        return np.stack([c.reshape(-1) for c in columns], axis=1)
    return np.stack([c[valid] for c in columns], axis=1)


class _Task:
    """One ranked task's lists and running sums, for :func:`task_features`."""

    __slots__ = ("scores", "costs", "p", "lam", "text_len", "n", "z", "cum_cost", "cum_score", "suff", "idx")

    def __init__(self, scores, costs, p, lam, text_len, z=None):
        self.scores, self.costs, self.p, self.lam, self.text_len = scores, costs, p, float(lam), float(text_len)
        self.n = n = len(scores)
        self.z = task_normalised_scores(scores) if z is None else z
        self.cum_cost = list(accumulate(costs, initial=0.0))  # C(A_t), t = 0..n
        self.cum_score = list(accumulate(self.z, initial=0.0))
        # P(G_x inside A_t) = prod_{j >= t} (1 - p_j), multiplied from the end as in sufficiency_curve
        q = [1.0 - min(max(v, 0.0), 1.0) for v in reversed(p)]
        self.suff = list(accumulate(q, operator.mul, initial=1.0))[::-1]
        self.idx = range(n)

    def delta_hat(self, kind: str) -> list[float]:
        n, lam = self.n, self.lam
        if kind == "exact":
            value = self.suff
        else:
            cum_p = list(accumulate(self.p, initial=0.0))
            value = [c / cum_p[n] for c in cum_p] if cum_p[n] > 0 else [1.0] * (n + 1)
        u = [v - lam * c for v, c in zip(value, self.cum_cost)]
        best, delta = u[n], [0.0] * n  # best = max_{k > t} u_k
        for t in range(n - 1, -1, -1):
            d = u[t] - best
            delta[t] = d if math.isfinite(u[t]) and math.isfinite(best) else 0.0
            best = max(best, u[t])
        return delta

    def entropy(self) -> list[float]:
        ez = [math.exp(v) for v in self.z]
        total = sum(ez)
        h = -sum(q * math.log(q) for q in (e / total for e in ez) if q > 0)
        h = round(h * ENTROPY_SCALE) / ENTROPY_SCALE  # on the grid of the vectorised path
        return [h] * self.n


# Whole columns of one task, one comprehension each (the comments of FEATURES define them).
_TASK_BUILD = {
    "depth": lambda k: [float(j) for j in k.idx],
    "rel_depth": lambda k: [j / max(float(k.n), 1.0) for j in k.idx],
    "n_candidates": lambda k: [float(k.n)] * k.n,
    "next_score": lambda k: list(k.scores),
    "next_score_norm": lambda k: k.z,
    "gap_prev": lambda k: [0.0] + [a - b for a, b in zip(k.z, k.z[1:])],
    "gap_next": lambda k: [a - b for a, b in zip(k.z, k.z[1:])] + [k.z[-1] - 0.0],
    "next_cost": lambda k: list(k.costs),
    "lam_cost": lambda k: [k.lam * c for c in k.costs],
    "score_per_cost": lambda k: [v / c if c > 0 else v for v, c in zip(k.z, k.costs)],
    "cum_score": lambda k: k.cum_score[:-1],
    "cum_cost": lambda k: k.cum_cost[:-1],
    "lam_cum_cost": lambda k: [k.lam * c for c in k.cum_cost[:-1]],
    "remaining_score": lambda k: [k.cum_score[-1] - c for c in k.cum_score[:-1]],
    "remaining_cost": lambda k: [k.cum_cost[-1] - c for c in k.cum_cost[:-1]],
    "p_next": lambda k: list(k.p),
    "p_suff": lambda k: k.suff[:-1],
    "p_suff_next": lambda k: k.suff[1:],
    "text_len": lambda k: [k.text_len] * k.n,
    "score_entropy": lambda k: k.entropy(),
    "lam": lambda k: [k.lam] * k.n,
}


def task_features(
    scores: list[float], costs: list[float], p: list[float], lam: float, kind: str = "exact",
    text_len: float = 0.0, names=FEATURES, z: list[float] | None = None,
) -> list[list[float]]:
    """The named features of one ranked task, in plain Python: one list per feature, shape (F, n).

    The same definitions as :func:`state_features` (tests hold the two together). The
    run-time stopper uses it for a single request over a short ranking, where numpy's
    per-call overhead on a handful of tools costs more than the arithmetic itself.

    Parameters
    ----------
    scores, costs, p : list of float, length n
        The ranked tools' scores (non-increasing), costs and membership probabilities.
    lam : float
    kind : {"exact", "partial"}
    text_len : float
    names : sequence of str
    z : list of float, optional
        :func:`task_normalised_scores` of ``scores``, when the caller has them already.
    """
    task = _Task(scores, costs, p, lam, text_len, z)
    return [task.delta_hat(kind) if name == "delta_hat" else _TASK_BUILD[name](task) for name in names]


def task_normalised_scores(scores: list[float]) -> list[float]:
    """:func:`normalised_scores` of one task in plain Python."""
    lo, hi = min(scores), max(scores)
    span = hi - lo
    return [(s - lo) / span for s in scores] if span > 0 else [0.5] * len(scores)
