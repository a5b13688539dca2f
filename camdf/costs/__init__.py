"""Tool costs: base-cost regimes and the dispersion c_j(d) that makes them comparable.

Cost regimes, found by folder: each module here that prices tools declares ``COST_REGIMES`` (name -> its
function there), read from the source (:func:`camdf.common.declared.declared`: nothing imported, so the
config checks know the names without numpy or pandas). The measured ones come with ``measures``
(declared by the integrations).
"""

import functools
from pathlib import Path

from camdf.common.declared import declared, keyword_only

#: What a regime's function receives from the call when its signature names it (never a ``cost.params`` key).
CONTEXT = ("random_state", "measures")


def declared_regimes(folder: Path | None = None) -> dict[str, str]:
    """Cost regime name -> ``"module:function"``: the ``COST_REGIMES`` each module of the folder (default this
    package's) declares."""
    return declared(folder or Path(__file__).parent, "COST_REGIMES", "cost regime")


#: Cost regime name -> ``"module:function"`` in this package (:func:`declared_regimes`).
COST_REGIME_FUNCTIONS = declared_regimes()
#: The regimes :mod:`camdf.costs.regimes` computes.
REGIMES = tuple(COST_REGIME_FUNCTIONS)


@functools.lru_cache(maxsize=None)
def declared_arguments(regime: str) -> tuple[str, ...]:
    """A declared regime's keyword-only arguments, read from the source (nothing imported)."""
    return keyword_only(Path(__file__).parent, COST_REGIME_FUNCTIONS[regime])


def declared_params(regime: str) -> tuple[str, ...]:
    """The ``cost.params`` a declared regime accepts: its keyword-only arguments but :data:`CONTEXT` (the config
    checks call it without importing the regime)."""
    return tuple(a for a in declared_arguments(regime) if a not in CONTEXT)
