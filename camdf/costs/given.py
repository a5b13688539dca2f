"""Cost regimes whose costs are given, not measured: every tool alike, hand-set tiers, the catalog's own prices.

uniform
    b_j = 1.
tiers
    Hand-set weights: each tool gets the weight of the tier of the first ``fnmatch`` pattern its
    name matches (``conf/cost/tiers.yaml``).
catalog
    The ``cost`` fields of ``catalog.json``.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Mapping

import numpy as np

if TYPE_CHECKING:
    from camdf.data.model import Domain

#: The cost regimes this module declares, name -> its function here (found by camdf.costs from the source).
COST_REGIMES = {"uniform": "uniform", "tiers": "tiers", "catalog": "catalog"}


def uniform(domain: Domain) -> np.ndarray:
    """Every acquirable tool costs 1."""
    return np.ones(len(domain.acquirable))


def tiers(domain: Domain, *, weights: Mapping[str, float] | None = None, assign: Mapping[str, str] | None = None,
          default: str = "") -> np.ndarray:
    """The weight of each tool's tier: the tier of the first ``assign`` pattern (fnmatch) its name matches, else
    ``default``; ValueError naming the tiers that have no weight."""
    weights, assign = weights or {}, assign or {}
    unknown = sorted({*assign.values(), default} - set(weights))
    if unknown:
        raise ValueError(f"tiers: tier(s) {unknown} have no weight; weights are given for {sorted(weights)}")
    out = []
    for name in domain.acquirable:
        tier = next((t for pattern, t in assign.items() if fnmatch.fnmatchcase(name, pattern)), default)
        out.append(float(weights[tier]))
    return np.array(out)


def catalog(domain: Domain, *, missing: str = "error") -> np.ndarray:
    """The ``cost`` of each tool in ``catalog.json``; a tool without one: an error, or the median of the given
    costs (``missing: median``)."""
    by_name = domain.tool_by_name
    given = {n: by_name[n].cost for n in domain.acquirable}
    absent = [n for n, c in given.items() if c is None]
    if absent and missing == "error":
        raise ValueError(
            f"catalog costs: domain `{domain.name}` gives no `cost` for {absent} "
            "(set it in catalog.json, or pass missing=median)"
        )
    if missing not in ("error", "median"):
        raise ValueError(f"catalog costs: missing must be 'error' or 'median', got {missing!r}")
    known = [c for c in given.values() if c is not None]
    if not known:
        raise ValueError(f"catalog costs: domain `{domain.name}` gives no `cost` for any acquirable tool")
    fill = float(np.median(known))
    return np.array([fill if c is None else c for c in given.values()], dtype=np.float64)
