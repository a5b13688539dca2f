"""The tables, one module per table (or per closely related group); :mod:`camdf.reporting.registry` lists them."""
