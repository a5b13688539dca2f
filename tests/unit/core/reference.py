"""Plain per-task reference implementations the vectorised core is checked against."""

from __future__ import annotations


def prefix_payoffs_ref(tools, costs, required, alternatives, lam, kind):
    """U(A_t) for t = 0..n of one task, by brute force over sets."""
    out = []
    g = set(required)
    for t in range(len(tools) + 1):
        exposed = set(tools[:t])
        if kind == "exact":
            v = float(any(set(s) <= exposed for s in [required, *alternatives]))
        else:
            v = len(g & exposed) / len(g) if g else 1.0
        out.append(v - lam * sum(costs[:t]))
    return out


def deltas_ref(u):
    """Delta_t = U_t - max_{k>t} U_k for t = 0..n-1."""
    return [u[t] - max(u[t + 1:]) for t in range(len(u) - 1)]


def static_set_ref(tool_ids, valid, costs, lam, sets, present, kind="exact", member=None):
    """The static set's greedy search as it was first written: every trial set scored from scratch.

    An einsum over tasks x sets x the whole vocabulary for each of the V trials of each of
    the V steps (O(V^3 T K)); returns the chosen vocabulary ids. What
    :class:`camdf.core.set_baselines.StaticSet` (``max_exact=0``) must agree with.
    """
    import numpy as np

    ids = np.where(valid, tool_ids, -1)
    vocab = np.unique(ids[ids >= 0])
    V = len(vocab)
    col = np.where(ids >= 0, np.searchsorted(vocab, np.maximum(ids, 0)), 0)
    T = len(ids)
    rows = np.broadcast_to(np.arange(T)[:, None], ids.shape)
    occ = np.zeros((T, V))
    occ[rows[valid], col[valid]] = np.where(valid, costs, 0.0)[valid]
    inc = np.zeros((T, sets.shape[1], V))
    t_, k_, j_ = np.nonzero(sets & valid[:, None, :])
    inc[t_, k_, col[t_, j_]] = 1.0
    size = inc.sum(axis=2)
    if kind == "partial":
        mem = np.zeros((T, V))
        mem[rows[valid & member], col[valid & member]] = 1.0
        g = member.sum(axis=1)

    def mean_payoff(S):
        Sf = S.astype(float)
        cost = occ @ Sf.T
        if kind == "exact":
            covered = np.einsum("tkv,mv->tkm", inc, Sf)
            value = (present[:, :, None] & (covered >= size[:, :, None] - 0.5)).any(axis=1)
        else:
            value = np.where(g[:, None] > 0, (mem @ Sf.T) / np.maximum(g, 1)[:, None], 1.0)
        return (value - lam * cost).mean(axis=0)

    current = np.zeros(V, dtype=bool)
    best, best_value = current.copy(), float(mean_payoff(current[None])[0])
    for _ in range(V):
        trial = np.repeat(current[None], V, axis=0)
        trial[np.arange(V), np.arange(V)] = True
        values = np.where(current, -np.inf, mean_payoff(trial))
        current = trial[int(np.argmax(values))]
        if values.max() > best_value + 1e-12:
            best, best_value = current.copy(), float(values.max())
    for _ in range(4 * V):
        trial = np.repeat(best[None], V, axis=0)
        trial[np.arange(V), np.arange(V)] ^= True
        values = mean_payoff(trial)
        if values.max() <= best_value + 1e-12:
            break
        best, best_value = trial[int(np.argmax(values))], float(values.max())
    return vocab[best]


def fit_platt_groups_ref(z, y, groups, n_groups, prior, precision, max_iter=100, tol=1e-10):
    """MAP Platt scaling per group, every group stepped until the slowest converges (the plain Newton loop).

    What :func:`camdf.core.calibration.fit_platt_groups` must reproduce bit for bit.
    """
    import numpy as np

    prior = np.broadcast_to(np.asarray(prior, dtype=float), (n_groups, 2))
    theta = prior.copy()
    y = np.asarray(y, dtype=float)
    for _ in range(max_iter):
        eta = theta[groups, 0] * z + theta[groups, 1]
        mu = 0.5 * (1.0 + np.tanh(0.5 * eta))
        r, w = mu - y, mu * (1.0 - mu)
        ga = np.bincount(groups, r * z, n_groups) + precision * (theta[:, 0] - prior[:, 0])
        gb = np.bincount(groups, r, n_groups) + precision * (theta[:, 1] - prior[:, 1])
        haa = np.bincount(groups, w * z * z, n_groups) + precision
        hab = np.bincount(groups, w * z, n_groups)
        hbb = np.bincount(groups, w, n_groups) + precision
        det = haa * hbb - hab * hab
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        step = np.stack([da, db], axis=1)
        norm = np.sqrt((step ** 2).sum(axis=1, keepdims=True))
        step *= np.minimum(1.0, 4.0 / np.maximum(norm, 1e-300))
        theta -= step
        if np.abs(step).max() < tol:
            break
    return theta


def build_instances_ref(scores, required, costs, alternatives=None, vocab=()):
    """:func:`camdf.core.instances.build_instances` as first written: task by task, candidate by candidate.

    Returns the arrays it built (tools, scores, costs, member, n, folds, tool_ids, vocab) and each task's
    sufficient sets' positions (None for a set with a tool off the list)."""
    import numpy as np
    import pandas as pd

    df = scores.sort_values(["task_id", "rank"], kind="stable")
    order = pd.unique(scores["task_id"])
    groups = {tid: g for tid, g in df.groupby("task_id", sort=False)}
    T = len(order)
    n = np.array([len(groups[t]) for t in order], dtype=np.int64)
    N = int(n.max()) if T else 0
    tools = np.full((T, N), "", dtype=object)
    sc = np.full((T, N), np.nan)
    cost = np.zeros((T, N))
    member = np.zeros((T, N), dtype=bool)
    folds = np.zeros(T, dtype=np.int64)
    ids = {name: i for i, name in enumerate(vocab)}
    tool_ids = np.full((T, N), -1, dtype=np.int64)
    sets_pos = []
    cost_of = dict(costs)
    alternatives = alternatives or {}
    for i, tid in enumerate(order):
        g = groups[tid]
        names = g["tool"].to_numpy()
        k = len(names)
        tools[i, :k] = names
        sc[i, :k] = g["score"].to_numpy(dtype=float)
        cost[i, :k] = [cost_of[name] for name in names]
        folds[i] = int(g["fold"].iloc[0])
        pos_of = {name: j for j, name in enumerate(names)}
        req = list(required.get(tid, ()))
        member[i, [pos_of[r] for r in req if r in pos_of]] = True
        sets_pos.append([None if any(r not in pos_of for r in s) else [pos_of[r] for r in s]
                         for s in [req, *alternatives.get(tid, ())]])
        for j, name in enumerate(names):
            tool_ids[i, j] = ids.setdefault(name, len(ids))
    return {"tools": tools, "scores": sc, "costs": cost, "member": member, "n": n, "folds": folds,
            "tool_ids": tool_ids, "vocab": list(ids)}, sets_pos
