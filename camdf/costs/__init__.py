"""Tool costs: base-cost regimes and the dispersion c_j(d) that makes them comparable."""

#: The regimes :mod:`camdf.costs.regimes` computes (named here, without numpy or pandas, for the config checks);
#: the measured ones come with ``measures`` (declared by the integrations).
REGIMES = ("uniform", "schema_tokens", "runtime_tokens", "tiers", "catalog", "permuted")
