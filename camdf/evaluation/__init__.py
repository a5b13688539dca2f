"""Evaluate one cell: fit every method out of fold, score the outcomes, summarise them with paired statistics."""
