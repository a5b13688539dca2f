"""Tool costs: base-cost regimes and the dispersion c_j(d) that makes them comparable."""
