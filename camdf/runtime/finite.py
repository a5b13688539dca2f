"""Numbers read from JSON are finite: Python's json accepts ``NaN`` and ``Infinity``; these name where they are."""

from __future__ import annotations

import math
from typing import Any, Iterator


def _paths(node: Any, prefix: str = "") -> Iterator[str]:
    """The dotted path (``membership.coef[0]``) of every non-finite number in parsed JSON."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, f"{prefix}[{i}]")
    elif isinstance(node, float) and not math.isfinite(node):
        yield prefix or "the value"
