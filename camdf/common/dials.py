"""A run-time dial: a named setting a fitted rule takes per call, with its range and default.

A rule declares its dials on its class (``dials = (SOME_DIAL,)``); the registry, the config
check (``method.dials``), the evaluate and train stages, the shipped policy, the served model
and the CLI read them from there and pass values through by name, naming none.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dial:
    """A numeric run-time dial in the open interval ``(lo, hi)``.

    Attributes
    ----------
    name : str
        Its keyword in ``select(batch, **dials)``, in ``method.dials`` and in requests.
    default : float
        The value a rule takes when none is given (the rule's ``__init__`` default).
    lo, hi : float
        The open range of valid values.
    what : str
        What it is, for refusals and help ("a target miss rate").
    """

    name: str
    default: float
    lo: float
    hi: float
    what: str

    def check(self, value: Any, field: str | None = None) -> float:
        """``value`` as a float in ``(lo, hi)``, else ValueError naming ``field`` (default: the dial's name)."""
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or not self.lo < value < self.hi):
            raise ValueError(f"{field or self.name}: must be a number in ({self.lo:g}, {self.hi:g}), "
                             f"got {reprlib.repr(value)}")
        return float(value)

    def describe(self) -> str:
        """``name: what in (lo, hi), default x`` (help texts and refusals)."""
        return f"{self.name}: {self.what} in ({self.lo:g}, {self.hi:g}), default {self.default:g}"


def dial_names(dials: tuple[Dial, ...]) -> tuple[str, ...]:
    """The names of ``dials``, in order."""
    return tuple(d.name for d in dials)
