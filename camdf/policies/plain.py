"""Rules in plain Python, without scikit-learn: one ranked task, and the portable forms the lean loader reads.

:class:`OneTask` is what a rule's one-task fast path (``decide_task``) sees; a rule with a
portable form writes it with ``to_numbers()`` and its card's portable class rebuilds it with
``from_numbers()`` (here :class:`PortableRisk`), deciding with the same functions as the
fitted rule, so the lean ``camdf select`` and the full policy give the same depth.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from camdf.core.conformal import crc_threshold, task_risk_depth
from camdf.core.features import task_features
from camdf.core.membership import membership_task


class OneTask:
    """One ranked task in plain Python (the run-time fast path).

    Parameters
    ----------
    scores, costs : list of float
        In ranked order (descending score).
    ids : list of int
        The tools' vocabulary ids (-1: unseen), ranked.
    z : list of float
        The normalised scores (:func:`camdf.core.features.task_normalised_scores`).
    lam : float
    kind : {"exact", "partial"}
    text_len : float
        Length of the request's query.
    membership : callable or None
        ``membership(z, scores, ids) -> p``, the policy's membership estimates; computed on first
        use of :attr:`p` (a rule with its own membership model never asks).
    """

    __slots__ = ("scores", "costs", "ids", "z", "lam", "kind", "text_len", "_membership", "_p")

    def __init__(self, scores: list[float], costs: list[float], ids: list[int], z: list[float], lam: float,
                 kind: str, text_len: float, membership: Callable[..., list[float]] | None = None):
        self.scores, self.costs, self.ids, self.z = scores, costs, ids, z
        self.lam, self.kind, self.text_len = lam, kind, text_len
        self._membership, self._p = membership, None

    @property
    def p(self) -> list[float]:
        """The policy's membership estimate of each ranked tool."""
        if self._p is None:
            if self._membership is None:
                raise ValueError("task: this policy carries no membership model for the one-task path")
            self._p = self._membership(self.z, self.scores, self.ids)
        return self._p

    def features(self, names) -> list[list[float]]:
        """The task's state features ``names``, one list per feature over its depths (:func:`task_features`)."""
        return task_features(self.scores, self.costs, self.p, self.lam, self.kind, self.text_len, names, z=self.z)


def first_stop(stop: list[bool]) -> int:
    """The depth a walk over one task's stop decisions reaches: the first stop, else the whole list."""
    return stop.index(True) if True in stop else len(stop)


def risk_task_depth(membership: dict, tau: float, task: OneTask) -> int:
    """The risk rule's depth for one task: its membership probabilities (:func:`membership_task` of the
    rule's own model's numbers), then the shallowest depth whose miss risk is below ``tau``."""
    return task_risk_depth(membership_task(membership, task.z, task.scores, task.ids), tau)


class PortableRisk:
    """A fitted :class:`camdf.policies.risk.CamDFRisk` from its ``to_numbers()``: the one-task path, alpha a dial."""

    dials = ("alpha",)

    def __init__(self, membership: dict, threshold: float, calibration_scores: list[float], tie_seed: int):
        self.membership = membership
        self.threshold_ = float(threshold)
        self.scores_ = np.asarray(calibration_scores, dtype=float)
        self.tie_seed = tie_seed

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableRisk":
        return cls(numbers["membership"], numbers["threshold"], numbers["calibration_scores"], numbers["tie_seed"])

    def threshold(self, alpha: float | None = None) -> float:
        # The fitted rule's seed breaks ties exactly as CamDFRisk.threshold does, so both give one tau.
        return self.threshold_ if alpha is None else crc_threshold(self.scores_, alpha, self.tie_seed)

    def decide_task(self, task: OneTask, alpha: float | None = None) -> int:
        return risk_task_depth(self.membership, self.threshold(alpha), task)
