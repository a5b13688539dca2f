"""The field's own baselines for set rules: one static tool set for every task, and the Bits-over-Random depth.

- :class:`StaticSet`: "always-loaded tools": one subset of the tool vocabulary, chosen on
  training tasks to maximise their mean true payoff; a task exposes the chosen tools
  among its candidates.
- Bits-over-Random (BoR), the chance-corrected depth of Repantis et al., "How Many Tools
  Should an LLM Agent See? A Chance-Corrected Answer" (arXiv 2605.24660), implemented
  from its description (:func:`hypergeometric_chance`, :func:`bor_rewards`,
  :func:`bor_plugin_depths`, :class:`BoRDepth`).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from camdf.core.features import sufficiency_curve


def _subsets(V: int) -> np.ndarray:
    """All 2^V subsets as a (2^V, V) bool array, by size then binary code (argmax picks a smallest maximiser)."""
    codes = np.arange(1 << V, dtype=np.int64)
    bits = ((codes[:, None] >> np.arange(V)[None, :]) & 1).astype(bool)
    return bits[np.lexsort((codes, bits.sum(axis=1)))]


class StaticSet:
    """One subset of the tool vocabulary exposed to every task (always-loaded tools).

    Fitting maximises the training tasks' mean true payoff
    ``mean_i [v_i(S & candidates_i) - lam * C_i(S & candidates_i)]`` over subsets S of the
    tools that appear among the training candidates: exactly, by enumerating all 2^V
    subsets, when V <= ``max_exact``; otherwise by a forward path (add the tool whose
    addition gives the highest mean payoff, down to the whole vocabulary, and keep the
    best set on the path: the exact payoff needs whole sets, so single additions can all
    lose until a set completes) followed by single add / drop moves while one gains.
    Ties go to the smaller set. Sufficient sets are given per task as vocabulary ids, so
    a tool's cost is its cost in the task that lists it.

    Parameters
    ----------
    max_exact : int
        Largest vocabulary solved by enumeration (at most 20).

    Attributes
    ----------
    tools_ : ndarray of int
        The chosen tool ids, sorted.
    value_ : float
        Mean training payoff of the chosen set.
    exact_ : bool
        Whether the set was found by enumeration.
    """

    def __init__(self, max_exact: int = 12):
        self.max_exact = max_exact

    def fit(
        self, tool_ids: np.ndarray, valid: np.ndarray, costs: np.ndarray, lam: float, sets: np.ndarray,
        present: np.ndarray, kind: str = "exact", member: np.ndarray | None = None, g_size: np.ndarray | None = None,
    ) -> "StaticSet":
        """Choose the set on training tasks.

        Parameters
        ----------
        tool_ids : int, shape (T, N)
            Vocabulary ids of the ranked candidates (-1 in padding).
        valid : bool, shape (T, N)
        costs : float, shape (T, N)
        lam : float
        sets, present : bool, shapes (T, K, N) and (T, K)
            Sufficient sets over ranked positions (:func:`camdf.core.sets.sufficient_sets`).
        kind : {"exact", "partial"}
        member : bool, shape (T, N)
            G_x membership (partial payoff only).
        g_size : int, shape (T,), optional
            |G_x| including tools off the list (partial payoff; default ``member.sum(1)``).

        Notes
        -----
        The forward path and the flips change one tool at a time, so each step scores all V
        moves from the current set in O(V + P), P the (task, set, tool) memberships: a
        move's payoff is the current one plus the tasks it completes (or breaks) and lam
        times the tool's summed cost. The whole search is O(V (V + P)), against
        O(V^3 T K) when every trial set is scored from scratch (what it did before, kept
        as the reference in ``tests/unit/core/reference.py``).
        """
        if not 0 <= self.max_exact <= 20:
            raise ValueError(f"max_exact: must be in [0, 20], got {self.max_exact!r}")
        if kind not in ("exact", "partial"):
            raise ValueError(f"kind: expected 'exact' or 'partial', got {kind!r}")
        if kind == "partial" and member is None:
            raise ValueError("member: the partial payoff needs the (T, N) membership of G_x")
        ids = np.where(valid, tool_ids, -1)
        vocab = np.unique(ids[ids >= 0])
        V = len(vocab)
        col = np.where(ids >= 0, np.searchsorted(vocab, np.maximum(ids, 0)), 0)
        payoff = _SetPayoff(col, valid, costs, lam, sets, present, kind, member, g_size, V)
        if V <= self.max_exact:
            table = _subsets(V)
            step = max(1, (1 << 22) // max(1, len(ids) * sets.shape[1]))
            values = np.concatenate([payoff.mean_payoff(table[lo:lo + step]) for lo in range(0, len(table), step)])
            best = table[int(np.argmax(values))]
            self.exact_ = True
        else:
            best = payoff.search(V)
            self.exact_ = False
        self.tools_ = vocab[best]
        self.value_ = float(payoff.mean_payoff(best[None])[0])
        return self

    def predict(self, tool_ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """The exposed mask (T, N): the chosen tools among each task's candidates."""
        if "tools_" not in vars(self):
            raise AttributeError("StaticSet: call fit before predict")
        return np.asarray(valid, dtype=bool) & np.isin(tool_ids, self.tools_)


class _SetPayoff:
    """The training tasks' payoff of tool subsets S of a vocabulary of V tools (what :class:`StaticSet` maximises).

    ``mean_payoff`` scores whole subsets, (M, V) bool -> (M,); ``search`` runs the greedy
    forward path and the single flips with one-tool moves scored incrementally.
    """

    def __init__(self, col, valid, costs, lam, sets, present, kind, member, g_size, V):
        T = len(col)
        self.T, self.V, self.lam, self.kind = T, V, float(lam), kind
        rows = np.broadcast_to(np.arange(T)[:, None], col.shape)
        # The cost of listing each tool in each task (a tool's cost is its cost in the task that lists it).
        occ = np.zeros((T, V))
        occ[rows[valid], col[valid]] = np.where(valid, costs, 0.0)[valid]
        self.occ = occ
        self.cost_of = occ.sum(axis=0)                       # (V,) summed over tasks
        # The (task, set, tool) memberships of the listed part of each sufficient set, without repeats.
        t_, k_, j_ = np.nonzero(sets & valid[:, None, :])
        K = sets.shape[1]
        key = np.unique((t_ * K + k_) * max(V, 1) + col[t_, j_])
        self.pair = key // max(V, 1)                         # flat (task, set) of each membership
        self.tool = key % max(V, 1)
        self.K = K
        self.size = np.bincount(self.pair, minlength=T * K)  # listed members of each set
        self.incidence = csr_matrix((np.ones(len(key), dtype=np.int64), (self.pair, self.tool)), shape=(T * K, V))
        self.present = np.asarray(present, dtype=bool).reshape(-1)
        if kind == "partial":
            mem = np.zeros((T, V))
            mem[rows[valid & member], col[valid & member]] = 1.0
            g = member.sum(axis=1) if g_size is None else np.asarray(g_size)
            self.mem, self.g = mem, g
            # value_t(S) = |G_t inside S| / g_t (1 when g_t = 0): linear in S.
            self.weight = (mem[g > 0] / g[g > 0][:, None]).sum(axis=0)
            self.free = float((g <= 0).sum())

    def mean_payoff(self, S: np.ndarray) -> np.ndarray:
        """Mean training payoff of each row of S, (M, V) bool -> (M,)."""
        Sf = S.astype(float)
        cost = self.occ @ Sf.T                                          # (T, M)
        if self.kind == "exact":
            held = (self.incidence @ S.T.astype(np.int64)).T                # listed members of each set inside S
            done = self.present[None, :] & (held == self.size[None, :])
            value = done.reshape(len(S), self.T, self.K).any(axis=2).T
        else:
            value = np.where(self.g[:, None] > 0, (self.mem @ Sf.T) / np.maximum(self.g, 1)[:, None], 1.0)
        return (value - self.lam * cost).mean(axis=0)

    def search(self, V: int) -> np.ndarray:
        """The greedy forward path (keeping its best set), then single add / drop moves while one gains."""
        T, K = self.T, self.K
        S = np.zeros(V, dtype=bool)
        held = np.zeros(T * K, dtype=np.int64)

        def total(S, held):
            """Summed payoff of S over tasks: tasks with a complete set (or their partial value) minus lam * cost."""
            if self.kind == "exact":
                value = float((self.present & (held == self.size)).reshape(T, K).any(axis=1).sum())
            else:
                value = self.free + float(self.weight[S].sum())
            return value - self.lam * float(self.cost_of[S].sum())

        def moves(S, held):
            """Change of the summed payoff when each tool is flipped alone (added if out of S, dropped if in), (V,)."""
            if self.kind == "partial":
                value = np.where(S, -self.weight, self.weight)
            else:
                done = self.present & (held == self.size)
                valued = done.reshape(T, K).any(axis=1)
                task = self.pair // K
                # Adding a tool values a task without a complete set when it is the last missing member of one.
                last = ~done[self.pair] & (held[self.pair] == self.size[self.pair] - 1) & self.present[self.pair] \
                    & ~S[self.tool] & ~valued[task]
                gained = np.unique(task[last] * V + self.tool[last])
                value = np.bincount(gained % V, minlength=V).astype(float)
                # Dropping a tool unvalues a task when it belongs to every complete set of the task.
                inside = done[self.pair]
                n_done = done.reshape(T, K).sum(axis=1)
                tv, count = np.unique(task[inside] * V + self.tool[inside], return_counts=True)
                lost = tv[count == n_done[tv // V]]
                value -= np.bincount(lost % V, minlength=V)
            return value - self.lam * np.where(S, -self.cost_of, self.cost_of)

        def flip(S, held, v):
            S = S.copy()
            S[v] = ~S[v]
            at = self.pair[self.tool == v]
            held = held.copy()
            held[at] += 1 if S[v] else -1
            return S, held

        current_value = total(S, held)
        best, best_value = S.copy(), current_value / T
        for _ in range(V):  # the forward path, down to the whole vocabulary
            values = np.where(S, -np.inf, (current_value + moves(S, held)) / T)
            v = int(np.argmax(values))
            S, held = flip(S, held, v)
            current_value = total(S, held)
            if values[v] > best_value + 1e-12:
                best, best_value = S.copy(), float(values[v])
        S = best
        held = self.incidence @ S.astype(np.int64)
        current_value = total(S, held)
        for _ in range(4 * V):  # single flips while one gains
            values = (current_value + moves(S, held)) / T
            v = int(np.argmax(values))
            if values[v] <= best_value + 1e-12:
                break
            S, held = flip(S, held, v)
            current_value, best_value = total(S, held), float(values[v])
        return S


# ---------------------------------------------------------------- Bits-over-Random


def hypergeometric_chance(n, g, K) -> np.ndarray:
    """P(a uniformly random K-subset of n candidates contains a given g-subset) = C(n - g, K - g) / C(n, K).

    0 when K < g; 1 when g = 0. Broadcasts over arrays of n, g, K (0 <= g <= n, 0 <= K <= n);
    computed with log-gamma, so it holds for catalogs of thousands of tools.
    """
    from scipy.special import gammaln

    n, g, K = (np.asarray(x, dtype=float) for x in (n, g, K))

    def log_choose(a, b):
        return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)

    ok = K >= g
    Ks = np.where(ok, K, g)
    with np.errstate(invalid="ignore"):  # depths beyond a list (K > n) give inf - inf; callers mask them
        return np.where(ok, np.exp(log_choose(n - g, Ks - g) - log_choose(n, Ks)), 0.0)


def bor_rewards(success: np.ndarray, n: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Per-task Bits-over-Random reward of every depth, (T, N + 1); -inf beyond n.

    ``r(K) = 1{success at K} * log2(1 / chance(K))`` with chance = :func:`hypergeometric_chance`
    (n, g, K): the bits by which the ranking beats a random shortlist of the same depth when
    it covers the task, 0 when it misses. The paper's metric is log2(success rate / chance)
    over queries; per query, a covered depth earns log2(1 / chance) and a missed one is
    scored 0 here (log2 0 would be -inf). ``g`` is the size of the set the chance refers to
    (|G_x|, or the smallest sufficient set when alternatives are counted as success);
    a success at K < g (by a smaller alternative) earns log2(1 / chance(n, K, K)).
    """
    T, width = success.shape
    K = np.arange(width)[None, :]
    gk = np.minimum(np.asarray(g)[:, None], K)
    chance = hypergeometric_chance(np.asarray(n)[:, None], gk, K)
    with np.errstate(divide="ignore"):
        bits = -np.log2(np.where(chance > 0, chance, 1.0))
    r = np.where(success, bits, 0.0)
    return np.where(K <= np.asarray(n)[:, None], r, -np.inf)


def bor_plugin_depths(p: np.ndarray, valid: np.ndarray, g_hat: np.ndarray | None = None) -> np.ndarray:
    """The depth maximising the expected BoR reward under membership probabilities, (T,).

    ``E_hat[r(K)] = S_hat(K) * log2(1 / chance(n, g_hat, K))`` over the depths K >= g_hat (a
    shallower list cannot hold g_hat tools, and the reward is not defined there),
    with ``S_hat(K) = prod_{j >= K} (1 - p_j)`` the plug-in chance that the ranked prefix
    covers G_x and ``g_hat = clip(round(sum_j p_j), 1, n)`` unless given. The first maximiser;
    costs and lambda do not enter (the peer's reward has no per-tool cost). The full list
    earns 0 bits (chance 1), so the rule exposes it only when no shallower depth earns more.
    """
    n = valid.sum(axis=1)
    if g_hat is None:
        g_hat = np.clip(np.rint(np.where(valid, p, 0.0).sum(axis=1)), 1, np.maximum(n, 1)).astype(np.int64)
    width = p.shape[1] + 1
    K = np.arange(width)[None, :]
    chance = hypergeometric_chance(n[:, None], np.minimum(g_hat[:, None], n[:, None]), np.minimum(K, n[:, None]))
    with np.errstate(divide="ignore"):
        bits = -np.log2(np.where(chance > 0, chance, 1.0))
    value = np.where(K >= np.minimum(g_hat, n)[:, None], sufficiency_curve(p, valid) * bits, -np.inf)
    value = np.where(K <= n[:, None], value, -np.inf)
    return np.argmax(value, axis=1)


class BoRDepth:
    """A per-query depth policy trained on the Bits-over-Random reward (after arXiv 2605.24660).

    What the paper describes: an agent that chooses the shortlist depth K per query, trained
    by reinforcement learning with the BoR reward, "deliberately simple", whose reward falls
    with depth as random chance rises, so that no depth penalty is engineered. What is
    assumed here (the paper's agent, state and training are not reproduced):

    - the state is a task-level feature vector X given by the caller (e.g. the ranker's
      score profile and membership summaries; only what is known at run time);
    - training is offline with full feedback: on a training task the reward of *every*
      depth is known (:func:`bor_rewards` from the task's success curve), so the
      contextual bandit reduces to estimating E[r(K) | X] for each depth K; this is done
      by one ridge regression per depth (a shared closed form), and the policy picks the
      depth of highest predicted reward within the task's list, the smallest on ties;
    - a missed depth earns 0 and chance uses |G_x| (or the smallest sufficient set), as in
      :func:`bor_rewards`; costs and lambda do not enter.

    Parameters
    ----------
    alpha : float
        Ridge penalty (features are standardised on the training tasks first).
    max_depth : int or None
        Depths considered, 0..max_depth (None: every depth of the longest training list).

    Attributes
    ----------
    coef_ : ndarray, shape (F + 1, D + 1)
        Intercept and weights of each depth's reward model.
    mean_, scale_ : ndarray, shape (F,)
        Feature standardisation.
    """

    def __init__(self, alpha: float = 1.0, max_depth: int | None = None):
        self.alpha = alpha
        self.max_depth = max_depth

    def fit(self, X: np.ndarray, success: np.ndarray, n: np.ndarray, g: np.ndarray) -> "BoRDepth":
        """Fit on training tasks: features X (T, F), success curves (T, N + 1), list sizes n (T,), |G| g (T,)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or len(X) != len(success):
            raise ValueError(f"X: expected shape (T, F) with T = {len(success)}, got {X.shape}")
        r = bor_rewards(success, n, g)
        D = success.shape[1] - 1 if self.max_depth is None else min(int(self.max_depth), success.shape[1] - 1)
        # A depth beyond a task's list exposes the whole list: its reward is the reward at n.
        r = np.where(np.isneginf(r), r[np.arange(len(r)), np.asarray(n)][:, None], r)[:, : D + 1]
        self.mean_ = X.mean(axis=0)
        self.scale_ = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        Z = np.hstack([np.ones((len(X), 1)), (X - self.mean_) / self.scale_])
        pen = float(self.alpha) * np.eye(Z.shape[1])
        pen[0, 0] = 0.0  # the intercept is not shrunk
        self.coef_ = np.linalg.solve(Z.T @ Z + pen, Z.T @ r)
        return self

    def predict(self, X: np.ndarray, n: np.ndarray) -> np.ndarray:
        """The chosen depth of each task, (T,), at most its list size n."""
        if "coef_" not in vars(self):
            raise AttributeError("BoRDepth: call fit before predict")
        Z = np.hstack([np.ones((len(X), 1)), (np.asarray(X, dtype=float) - self.mean_) / self.scale_])
        value = Z @ self.coef_
        value = np.where(np.arange(value.shape[1])[None, :] <= np.asarray(n)[:, None], value, -np.inf)
        return np.argmax(value, axis=1)

