"""Execution-verified success: re-score each outcome's exposed set by the domain's sufficiency tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.core.instances import Instances
from camdf.data.model import Domain
from camdf.policies import methods


def verified_curves(domain: Domain, inst: Instances) -> dict | None:
    """Execution-verified sufficiency of every prefix, where the domain carries sufficiency tables.

    Returns None for domains that cannot be executed (telecom, BFCL, user domains);
    else ``{"prefix": (T, N + 1) bool, "table": (T, 2**k) bool, "bit": tool -> bit, "row": (T,) int}``.
    Tools outside the executable catalog (distractors) add nothing to a set.
    """
    from camdf.sufficiency import sufficiency_table

    if not domain.tasks or not all("sufficiency" in t.meta for t in domain.tasks):
        return None
    ids, tools, table = sufficiency_table(domain)
    bit = {name: 1 << i for i, name in enumerate(tools)}
    row_of = {tid: i for i, tid in enumerate(ids)}
    rows = np.array([row_of[t] for t in inst.task_ids])
    bits = np.array([[bit.get(name, 0) for name in line] for line in inst.tools], dtype=np.int64)
    masks = np.concatenate([np.zeros((inst.T, 1), np.int64), np.bitwise_or.accumulate(bits, axis=1)], axis=1)
    return {"prefix": table[rows[:, None], masks], "table": table, "bit": bit, "row": rows}


def verified_outcomes(outcomes: pd.DataFrame, inst: Instances, verified: dict, domain: Domain,
                      exposed: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Verified success of the set each outcome row exposed (a prefix, or, depth -1, G_x for an oracle set rule
    and for another set rule its sets ``exposed[method]``, (T, N) bool in the rows of ``inst``)."""
    pos = {tid: i for i, tid in enumerate(inst.task_ids)}
    i = outcomes["task_id"].map(pos).to_numpy()
    depth = outcomes["depth"].to_numpy()
    out = verified["prefix"][i, np.maximum(depth, 0)]
    sets = depth < 0  # a set rule's row: the rows do not carry the set, only the oracle's (G_x) is known here
    oracle = sets & outcomes["method"].isin(methods(family="oracle")).to_numpy()
    exposed = exposed or {}
    chosen = sets & ~oracle & outcomes["method"].isin(list(exposed)).to_numpy()
    if chosen.any():
        names = outcomes["method"].to_numpy()
        gmask = np.array([sum(verified["bit"].get(n, 0) for n in inst.tools[k][exposed[m][k]])
                          for k, m in zip(i[chosen], names[chosen])], dtype=np.int64)
        out[chosen] = verified["table"][verified["row"][i[chosen]], gmask]
    if (sets & ~oracle & ~chosen).any():
        raise ValueError(f"outcomes: verified success of the set rule {outcomes['method'][sets & ~oracle & ~chosen].iloc[0]!r} "
                         "needs its exposed sets, which outcome rows do not carry")
    if oracle.any():
        gmask = np.array([sum(verified["bit"].get(n, 0) for n in inst.tools[k][inst.member[k]]) for k in i[oracle]])
        out[oracle] = verified["table"][verified["row"][i[oracle]], gmask]
    return out.astype(bool)
