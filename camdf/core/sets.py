"""Exposed sets beyond the ranked prefix: set outcomes, the plug-in set optimiser and nested (re-ranked) risk sets.

A *mask* is a (T, N) bool array over a task's ranked positions (the layout of
:class:`camdf.core.instances.Instances`): ``mask[i, j]`` exposes the ``j+1``-th ranked
candidate of task ``i``; padding (``j >= n[i]``) is never exposed. A prefix rule's
depth t is the mask of positions ``0 .. t-1`` (:func:`prefix_masks`), so every
function here scores prefix rules too.

A task's sufficient sets (G_x first, then its alternatives) are a padded (T, K, N)
bool array with a (T, K) ``present`` flag (:func:`sufficient_sets`): a set with a tool
off the candidate list is not present (no mask can contain it), and an empty present
set is always satisfied, as in :func:`camdf.core.instances.curves_from_sets`.

Three groups of functions here and one beside them:

- outcomes of given masks: :func:`set_success`, :func:`set_partial`, :func:`set_cost`,
  :func:`set_payoffs` (U(A) = v(A) - lam * C(A), the evaluation's payoff);
- the re-ranked order :func:`nested_order`: candidates sorted by ``-log(1 - p_j) / c_j``
  (membership evidence per cost); its prefixes are nested sets;
- the plug-in optimiser :func:`plugin_set`: the mask of highest *estimated* payoff under
  independent membership probabilities p. The optimum over all 2^n subsets is always a
  prefix of the re-ranked order (proof in :func:`plugin_set`), so it is exact for any
  list length at O(n log n), with a plain-Python path for one task (:func:`task_plugin_set`);
- :class:`~camdf.core.risk_sets.RiskSet` (its own module): conformal risk control over the same
  nested prefixes, as :mod:`camdf.core.conformal` does over ranked prefixes, and its one-task path
  :func:`~camdf.core.risk_sets.task_risk_set`.

So both set rules are "re-rank by calibrated membership per cost, then cut with the
prefix machinery": for the plug-in objective that is not a design choice but the optimum.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from camdf.core.features import sufficiency_curve
from camdf.core.payoff import PAYOFF_KINDS
from camdf.core.instances import sufficient_sets  # noqa: F401  (defined beside Instances, which builds them)


# ---------------------------------------------------------------- sufficient sets and outcomes


def prefix_masks(depth: np.ndarray, N: int) -> np.ndarray:
    """The masks of ranked prefixes: ``mask[i, j] = j < depth[i]``, shape (T, N)."""
    return np.arange(N)[None, :] < np.asarray(depth)[:, None]


def set_success(mask: np.ndarray, sets: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Exact success: some present sufficient set lies inside the mask.

    Parameters
    ----------
    mask : bool, shape (..., T, N)
        Any leading batch shape (e.g. M candidate masks per task as (M, T, N)).
    sets : bool, shape (T, K, N)
    present : bool, shape (T, K)

    Returns
    -------
    bool, shape (..., T)
        ``OR_k present[k] AND (sets[k] subset of mask)``.
    """
    outside = sets & ~np.asarray(mask, dtype=bool)[..., None, :]
    return (present & ~outside.any(axis=-1)).any(axis=-1)


def set_partial(mask: np.ndarray, member: np.ndarray, g_size: np.ndarray | None = None) -> np.ndarray:
    """Partial value |G_x & A| / |G_x| of each mask, 1 where G_x is empty.

    Parameters
    ----------
    mask : bool, shape (..., T, N)
    member : bool, shape (T, N)
        Whether each ranked position is in G_x.
    g_size : int, shape (T,), optional
        |G_x| counting required tools that are not on the list (as after
        :func:`camdf.core.instances.truncate`); default ``member.sum(axis=1)``.

    Returns
    -------
    float, shape (..., T)
    """
    g = member.sum(axis=1) if g_size is None else np.asarray(g_size)
    hit = (np.asarray(mask, dtype=bool) & member).sum(axis=-1)
    return np.where(g > 0, hit / np.maximum(g, 1), 1.0)


def set_cost(mask: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """C(A) = sum of the exposed candidates' costs, shape (..., T); padding costs 0.

    Summed in ranked order, left to right, as :func:`camdf.core.payoff.cumulative_costs` sums a
    prefix: the cost of a prefix's mask is its cumulative cost bit for bit, so a prefix and a set
    holding the same tools cost the same, and every rule is scored by one sum (numpy's pairwise
    ``sum`` differs from it in the last bits on rows of more than 8 tools).
    """
    out = np.where(mask, costs, 0.0)
    if out.shape[-1] == 0:
        return out.sum(axis=-1)
    np.cumsum(out, axis=-1, out=out)
    return out[..., -1].copy()


def set_payoffs(
    mask: np.ndarray,
    costs: np.ndarray,
    lam: float,
    kind: str = "exact",
    sets: np.ndarray | None = None,
    present: np.ndarray | None = None,
    member: np.ndarray | None = None,
    g_size: np.ndarray | None = None,
) -> np.ndarray:
    """The true payoff U(A) = v(A) - lam * C(A) of each mask.

    Parameters
    ----------
    mask : bool, shape (..., T, N)
    costs : float, shape (T, N)
    lam : float
        Cost pressure lambda >= 0.
    kind : {"exact", "partial"}
        v = :func:`set_success` (needs ``sets`` and ``present``: alternatives count) or
        :func:`set_partial` (needs ``member``; ``g_size`` as there).

    Returns
    -------
    float, shape (..., T)
    """
    if kind not in PAYOFF_KINDS:
        raise ValueError(f"kind: expected one of {PAYOFF_KINDS}, got {kind!r}")
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be a finite number >= 0, got {lam}")
    if kind == "exact":
        if sets is None or present is None:
            raise ValueError("sets, present: the exact payoff needs the sufficient sets (see sufficient_sets)")
        value = set_success(mask, sets, present).astype(float)
    else:
        if member is None:
            raise ValueError("member: the partial payoff needs the (T, N) membership of G_x")
        value = set_partial(mask, member, g_size)
    return value - lam * set_cost(mask, costs)


# ---------------------------------------------------------------- plug-in objective


def _log_q(p: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 - p_j) of valid positions with p_j < 1 (0 elsewhere), and where p_j = 1 (a sure member)."""
    p = np.clip(np.where(valid, p, 0.0), 0.0, 1.0)
    sure = valid & (p >= 1.0)
    with np.errstate(divide="ignore"):
        lq = np.where(sure, 0.0, np.log1p(-p))
    return lq, sure


def partial_weights(p: np.ndarray, valid: np.ndarray, estimate: str = "ratio") -> tuple[np.ndarray, np.ndarray]:
    """The plug-in partial value is modular: E_hat[v(A)] = base + sum_{j in A} w_j.

    Parameters
    ----------
    p : float, shape (T, N)
        Membership probabilities.
    valid : bool, shape (T, N)
    estimate : {"ratio", "independent"}
        ``"ratio"``: w_j = p_j / sum_k p_k, base = 0 (1 and w = 0 when sum p = 0), as
        :func:`camdf.core.features.expected_partial_curve` estimates prefixes.
        ``"independent"``: the exact expectation of |G & A| / |G| (1 when G is empty)
        when memberships are independent Bernoulli(p): base = P(G empty) = prod (1 - p_k)
        and ``w_j = p_j E[1 / (1 + S_-j)] = p_j int_0^1 prod_{k != j} (1 - p_k (1 - x)) dx``
        with S_-j the number of other members (E[x^S] integrated over x gives E[1/(1+S)]);
        the integral by 64-node Gauss-Legendre quadrature, exact for lists of up to 128
        candidates (the integrand is a polynomial of degree n - 1).

    Returns
    -------
    base : float, shape (T,)
    w : float, shape (T, N)
        0 in padding.
    """
    pv = np.clip(np.where(valid, p, 0.0), 0.0, 1.0)
    if estimate == "ratio":
        total = pv.sum(axis=1)
        w = np.where(total[:, None] > 0, pv / np.where(total > 0, total, 1.0)[:, None], 0.0)
        return np.where(total > 0, 0.0, 1.0), w
    if estimate != "independent":
        raise ValueError(f"estimate: expected 'ratio' or 'independent', got {estimate!r}")
    x, wq = np.polynomial.legendre.leggauss(64)
    x, wq = (x + 1.0) / 2.0, wq / 2.0
    # factor_k(x) = 1 - p_k (1 - x) >= x > 0 at the interior nodes, so the logs are finite.
    log_f = np.log1p(-pv[:, :, None] * (1.0 - x)[None, None, :])  # (T, N, m)
    others = np.exp(log_f.sum(axis=1, keepdims=True) - log_f)      # prod over k != j
    w = pv * (others * wq).sum(axis=2)
    base = np.prod(1.0 - pv, axis=1)
    return base, np.where(valid, w, 0.0)


def plugin_values(
    mask: np.ndarray, p: np.ndarray, costs: np.ndarray, valid: np.ndarray, lam: float, kind: str = "exact",
    coverage: float | np.ndarray = 1.0, partial: str = "ratio",
) -> np.ndarray:
    """The plug-in estimate of each mask's payoff, shape (..., T).

    exact: ``q * prod_{j valid, not in A} (1 - p_j) - lam * C(A)``; partial:
    ``q * (base + sum_{j in A} w_j) - lam * C(A)`` (:func:`partial_weights`), with q the
    ``coverage`` (scalar or (T,)): the estimated chance that the list holds G_x, as in
    :func:`camdf.core.features.plugin_payoffs`.
    """
    mask = np.asarray(mask, dtype=bool) & valid
    if kind == "exact":
        lq, sure = _log_q(p, valid)
        out = ~mask
        value = np.exp(np.where(out, lq, 0.0).sum(axis=-1)) * ~(out & sure).any(axis=-1)
    elif kind == "partial":
        base, w = partial_weights(p, valid, partial)
        value = base + np.where(mask, w, 0.0).sum(axis=-1)
    else:
        raise ValueError(f"kind: expected one of {PAYOFF_KINDS}, got {kind!r}")
    return np.asarray(coverage) * value - lam * set_cost(mask, costs)


def nested_order(p: np.ndarray, costs: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each task's candidates re-ranked by membership evidence per cost, shape (T, N) of positions.

    The key is ``-log(1 - p_j) / c_j`` descending (+inf for p_j = 1 or c_j = 0), ties by the
    original rank; padding last. ``-log(1 - p_j)`` is how much exposing j raises
    ``log P(G_x inside A)`` under independent memberships, so the re-ranked prefixes are
    the greedy path of the exact plug-in objective, and nested by construction.
    """
    lq, sure = _log_q(p, valid)
    c = np.where(valid, costs, 0.0)
    gain = -lq
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(sure | (c <= 0), np.inf, gain / np.where(c > 0, c, 1.0))
    key = np.where(valid, key, -np.inf)
    # A stable sort of -key keeps the original rank among equal keys; padding (-inf) sorts last.
    return np.argsort(-key, axis=1, kind="stable")


def nested_masks(order: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """The mask exposing the first ``depth[i]`` candidates of each task's re-ranked ``order``, (T, N)."""
    T, N = order.shape
    mask = np.zeros((T, N), dtype=bool)
    np.put_along_axis(mask, order, prefix_masks(depth, N), axis=1)
    return mask


def nested_ranks(order: np.ndarray) -> np.ndarray:
    """Inverse permutation: ``rank[i, order[i, t]] = t``."""
    T, N = order.shape
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(N), (T, N)), axis=1)
    return rank


def plugin_depths(
    p: np.ndarray, costs: np.ndarray, valid: np.ndarray, lam: float, coverage: float | np.ndarray = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact plug-in optimum as a depth on the re-ranked order: ``(order (T, N), depth (T,))``.

    ``depth`` maximises ``U_hat_t = q * prod_{j beyond t} (1 - p_j) - lam * C(A'_t)`` over the
    prefixes A'_t of :func:`nested_order` (the smallest maximiser); see :func:`plugin_set`
    for why that is the optimum over all subsets.
    """
    order = nested_order(p, costs, valid)
    pr = np.take_along_axis(np.where(valid, p, 0.0), order, axis=1)
    cr = np.take_along_axis(np.where(valid, costs, 0.0), order, axis=1)
    suff = sufficiency_curve(pr, np.take_along_axis(valid, order, axis=1))
    cum = np.concatenate([np.zeros((len(p), 1)), np.cumsum(cr, axis=1)], axis=1)
    u = np.broadcast_to(np.asarray(coverage, dtype=float), (len(p),))[:, None] * suff - lam * cum
    u = np.where(np.arange(p.shape[1] + 1)[None, :] <= valid.sum(axis=1)[:, None], u, -np.inf)
    return order, np.argmax(u, axis=1)


def plugin_set(
    p: np.ndarray,
    costs: np.ndarray,
    valid: np.ndarray,
    lam: float,
    kind: str = "exact",
    coverage: float | np.ndarray = 1.0,
    partial: str = "ratio",
) -> np.ndarray:
    """The mask of highest plug-in payoff for every task, exact for any list length.

    Maximises :func:`plugin_values` over all 2^n subsets A of each task's candidates.

    exact: ``U_hat(A) = s(A) - lam * C(A)`` with ``s(A) = q * prod_{j not in A} (1 - p_j)``,
    the chance that no member of G_x is left out under independent memberships. The
    optimum is a prefix of :func:`nested_order` (key ``a_j / c_j`` with
    ``a_j = -log(1 - p_j)``), so the best of its n + 1 prefixes (:func:`plugin_depths`)
    is optimal over all subsets, in O(n log n). Proof: let A* be optimal with s(A*) > 0
    (if s(A*) = 0 then U_hat(A*) <= 0 <= U_hat({}), and the empty prefix is optimal too).
    Adding j not in A* does not gain: ``s(A*) (e^{a_j} - 1) <= lam c_j``; dropping i in A*
    does not gain: ``s(A*) (1 - e^{-a_i}) >= lam c_i``. With ``1 - e^{-a} <= a <= e^a - 1``,

        a_i / c_i >= (1 - e^{-a_i}) / c_i >= lam / s(A*) >= (e^{a_j} - 1) / c_j >= a_j / c_j,

    so every chosen key is at least every unchosen one (equality forces a_i = a_j = 0,
    where only cost-free tools can tie, and such a swap leaves U_hat unchanged): A* is a
    prefix of the order up to value-neutral ties. The tests check this against brute force
    over all subsets of random lists of up to 14 candidates (gap 0). Ties go to the
    smallest depth, so ties between equal-valued subsets may pick a different but equally
    valued set than an enumeration would.

    partial: the objective is modular (:func:`partial_weights`), so the optimum is
    ``A = {j : q * w_j > lam * c_j}``.

    Alternatives. ``p`` are membership probabilities of the primary set G_x; the objective
    does not model the alternative sufficient sets (a run-time request does not know
    them). The evaluation (:func:`set_payoffs`) counts an alternative inside A as success,
    so under independence the plug-in success chance is a lower bound on the true one.

    Parameters
    ----------
    p : float, shape (T, N)
        Membership probabilities of the ranked candidates (0 in padding).
    costs : float, shape (T, N)
        c_j >= 0.
    valid : bool, shape (T, N)
    lam : float
        lambda >= 0.
    kind : {"exact", "partial"}
    coverage : float or float array of shape (T,)
        q, the estimated chance the list holds G_x (exact) or listed share of G_x (partial),
        as in :func:`camdf.core.features.plugin_payoffs`.
    partial : {"ratio", "independent"}
        The partial-value estimate (:func:`partial_weights`).

    Returns
    -------
    ndarray of bool, shape (T, N)
        The chosen mask; never exposes padding.
    """
    if kind not in PAYOFF_KINDS:
        raise ValueError(f"kind: expected one of {PAYOFF_KINDS}, got {kind!r}")
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be a finite number >= 0, got {lam}")
    p, costs, valid = np.asarray(p, dtype=float), np.asarray(costs, dtype=float), np.asarray(valid, dtype=bool)
    if kind == "partial":
        q = np.broadcast_to(np.asarray(coverage, dtype=float), (len(p),))
        _, w = partial_weights(p, valid, partial)
        return valid & (q[:, None] * w > lam * np.where(valid, costs, 0.0))
    return nested_masks(*plugin_depths(p, costs, valid, lam, coverage))


def task_order(p: Sequence[float], costs: Sequence[float]) -> tuple[list[int], list[float]]:
    """:func:`nested_order` of one task in plain Python, and the clipped ``1 - p_j``."""
    q, key = [], []
    for x, c in zip(p, costs):
        x = min(max(float(x), 0.0), 1.0)
        q.append(1.0 - x)
        key.append(math.inf if x >= 1.0 or c <= 0 else -math.log1p(-x) / float(c))
    return sorted(range(len(q)), key=lambda j: -key[j]), q  # sorted is stable: ties keep the rank order


def task_tail(order: list[int], q: list[float]) -> list[float]:
    """prod_{j beyond t} (1 - p_j) along ``order`` for t = 0..n, multiplied from the end as numpy's cumprod is."""
    n = len(order)
    suff, tail = [1.0] * (n + 1), 1.0
    for t in range(n - 1, -1, -1):
        tail *= q[order[t]]
        suff[t] = tail
    return suff


def task_plugin_set(p: Sequence[float], costs: Sequence[float], lam: float, coverage: float = 1.0) -> list[int]:
    """:func:`plugin_set` (exact payoff) for one task in plain Python: the exposed positions, in re-ranked order.

    The same order, products and sums as :func:`plugin_depths`, so the same set (the
    run-time fast path, where numpy's per-call overhead dominates a short list).
    """
    order, q = task_order(p, costs)
    suff = task_tail(order, q)
    best, depth, cost = coverage * suff[0], 0, 0.0
    for t in range(1, len(order) + 1):
        cost += float(costs[order[t - 1]])
        u = coverage * suff[t] - lam * cost
        if u > best:
            best, depth = u, t
    return order[:depth]
