"""Tool costs: base-cost regimes and the dispersion that makes them comparable.

A regime gives each acquirable tool a base cost b_j > 0 (:func:`base_costs`);
:func:`disperse` turns it into the cost used downstream,

    c_j(d) = (b_j / geomean(b)) ** d,  then scaled so that mean_j c_j = 1,

so lambda keeps one meaning across regimes and catalogs, d = 0 is the
homogeneous catalog (every c_j = 1) and d = 1 keeps the regime's ratios.

Regimes, found by folder
------------------------
Each module of :mod:`camdf.costs` that prices tools declares ``COST_REGIMES`` (name -> its function
there): ``uniform``, ``tiers`` and ``catalog`` (:mod:`.given`), ``schema_tokens`` (:mod:`.tokens`),
``runtime_tokens`` (:mod:`.units`, in tokens and never dispersed: lambda is per token, ``d`` must be 1)
and ``permuted`` (:mod:`.permuted`, the permutation check). A regime's function takes the domain and its
parameters as keyword-only arguments (the config's ``cost.params``), and ``random_state`` / ``measures``
when it names them; a function marked ``unscaled`` gives costs in their own unit. A new regime is one
module here and its ``conf/cost/<name>.yaml`` (docs/layout.md).

Measured regimes are declared by the integrations (:class:`camdf.costs.measured.MeasuredRegime`), e.g.
``execution``: tau2's mean output length in tokens when the tool runs on the gold calls of every task.
The measuring functions come from the caller (``measures``, the integrations registry's
:func:`~camdf.integrations.registry.cost_measures`): costs import no integration and name no measured
regime.
"""

from __future__ import annotations

import functools
import importlib
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from camdf.costs import COST_REGIME_FUNCTIONS, CONTEXT, REGIMES, declared_arguments, declared_params
from camdf.costs.measured import MeasuredRegime
from camdf.data.model import Domain

#: Significant decimals (of the binary mantissa) of every dispersed cost c_j(d) (see :func:`disperse`).
COST_DIGITS = 12


@functools.lru_cache(maxsize=None)
def regime_function(regime: str) -> Callable[..., np.ndarray]:
    """The function of a declared regime (:data:`camdf.costs.COST_REGIME_FUNCTIONS`)."""
    module, function = COST_REGIME_FUNCTIONS[regime].split(":")
    return getattr(importlib.import_module(f"camdf.costs.{module}"), function)


def is_unscaled(regime: str) -> bool:
    """Whether a regime's base costs are the costs themselves, in their own unit (never dispersed to mean 1)."""
    return regime in COST_REGIME_FUNCTIONS and getattr(regime_function(regime), "unscaled", False)


def base_costs(domain: Domain, regime: str, *, random_state: int = 0,
               measures: Mapping[str, MeasuredRegime] | None = None, **params) -> pd.Series:
    """Base cost b_j > 0 of each acquirable tool under a regime.

    Parameters
    ----------
    domain : Domain
    regime : str
        A declared regime (:data:`camdf.costs.REGIMES`) or a measured regime of ``measures``.
    random_state : int
        Seeds ``permuted``'s permutation.
    measures : mapping, optional
        Measured regime -> its :class:`~camdf.costs.measured.MeasuredRegime` (``measure(domain,
        **params)`` -> a frame indexed by tool with ``mean_tokens``):
        :func:`camdf.integrations.registry.cost_measures`. Needed by a measured regime (also
        under ``permuted``) only.
    **params
        The regime's parameters (``cost.params``): a declared regime's keyword-only arguments but
        :data:`camdf.costs.CONTEXT` (:func:`camdf.costs.declared_params`), a measured regime's ``params``.

    Returns
    -------
    Series
        Index = acquirable tool names (catalog order), float64 values > 0.
    """
    tools = domain.acquirable
    measures = measures or {}
    if regime in COST_REGIME_FUNCTIONS:
        accepted, function = declared_params(regime), regime_function(regime)
        context = {k: v for k, v in zip(CONTEXT, (random_state, measures)) if k in declared_arguments(regime)}
    elif regime in measures:
        accepted = measures[regime].params
        function, context = measures[regime].measure, {}
    else:
        known = (*REGIMES, *measures)
        raise ValueError(f"cost regime: unknown regime {regime!r}, expected one of {', '.join(known)} (a measured "
                         "regime needs measures=camdf.integrations.registry.cost_measures())")
    unexpected = sorted(set(params) - set(accepted))
    if unexpected:
        raise ValueError(f"cost regime {regime}: unexpected parameter(s) {unexpected}; it accepts "
                         f"{', '.join(accepted) or 'none'}")
    values = function(domain, **params, **context)
    if regime not in COST_REGIME_FUNCTIONS:  # a measured regime's frame: the tools' mean tokens
        values = values.loc[tools, "mean_tokens"].to_numpy(np.float64)
    series = pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index(tools, name="tool"), name="base_cost")
    bad = series[~(np.isfinite(series) & (series > 0))]
    if len(bad):
        raise ValueError(f"cost regime {regime}: base costs must be finite and > 0, got {bad.to_dict()}")
    return series


def disperse(base: pd.Series, d: float) -> pd.Series:
    """c_j = (b_j / geomean(b)) ** d, scaled to mean 1.

    Parameters
    ----------
    base : Series
        Base costs, finite and > 0.
    d : float
        Dispersion >= 0: 0 gives equal costs; the coefficient of variation grows
        with d for any non-constant base.

    Returns
    -------
    Series
        Same index, mean 1 (up to floating point).
    """
    b = base.to_numpy(np.float64)
    if len(b) == 0 or not (np.isfinite(b) & (b > 0)).all():
        raise ValueError("disperse: base costs must be a non-empty series of finite numbers > 0")
    if not np.isfinite(d) or d < 0:
        raise ValueError(f"disperse: d must be a finite number >= 0, got {d}")
    z = np.log(b) - np.log(b).mean()
    # Shift the exponent by its maximum before exp(): the ratio is the same and nothing overflows.
    c = np.exp(d * z - (d * z).max())
    # Rounded so that numpy's SIMD paths (AVX2 or AVX-512: the last bit of exp, log and the mean)
    # cannot move a cost, and through it a stopper's decision, from one machine to another.
    mantissa, exponent = np.frexp(c / c.mean())  # exact; the mantissa is rounded, so tiny costs stay > 0
    return pd.Series(np.ldexp(np.round(mantissa, COST_DIGITS), exponent), index=base.index, name="cost")


def costs(domain: Domain, regime: str, d: float, *, random_state: int = 0,
          measures: Mapping[str, MeasuredRegime] | None = None, **params) -> pd.Series:
    """Costs of the acquirable tools: :func:`disperse` applied to :func:`base_costs` (same arguments); an
    unscaled regime (:func:`is_unscaled`) gives its base costs as they are (``d`` must be 1)."""
    if is_unscaled(regime):
        if d != 1:
            raise ValueError(f"cost regime {regime}: its costs are in their own unit (never dispersed), d must be 1, got {d:g}")
        return base_costs(domain, regime, random_state=random_state, measures=measures, **params).rename("cost")
    return disperse(base_costs(domain, regime, random_state=random_state, measures=measures, **params), d)


def coefficient_of_variation(c: pd.Series) -> float:
    """Population standard deviation over mean."""
    v = c.to_numpy(np.float64)
    return float(v.std() / v.mean())
