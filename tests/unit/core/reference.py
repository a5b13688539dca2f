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
