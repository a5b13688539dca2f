"""The shipped camdf_risk stopper without scikit-learn: one request decided from plain numbers.

Loading a :class:`camdf.runtime.StopPolicy` unpickles scikit-learn estimators, and importing
scikit-learn takes about 2 s on a small machine: more than a shell call to ``camdf select``
should. A camdf_risk policy decides one request from a handful of numbers: the membership
model's coefficients, the conformal threshold and the calibration scores (for another
alpha). :func:`lean_numbers` writes them beside the pickled policy when the model is logged
(``artifacts/lean.json``); :class:`LeanRisk` reads them back with numpy alone and decides a
single request of up to :data:`~camdf.runtime.requests.SHORT_RANKING` tools with the same
functions the full policy uses (:func:`risk_selection`), so both give the same depth. A
batch, a longer ranking or another rule needs the full policy (:meth:`LeanRisk.select_batch`
answers None and :meth:`LeanRisk.full` loads it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from camdf.core.conformal import check_alpha, crc_threshold, task_risk_depth
from camdf.core.features import task_normalised_scores
from camdf.core.membership import membership_task
from camdf.runtime.requests import SHORT_RANKING, Request, Selection, check_lam, parse_all, parse_request

#: The artifact name of the lean numbers in a logged model.
LEAN_ARTIFACT = "lean"
FORMAT = 1


def risk_selection(r: Request, tau: float, membership: dict) -> Selection:
    """One parsed request decided by the camdf_risk rule: rank by score (ties keep the caller's
    order), membership probabilities (:func:`membership_task`), the shallowest depth whose miss
    risk is below ``tau`` (:func:`task_risk_depth`)."""
    scores = r.scores
    order = sorted(range(len(scores)), key=lambda j: -scores[j])
    s, ids = [scores[j] for j in order], [r.ids[j] for j in order]
    depth = task_risk_depth(membership_task(membership, task_normalised_scores(s), s, ids), tau)
    return Selection([r.tools[j] for j in order[:depth]], depth, [r.names[j] for j in order])


def lean_numbers(policy) -> dict | None:
    """The JSON-ready numbers of a fitted camdf_risk :class:`~camdf.runtime.StopPolicy` (None for other rules)."""
    if policy.method != "camdf_risk":
        return None
    rule = policy.rule_
    return {"format": FORMAT, "method": policy.method, "kind": policy.kind, "lam": float(policy.lam),
            "vocab": list(policy.vocab_), "costs": {k: float(v) for k, v in policy.costs_.items()},
            "membership": rule.membership_.numbers(), "threshold": float(rule.threshold_),
            "calibration_scores": [float(x) for x in rule.scores_]}


@dataclass
class LeanRisk:
    """A camdf_risk policy's decisions for single short requests, from :func:`lean_numbers`.

    ``full`` loads the complete :class:`~camdf.runtime.StopPolicy` for everything else.
    """

    numbers: dict
    full: Callable[[], Any] = field(repr=False)
    method: str = "camdf_risk"

    def __post_init__(self) -> None:
        n = self.numbers
        self.lam = float(n["lam"])
        self.index_ = {name: i for i, name in enumerate(n["vocab"])}
        self.costs_ = n["costs"]
        self._scores = np.asarray(n["calibration_scores"], dtype=float)

    @classmethod
    def read(cls, path: Path, full: Callable[[], Any]) -> "LeanRisk | None":
        """The lean policy of ``path`` (a model's ``lean.json``), or None when it is not one this code reads."""
        try:
            numbers = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(numbers, dict) or numbers.get("format") != FORMAT or numbers.get("method") != "camdf_risk":
            return None
        return cls(numbers, full)

    def threshold(self, alpha: float | None) -> float:
        return float(self.numbers["threshold"]) if alpha is None else crc_threshold(self._scores, alpha)

    def _check_alpha(self, alpha: Any, where: str) -> float | None:
        return None if alpha is None else check_alpha(alpha, where)

    def _parse(self, request: Any, where: str, numbers: bool = True) -> Request:
        return parse_request(request, where, self.index_, self.costs_, self._check_alpha, numbers)

    def select_batch(self, requests: list[dict], lam: float | None = None, alpha: float | None = None
                     ) -> list[Selection] | None:
        """:meth:`StopPolicy.select_batch <camdf.runtime.StopPolicy.select_batch>` for one request of at
        most ``SHORT_RANKING`` tools; None for anything else (use :meth:`full`). Refuses what it refuses."""
        if lam is not None:
            check_lam(lam, "lam")
        alpha = self._check_alpha(alpha, "alpha")
        if not isinstance(requests, (list, tuple)) or len(requests) != 1:
            return None
        (r,) = parse_all(requests, self._parse)
        if len(r.names) > SHORT_RANKING:
            return None
        return [risk_selection(r, self.threshold(alpha if r.alpha is None else r.alpha), self.numbers["membership"])]
