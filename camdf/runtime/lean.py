"""A shipped stopper without scikit-learn: one request decided from the rule's portable numbers.

Loading a full :class:`camdf.runtime.StopPolicy` rebuilds scikit-learn estimators, and importing
scikit-learn takes about 2 s on a small machine: more than a shell call to ``camdf select``
should. A rule with a portable form (``to_numbers()``; today camdf_risk: the membership
model's coefficients, the conformal threshold and the calibration scores) decides one request
from a handful of numbers. :func:`lean_numbers` writes them beside the full policy's numbers
(:mod:`camdf.runtime.portable`) when the model is logged (``artifacts/lean.json``); :class:`LeanPolicy` rebuilds the rule with its
card's portable class (``from_numbers``) and decides a single request of up to
:data:`~camdf.runtime.requests.SHORT_RANKING` tools through the same front door
(:class:`~camdf.runtime.door.FrontDoor`) and the same one-task arithmetic as the full policy,
so both give the same depth. A batch, a longer ranking or a rule without a portable form
needs the full policy (:meth:`LeanPolicy.select_batch` answers None and :meth:`LeanPolicy.full`
loads it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from camdf.common.dials import dial_names
from camdf.policies.registry import CARDS
from camdf.runtime.door import FrontDoor
from camdf.runtime.requests import Selection

#: The artifact name of the lean numbers in a logged model.
LEAN_ARTIFACT = "lean"
FORMAT = 3


def lean_numbers(policy) -> dict | None:
    """The JSON-ready numbers of a fitted :class:`~camdf.runtime.StopPolicy` whose rule has a portable form
    (``to_numbers``), else None."""
    rule = policy.rule_
    known = CARDS.get(policy.method)
    if known is None or known.portable is None or not hasattr(rule, "to_numbers"):
        return None  # no class of the card reads the numbers without scikit-learn
    return {"format": FORMAT, "method": policy.method, "kind": policy.kind, "lam": float(policy.lam),
            "dials": list(dial_names(rule.dials)), "vocab": list(policy.vocab_),
            "costs": {k: float(v) for k, v in policy.costs_.items()}, "rule": rule.to_numbers()}


@dataclass
class LeanPolicy:
    """A policy's decisions for single short requests, from :func:`lean_numbers` and its card's portable class.

    ``full`` loads the complete :class:`~camdf.runtime.StopPolicy` for everything else.
    """

    numbers: dict
    full: Callable[[], Any] = field(repr=False)

    def __post_init__(self) -> None:
        n = self.numbers
        self.method = n["method"]
        self.lam = float(n["lam"])
        self.rule = CARDS[self.method].portable().from_numbers(n["rule"])
        self.door = FrontDoor(self.method, tuple(n["dials"]), list(n["vocab"]), n["costs"], CARDS[self.method].defers)

    @classmethod
    def read(cls, path: Path, full: Callable[[], Any]) -> "LeanPolicy | None":
        """The lean policy of ``path`` (a model's ``lean.json``), or None when it is not one this code reads
        (another format, or a method without a registered portable form)."""
        from camdf.runtime.finite import _paths

        try:
            numbers = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        for where in _paths(numbers):  # a NaN here would decide silently: refused, not passed over
            raise ValueError(f"{path}: {where}: expected a finite number, got NaN or Infinity")
        if not isinstance(numbers, dict) or numbers.get("format") != FORMAT:
            return None
        known = CARDS.get(numbers.get("method")) if isinstance(numbers.get("method"), str) else None
        if known is None or known.portable is None:
            return None
        return cls(numbers, full)

    def select_batch(self, requests: list[dict], lam: float | None = None, **dials: Any) -> list[Selection] | None:
        """:meth:`StopPolicy.select_batch <camdf.runtime.StopPolicy.select_batch>` for one request of at
        most ``SHORT_RANKING`` tools; None for anything else (use :meth:`full`). Refuses what it refuses."""
        lam, dials = self.door.call_dials(lam, dials)
        if not isinstance(requests, (list, tuple)) or len(requests) != 1:
            return None
        parsed = self.door.parse(requests)
        if not self.door.is_short(parsed):
            return None
        r = parsed[0]
        lv, dv = self.door.settings(r, self.lam if lam is None else lam, dials)
        order, task = self.door.one_task(r, lv, self.numbers["kind"])
        return [self.door.selection(r, order, self.rule.decide_task(task, **dv))]
