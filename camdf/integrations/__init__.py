"""Everything that knows an outside benchmark package (tau2, BFCL), and the explicit registry of executable domains."""
