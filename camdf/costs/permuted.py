"""The permutation check's cost regime: another regime's costs, permuted across tools with a seeded permutation
(the same multiset of costs, the wrong assignment)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:
    from camdf.costs.measured import MeasuredRegime
    from camdf.data.model import Domain

#: The cost regimes this module declares, name -> its function here (found by camdf.costs from the source).
COST_REGIMES = {"permuted": "permuted"}


def permuted(domain: Domain, *, of: str = "schema_tokens", of_params: Mapping[str, Any] | None = None,
             random_state: int = 0, measures: Mapping[str, MeasuredRegime] | None = None) -> np.ndarray:
    """The base costs of regime ``of`` (with ``of_params``), permuted by a permutation seeded with
    ``random_state``."""
    from camdf.costs.regimes import base_costs

    if of == "permuted":
        raise ValueError("permuted costs: `of` must name another regime, not permuted")
    base = base_costs(domain, of, random_state=random_state, measures=measures, **(of_params or {}))
    return base.to_numpy()[np.random.default_rng(random_state).permutation(len(base))]
