"""The recovery-aware payoff: a miss is not the end when the deferred tools can be searched.

The harnesses' tool search (deferred loading plus a search tool) gives an agent whose
preloaded set A misses the task's tools one more round: it searches the deferred tools
(every candidate not in A), the search returns its top ``k`` of them, and the agent goes on
with A plus what was returned. Priced in the units of the payoff:

    covered   (a sufficient set inside A):           U = 1 - lam * C(A)
    recovered (not covered; one inside A + R):       U = 1 - lam * (C(A) + S + C(R))
    lost      (neither):                             U = 0 - lam * (C(A) + S + C(R))

with R the search's top k of the deferred tools and S the price of one search round
(with ``rounds`` R > 1, a round that still misses searches again: the next k of the tools still deferred, each round
paid; R = 1, one round, is the payoff above bit for bit)
(``cost`` times the task's mean candidate cost: the search tool's schema, the extra model
round trip and the reference blocks, in units of a tool's cost). Alternatives count as for
the exact payoff (:func:`camdf.core.sets.set_success`). ``cost = inf`` switches the fallback
off: no search is paid and a miss is lost, which is the exact payoff (a test holds this on
every task).

The search ranks the deferred tools with the cell's ranker applied to the task text (the
ranked list's own order), which is optimistic: the agent's search query is not the task
text. ``noise`` perturbs it: the search ranks by the task's z-scored ranker scores plus
``noise`` times a standard normal draw fixed by (random_state, task, tool), so the same task
meets the same search in every fold, subset and batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from camdf.core.instances import Instances
from camdf.common.dials import Dial
from camdf.core.sets import nested_order, plugin_values, set_cost, set_success


@dataclass(frozen=True)
class Search:
    """The fallback a harness offers: one search round over the deferred tools.

    Attributes
    ----------
    cost : float
        Price of one search round in units of the task's mean candidate cost, >= 0;
        ``inf``: no fallback (the exact payoff).
    k : int
        Tools the search returns (its top k of the deferred candidates), >= 1.
    noise : float
        Standard deviation of the normal noise added to the z-scored ranker scores the
        search ranks by, >= 0; 0: the cell's ranker on the task text (optimistic).
    random_state : int
        Seed of the search noise.
    rounds : int
        Search rounds an agent may make while it still misses, each priced (cost + what it loads), >= 1.
    """

    cost: float = math.inf
    k: int = 5
    noise: float = 0.0
    random_state: int = 0
    rounds: int = 1

    def __post_init__(self):
        if not (self.cost >= 0):  # also refuses NaN
            raise ValueError(f"search.cost: must be >= 0 (inf: no fallback), got {self.cost}")
        if int(self.k) != self.k or self.k < 1:
            raise ValueError(f"search.k: must be an integer >= 1, got {self.k}")
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"search.noise: must be a finite number >= 0, got {self.noise}")
        if int(self.rounds) != self.rounds or self.rounds < 1:
            raise ValueError(f"search.rounds: must be an integer >= 1, got {self.rounds}")

    @property
    def active(self) -> bool:
        """Whether a miss triggers a search (a finite price)."""
        return math.isfinite(self.cost)


def _normal_draws(task_ids: np.ndarray, tools: np.ndarray, random_state: int) -> np.ndarray:
    """A standard normal per (task, tool), fixed by their names and the seed, shape (T, N).

    Hashes of the names (pandas' stable 64-bit hash, the same on every machine) turned into
    uniforms in (0, 1) and through the normal quantile; so a draw does not depend on the
    task's row in a batch or on the tool's rank.
    """
    import pandas as pd  # here: the run-time stopper imports the core without pandas or scipy
    from scipy.special import ndtri

    keys = np.char.add(np.char.add(np.asarray(task_ids, dtype=str)[:, None], "\x1f"), np.asarray(tools, dtype=str))
    h = pd.util.hash_array(keys.ravel().astype(object), hash_key=f"{int(random_state) % 10**16:016d}")
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return ndtri(u).reshape(keys.shape)


def search_ranks(inst: Instances, search: Search) -> np.ndarray:
    """Each ranked position's rank in the search's order, shape (T, N), a permutation per task.

    Noise 0: the list's own order (``rank[i, j] = j``). Otherwise the order of the z-scored
    ranker scores plus ``noise`` times :func:`_normal_draws`; ties by list position; padding last.
    """
    T, N = inst.tools.shape
    if search.noise == 0:
        return np.broadcast_to(np.arange(N), (T, N)).copy()
    valid = inst.valid
    s = np.where(valid, inst.scores, 0.0)
    n = np.maximum(inst.n, 1)[:, None]
    mean = s.sum(axis=1, keepdims=True) / n
    sd = np.sqrt((np.where(valid, s - mean, 0.0) ** 2).sum(axis=1, keepdims=True) / n)
    z = np.where(sd > 0, (s - mean) / np.where(sd > 0, sd, 1.0), 0.0)
    key = np.where(valid, z + search.noise * _normal_draws(inst.task_ids, inst.tools, search.random_state), -np.inf)
    order = np.argsort(-key, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(N), (T, N)), axis=1)
    return rank


def returned_tools(mask: np.ndarray, valid: np.ndarray, rank: np.ndarray, k: int) -> np.ndarray:
    """R: the search's top ``k`` of the deferred candidates (valid, not in the mask).

    Parameters
    ----------
    mask : bool, shape (..., T, N)
    valid : bool, shape (T, N)
    rank : int, shape (T, N)
        A permutation per task (:func:`search_ranks`).
    k : int

    Returns
    -------
    bool, shape (..., T, N)
    """
    mask = np.asarray(mask, dtype=bool)
    order = np.argsort(rank, axis=1)  # positions in search order
    shape = mask.shape
    order_b = np.broadcast_to(order, shape)
    deferred = np.take_along_axis(np.broadcast_to(valid, shape) & ~mask, order_b, axis=-1)
    take = deferred & (np.cumsum(deferred, axis=-1) <= k)
    return np.take_along_axis(take, np.broadcast_to(rank, shape), axis=-1)


@dataclass
class RecoveryOutcome:
    """What the fallback did for each mask: every array has the masks' leading shape (..., T)."""

    covered: np.ndarray    #: a sufficient set inside A
    searched: np.ndarray   #: a search round was paid (a miss with the fallback on)
    recovered: np.ndarray  #: not covered, and a sufficient set inside A + R
    loaded: np.ndarray     #: |R|, tools the search loaded (over every round)
    extra: np.ndarray      #: what the fallback cost: S + C(R) per round paid
    cost: np.ndarray       #: C(A) + extra
    payoff: np.ndarray     #: success - lam * cost
    rounds: np.ndarray     #: search rounds paid (0 when covered; at most ``Search.rounds``)

    @property
    def success(self) -> np.ndarray:
        return self.covered | self.recovered


def recovery_outcomes(
    mask: np.ndarray, inst: Instances, lam: float, search: Search, rank: np.ndarray | None = None,
) -> RecoveryOutcome:
    """Outcomes of preloading each mask under the recovery payoff (module docstring).

    Parameters
    ----------
    mask : bool, shape (..., T, N)
        Preloaded candidates (ranked positions of ``inst``).
    inst : Instances
        Costs, sufficient sets, validity.
    lam : float
        Cost pressure lambda >= 0.
    search : Search
    rank : int, shape (T, N), optional
        The search's ranks (default :func:`search_ranks`; a test passes a perfect search).

    Returns
    -------
    RecoveryOutcome
    """
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be a finite number >= 0, got {lam}")
    rank = search_ranks(inst, search) if rank is None else rank
    valid = inst.valid
    mask = np.asarray(mask, dtype=bool) & valid
    sets, present = inst.sufficient()
    covered = set_success(mask, sets, present)
    base = set_cost(mask, inst.costs)  # in ranked order: a prefix's cumulative cost bit for bit
    if not search.active:
        none = np.zeros_like(covered)
        zeros = np.zeros(covered.shape, dtype=np.int64)
        return RecoveryOutcome(covered, none, none, zeros, np.zeros(covered.shape), base, covered - lam * base, zeros)
    searched = ~covered
    unit = np.where(valid, inst.costs, 0.0).sum(axis=1) / np.maximum(inst.n, 1)
    got = returned_tools(mask, valid, rank, search.k) & searched[..., None]
    held = mask | got
    recovered = searched & set_success(held, sets, present)
    extra = np.where(searched, search.cost * unit + set_cost(got, inst.costs), 0.0)
    loaded, rounds = got.sum(axis=-1), searched.astype(np.int64)
    for _ in range(int(search.rounds) - 1):  # another round where the last still missed: the next k still deferred
        again = searched & ~recovered
        more = returned_tools(held, valid, rank, search.k) & again[..., None]
        held = held | more
        recovered = searched & set_success(held, sets, present)
        extra = extra + np.where(again, search.cost * unit + set_cost(more, inst.costs), 0.0)
        loaded, rounds = loaded + more.sum(axis=-1), rounds + again
    return RecoveryOutcome(covered, searched, recovered, loaded, extra, base + extra,
                           (covered | recovered) - lam * (base + extra), rounds)


def recovery_prefix_payoffs(inst: Instances, lam: float, search: Search, rank: np.ndarray | None = None) -> np.ndarray:
    """U(A_t) under the recovery payoff for every task and depth, shape (T, N + 1).

    Preloading the prefix A_t defers positions t..n-1; ``-inf`` at unreachable depths, as
    :func:`camdf.core.payoff.prefix_payoffs`, so :func:`camdf.core.targets.deltas` gives
    CAM-DF's Delta under this U unchanged.
    """
    T, N = inst.tools.shape
    masks = np.broadcast_to(np.arange(N)[None, None, :] < np.arange(N + 1)[:, None, None], (N + 1, T, N))
    # set_cost sums a prefix as the exact payoff sums it, so an inactive search gives that payoff bit for bit.
    return np.where(inst.valid_depth, recovery_outcomes(masks, inst, lam, search, rank).payoff.T, -np.inf)


#: The run-time dials of a rule that knows the fallback: the price of a search round and what it returns.
SEARCH_COST = Dial("search_cost", default=4.0, lo=0.0, hi=1e6,
                   what="the price of one search round in units of the mean candidate cost")
SEARCH_K = Dial("search_k", default=5.0, lo=0.0, hi=1e4, what="the tools one search returns (an integer)")


def search_dials(fitted_cost: float, fitted_k: int, search_cost: float | None = None,
                 search_k: float | None = None) -> tuple[float, int]:
    """``(cost, k)`` of the search a fallback rule decides for: each run-time dial given (checked against its
    range), else the search the rule was fitted for."""
    cost = fitted_cost if search_cost is None else SEARCH_COST.check(search_cost)
    k = fitted_k if search_k is None else check_k(SEARCH_K.check(search_k))
    return cost, k


def check_k(value: float, field: str = "search_k") -> int:
    """``value`` as the integer k >= 1 of a search, else ValueError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() or value < 1:
        raise ValueError(f"{field}: must be an integer >= 1, got {value!r}")
    return int(value)


def fallback_set(
    p: np.ndarray, costs: np.ndarray, valid: np.ndarray, lam: float, search_cost: float, k: int,
    coverage: float | np.ndarray = 1.0, rounds: int = 1,
) -> np.ndarray:
    """The preloaded mask of highest *estimated* recovery payoff, choosing among nested families.

    Under independent memberships p (times the coverage q) the estimate of preloading A is

        E_hat[U(A)] = s(A + R_A) - lam * (C(A) + (1 - s(A)) * (S + C(R_A))),
        s(B) = q * prod_{j valid, not in B} (1 - p_j),

    with R_A the search's top k of the deferred tools in the list's order (the run-time search
    ranks like the ranker: the optimistic search of the module docstring) and S = ``search_cost``
    times the mean candidate cost. With ``rounds`` R > 1 (the payoff's :attr:`Search.rounds`) the
    estimate follows the payoff round by round: B_0 = A, B_r = B_(r-1) + the next k still deferred,
    round r paid with probability 1 - s(B_(r-1)):

        E_hat[U(A)] = s(B_R) - lam * (C(A) + sum_r (1 - s(B_(r-1))) * (S + C(B_r - B_(r-1)))),

    one round being the estimate above bit for bit. Unlike the plug-in objective this one is not optimised by a
    prefix of one order (what the search would return changes with A), so the rule takes the best
    of two nested families: the prefixes of :func:`camdf.core.sets.nested_order` (membership
    evidence per cost) and the ranked prefixes, 2(n + 1) candidates; O(n^2) per task.

    Parameters
    ----------
    p, costs : float, shape (T, N)
    valid : bool, shape (T, N)
    lam : float
    search_cost : float
        S in units of the task's mean candidate cost, >= 0 (inf: no fallback, the plug-in set's
        objective over the same families).
    k : int
    coverage : float or (T,) float
    rounds : int
        Search rounds the estimate counts, >= 1 (ignored without a search).

    Returns
    -------
    bool, shape (T, N)
    """
    T, N = p.shape
    order = nested_order(p, costs, valid)
    depth = np.arange(N + 1)[:, None, None]
    ranked = np.broadcast_to(np.arange(N)[None, None, :] < depth, (N + 1, T, N))
    nested = np.zeros((N + 1, T, N), dtype=bool)
    np.put_along_axis(nested, np.broadcast_to(order, (N + 1, T, N)),
                      np.broadcast_to(np.arange(N)[None, None, :] < depth, (N + 1, T, N)), axis=-1)
    masks = np.concatenate([nested, ranked], axis=0) & valid  # (2N + 2, T, N)
    s_a = plugin_values(masks, p, costs, valid, 0.0, "exact", coverage)
    c_a = set_cost(masks, costs)
    if not math.isfinite(search_cost):
        u = s_a - lam * c_a
    else:
        listed = np.broadcast_to(np.arange(N), (T, N))
        got = returned_tools(masks, valid, listed, k)
        s_ar = plugin_values(masks | got, p, costs, valid, 0.0, "exact", coverage)
        unit = np.where(valid, costs, 0.0).sum(axis=1) / np.maximum(valid.sum(axis=1), 1)
        paid = (1.0 - s_a) * (search_cost * unit + set_cost(got, costs))
        held = masks | got
        for _ in range(int(rounds) - 1):  # round r is paid where B_(r-1) still misses
            more = returned_tools(held, valid, listed, k)
            held = held | more
            s_next = plugin_values(held, p, costs, valid, 0.0, "exact", coverage)
            paid = paid + (1.0 - s_ar) * (search_cost * unit + set_cost(more, costs))
            s_ar = s_next
        u = s_ar - lam * (c_a + paid)
    best = np.argmax(u, axis=0)  # the first maximiser: nested prefixes before ranked ones, shallow first
    return masks[best, np.arange(T)]
