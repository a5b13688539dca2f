"""Tool costs: base-cost regimes and the dispersion that makes them comparable.

A regime gives each acquirable tool a base cost b_j > 0 (:func:`base_costs`);
:func:`disperse` turns it into the cost used downstream,

    c_j(d) = (b_j / geomean(b)) ** d,  then scaled so that mean_j c_j = 1,

so lambda keeps one meaning across regimes and catalogs, d = 0 is the
homogeneous catalog (every c_j = 1) and d = 1 keeps the regime's ratios.

Regimes
-------
uniform
    b_j = 1.
schema_tokens
    Token length of the tool's definition as an agent receives it: the
    OpenAI-style JSON ``{"type": "function", "function": {name, description,
    parameters}}``, counted with the packaged MiniLM WordPiece tokenizer (no
    special tokens, no truncation).  A proxy for an LLM's BPE count: both scale
    with the text, and ratios between tools are what matter after dispersion.
measured regimes
    Declared by the integrations (:class:`camdf.costs.measured.MeasuredRegime`), e.g.
    ``execution``: tau2's mean output length in tokens when the tool runs on the gold calls
    of every task. The measuring functions come from the caller (``measures``, the
    integrations registry's :func:`~camdf.integrations.registry.cost_measures`): costs
    import no integration and name no measured regime.
tiers
    Hand-set weights: each tool gets the weight of the tier of the first
    ``fnmatch`` pattern its name matches (``conf/cost/tiers.yaml``).
catalog
    The ``cost`` fields of ``catalog.json``.
runtime_tokens
    The tokens of the tool's definition as the run-time counts them
    (:func:`camdf.costs.units.schema_tokens`, no tokenizer package), **not** dispersed or
    scaled: the costs are tokens and lambda is per token (``1 / task value``), the units of the
    default policy and of ``camdf fit`` (A30). ``d`` must be 1.
permuted
    Another regime's costs, permuted across tools with a seeded permutation
    (the permutation check: same multiset, wrong assignment).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Mapping

import numpy as np
import pandas as pd

from camdf.costs import REGIMES
from camdf.costs.measured import MeasuredRegime
from camdf.costs.tokens import count_tokens, tool_definition
from camdf.data.model import Domain

#: Significant decimals (of the binary mantissa) of every dispersed cost c_j(d) (see :func:`disperse`).
COST_DIGITS = 12
#: Regimes whose base costs are the costs themselves (in their own unit), never dispersed to mean 1.
UNSCALED = ("runtime_tokens",)


# --- regimes ----------------------------------------------------------------------------------


def _tiers(domain: Domain, weights: Mapping[str, float], assign: Mapping[str, str], default: str) -> np.ndarray:
    unknown = sorted({*assign.values(), default} - set(weights))
    if unknown:
        raise ValueError(f"tiers: tier(s) {unknown} have no weight; weights are given for {sorted(weights)}")
    out = []
    for name in domain.acquirable:
        tier = next((t for pattern, t in assign.items() if fnmatch.fnmatchcase(name, pattern)), default)
        out.append(float(weights[tier]))
    return np.array(out)


def _catalog(domain: Domain, missing: str) -> np.ndarray:
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


def base_costs(domain: Domain, regime: str, *, random_state: int = 0,
               measures: Mapping[str, MeasuredRegime] | None = None, **params) -> pd.Series:
    """Base cost b_j > 0 of each acquirable tool under a regime.

    Parameters
    ----------
    domain : Domain
    regime : {"uniform", "schema_tokens", "tiers", "catalog", "permuted"} or a measured regime of ``measures``
    random_state : int
        Seeds ``permuted``'s permutation.
    measures : mapping, optional
        Measured regime -> its :class:`~camdf.costs.measured.MeasuredRegime` (``measure(domain,
        **params)`` -> a frame indexed by tool with ``mean_tokens``):
        :func:`camdf.integrations.registry.cost_measures`. Needed by a measured regime (also
        under ``permuted``) only.
    **params
        ``schema_tokens``: ``tokenizer_path``.  a measured regime: the keyword
        arguments of its measuring function (its ``params``, e.g. ``environment``, ``cache_dir``).  ``tiers``: ``weights`` (tier ->
        weight > 0), ``assign`` (fnmatch pattern -> tier, first match wins),
        ``default`` (tier).  ``catalog``: ``missing`` ("error" or "median").
        ``permuted``: ``of`` (the regime to permute) and ``of_params`` (its params).

    Returns
    -------
    Series
        Index = acquirable tool names (catalog order), float64 values > 0.
    """
    tools = domain.acquirable
    by_name = domain.tool_by_name
    if regime == "uniform" and not params:
        values = np.ones(len(tools))
    elif regime == "schema_tokens" and set(params) <= {"tokenizer_path"}:
        defs = [json.dumps(tool_definition(by_name[n]), ensure_ascii=False) for n in tools]
        values = count_tokens(defs, params.get("tokenizer_path")).astype(np.float64)
    elif regime == "runtime_tokens" and not params:
        from camdf.costs.units import schema_tokens

        values = schema_tokens([{"name": t.name, "description": t.description, "parameters": t.parameters}
                                for t in (by_name[n] for n in tools)])
    elif regime in (measures or {}) and set(params) <= set(measures[regime].params):
        values = measures[regime].measure(domain, **params).loc[tools, "mean_tokens"].to_numpy(np.float64)
    elif regime == "tiers" and set(params) <= {"weights", "assign", "default"}:
        values = _tiers(domain, params.get("weights") or {}, params.get("assign") or {}, params.get("default", ""))
    elif regime == "catalog" and set(params) <= {"missing"}:
        values = _catalog(domain, params.get("missing", "error"))
    elif regime == "permuted" and set(params) <= {"of", "of_params"}:
        inner = params.get("of", "schema_tokens")
        if inner == "permuted":
            raise ValueError("permuted costs: `of` must name another regime, not permuted")
        base = base_costs(domain, inner, random_state=random_state, measures=measures,
                          **(params.get("of_params") or {}))
        values = base.to_numpy()[np.random.default_rng(random_state).permutation(len(base))]
    elif regime in REGIMES or regime in (measures or {}):
        raise ValueError(f"cost regime {regime}: unexpected parameter(s) {sorted(params)}")
    else:
        known = (*REGIMES, *(measures or {}))
        raise ValueError(f"cost regime: unknown regime {regime!r}, expected one of {', '.join(known)} (a measured "
                         "regime needs measures=camdf.integrations.registry.cost_measures())")
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
    """Costs of the acquirable tools: :func:`disperse` applied to :func:`base_costs` (same arguments); a regime of
    :data:`UNSCALED` gives its base costs as they are (``d`` must be 1)."""
    if regime in UNSCALED:
        if d != 1:
            raise ValueError(f"cost regime {regime}: its costs are tokens as counted, d must be 1, got {d:g}")
        return base_costs(domain, regime, random_state=random_state, measures=measures, **params).rename("cost")
    return disperse(base_costs(domain, regime, random_state=random_state, measures=measures, **params), d)


def coefficient_of_variation(c: pd.Series) -> float:
    """Population standard deviation over mean."""
    v = c.to_numpy(np.float64)
    return float(v.std() / v.mean())
