"""Rules in plain Python, without scikit-learn: one ranked task, and the portable forms the lean loader reads.

:class:`OneTask` is what a rule's one-task fast path (``decide_task``) sees; a rule with a
portable form writes it with ``to_numbers()`` and its card's portable class rebuilds it with
``from_numbers()`` (here :class:`PortableRisk`), deciding with the same functions as the
fitted rule, so the lean ``camdf select`` and the full policy give the same depth.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from camdf.core.conformal import ALPHA, crc_threshold, read_scores, task_risk_depth
from camdf.core.features import task_features
from camdf.core.membership import membership_task
from camdf.core.recovery import SEARCH_COST, SEARCH_K, check_k, fallback_set, search_dials


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


def task_positions(rule: Any, task: "OneTask", **dials: Any) -> list[int]:
    """A rule's one-task decision (``decide_task``) as the ranked positions it exposes, ascending: a prefix
    rule's depth d is positions 0 .. d-1, a set rule's decision already is its positions."""
    decision = rule.decide_task(task, **dials)
    return list(range(int(decision))) if rule.picks_prefix else decision


def first_stop(stop: list[bool]) -> int:
    """The depth a walk over one task's stop decisions reaches: the first stop, else the whole list."""
    return stop.index(True) if True in stop else len(stop)


def risk_task_depth(membership: dict, tau: float, task: OneTask) -> int:
    """The risk rule's depth for one task: its membership probabilities (:func:`membership_task` of the
    rule's own model's numbers), then the shallowest depth whose miss risk is below ``tau``."""
    return task_risk_depth(membership_task(membership, task.z, task.scores, task.ids), tau)


class PortableRisk:
    """A fitted :class:`camdf.policies.risk.CamDFRisk` from its ``to_numbers()``: the one-task path, alpha a dial."""

    dials = (ALPHA,)
    picks_prefix = True

    def __init__(self, membership: dict, threshold: float, calibration_scores: list[float], tie_seed: int):
        self.membership = membership
        self.threshold_ = float(read_scores(float(threshold)))  # the JSON-safe sentinels back to +-inf
        self.scores_ = read_scores(calibration_scores)
        self.tie_seed = tie_seed

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableRisk":
        return cls(numbers["membership"], numbers["threshold"], numbers["calibration_scores"], numbers["tie_seed"])

    def threshold(self, alpha: float | None = None) -> float:
        # The fitted rule's seed breaks ties exactly as CamDFRisk.threshold does, so both give one tau.
        return self.threshold_ if alpha is None else crc_threshold(self.scores_, alpha, self.tie_seed)

    def decide_task(self, task: OneTask, alpha: float | None = None) -> int:
        return risk_task_depth(self.membership, self.threshold(alpha), task)


# ---------------------------------------------------------------- set rules


def calibrate_task(calibrator: dict | None, p: list[float], ids: list[int]) -> list[float]:
    """:meth:`camdf.core.calibration.ToolCalibrator.predict` for one task in plain Python.

    ``calibrator`` holds ``global`` (a, b), ``coef`` (per tool id) and ``counts`` (None: no
    calibration); a tool id that is -1, beyond the fitted ids or unseen in fitting gets the
    global map. Same clipping, logit and ``0.5 * (1 + tanh(x / 2))`` as the array version.
    """
    if calibrator is None:
        return list(p)
    from camdf.core.calibration import EPS

    (ga, gb), coef, counts = calibrator["global"], calibrator["coef"], calibrator["counts"]
    out = []
    for x, i in zip(p, ids):
        a, b = (coef[i][0], coef[i][1]) if 0 <= i < len(coef) and counts[i] > 0 else (ga, gb)
        x = min(max(float(x), EPS), 1.0 - EPS)
        out.append(0.5 * (1.0 + math.tanh(0.5 * (a * (math.log(x) - math.log1p(-x)) + b))))
    return out


def plugin_task_set(p: list[float], costs: list[float], lam: float, kind: str, coverage: float) -> list[int]:
    """The plug-in set of one task (:func:`camdf.core.sets.plugin_set`): exposed ranked positions, ascending.

    exact: :func:`camdf.core.sets.task_plugin_set`; partial: ``{j : q * w_j > lam * c_j}`` with
    the ratio weights ``w_j = p_j / sum p`` (:func:`camdf.core.sets.partial_weights`).
    """
    from camdf.core.sets import task_plugin_set

    if kind == "exact":
        return sorted(task_plugin_set(p, costs, lam, coverage))
    pv = [min(max(float(x), 0.0), 1.0) for x in p]
    total = sum(pv)
    if total <= 0:
        return []
    return [j for j, (x, c) in enumerate(zip(pv, costs)) if coverage * (x / total) > lam * c]


def fallback_task_set(p: list[float], costs: list[float], lam: float, search_cost: float, k: int,
                      coverage: float, rounds: int = 1) -> list[int]:
    """The fallback set of one task (:func:`camdf.core.recovery.fallback_set`): the preloaded ranked positions,
    ascending (the rest is deferred to the search)."""
    mask = fallback_set(np.array([p], dtype=float), np.array([costs], dtype=float), np.ones((1, len(p)), dtype=bool),
                        lam, search_cost, k, coverage=coverage, rounds=rounds)
    return np.flatnonzero(mask[0]).tolist()


def fitted_search(numbers: dict[str, Any]) -> tuple[float, int, int]:
    """``(search_cost_, search_k_, search_rounds_)`` of a fallback set's ``to_numbers()``, checked (rounds: 1 when
    absent, a rule fitted before its estimate counted rounds); ValueError naming the field."""
    try:
        return (SEARCH_COST.check(numbers["search_cost_"], "rule.search_cost_"),
                check_k(numbers["search_k_"], "rule.search_k_"),
                check_k(numbers.get("search_rounds_", 1), "rule.search_rounds_"))
    except KeyError as err:
        raise ValueError(f"rule.{err.args[0]}: missing from the fallback set's numbers") from None


def risk_task_set(membership: dict, calibrator: dict | None, tau: float, task: OneTask) -> list[int]:
    """The risk-controlled set of one task: its own model's probabilities, calibrated, then
    :func:`camdf.core.risk_sets.task_risk_set` at ``tau``; exposed ranked positions, ascending."""
    from camdf.core.risk_sets import task_risk_set

    return sorted(task_risk_set(calibrated_task(membership, calibrator, task), task.costs, tau))


def calibrated_task(membership: dict, calibrator: dict | None, task: OneTask) -> list[float]:
    """One task's membership probabilities from a rule's own model (``membership``), calibrated: one per ranked
    tool."""
    return calibrate_task(calibrator, membership_task(membership, task.z, task.scores, task.ids), task.ids)


class PortablePluginSet:
    """A fitted :class:`camdf.policies.sets.PluginSet` (or ``LearnedSet``) from its ``to_numbers()``: the one-task path."""

    dials = ()
    picks_prefix = False

    def __init__(self, membership: dict, calibrator: dict, coverage: float):
        self.membership, self.calibrator, self.coverage = membership, calibrator, float(coverage)

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortablePluginSet":
        return cls(numbers["membership"], numbers["calibrator"], numbers["coverage"])

    def decide_task(self, task: OneTask) -> list[int]:
        p = calibrated_task(self.membership, self.calibrator, task)
        return plugin_task_set(p, task.costs, task.lam, task.kind, self.coverage)


class PortableFallbackSet(PortablePluginSet):
    """A fitted :class:`camdf.policies.fallback.FallbackSet` from its ``to_numbers()``: the one-task path, the
    search's price and size dials (defaults: the search the rule was fitted for)."""

    dials = (SEARCH_COST, SEARCH_K)

    def __init__(self, membership: dict, calibrator: dict, coverage: float, search_cost: float, search_k: int,
                 search_rounds: int = 1):
        super().__init__(membership, calibrator, coverage)
        self.search_cost_, self.search_k_, self.search_rounds_ = search_cost, search_k, search_rounds

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableFallbackSet":
        return cls(numbers["membership"], numbers["calibrator"], numbers["coverage"], *fitted_search(numbers))

    def decide_task(self, task: OneTask, search_cost: float | None = None, search_k: float | None = None) -> list[int]:
        """The preloaded ranked positions, ascending (the rest is deferred): as ``FallbackSet.decide_task``."""
        cost, k = search_dials(self.search_cost_, self.search_k_, search_cost, search_k)
        return fallback_task_set(calibrated_task(self.membership, self.calibrator, task), task.costs, task.lam, cost,
                                 k, self.coverage, self.search_rounds_)


class PortableRiskSet:
    """A fitted :class:`camdf.policies.sets.RiskSetRule` from its ``to_numbers()``: the one-task path, alpha a dial."""

    dials = (ALPHA,)
    picks_prefix = False

    def __init__(self, membership: dict, calibrator: dict | None, threshold: float, calibration_scores: list[float],
                 u: float):
        self.membership, self.calibrator = membership, calibrator
        self.threshold_ = float(read_scores(float(threshold)))  # the JSON-safe sentinels back to +-inf
        self.scores_ = read_scores(calibration_scores)
        self.u = float(u)

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableRiskSet":
        return cls(numbers["membership"], numbers["calibrator"], numbers["threshold"], numbers["calibration_scores"],
                   numbers["u"])

    def threshold(self, alpha: float | None = None) -> float:
        from camdf.core.risk_sets import crc_threshold_randomised

        # The fitted rule's kept draw u makes both give one tau for every alpha.
        return self.threshold_ if alpha is None else crc_threshold_randomised(self.scores_, alpha, self.u)

    def decide_task(self, task: OneTask, alpha: float | None = None) -> list[int]:
        return risk_task_set(self.membership, self.calibrator, self.threshold(alpha), task)


def cv_set_task(numbers: dict, task: OneTask, sets: Any = None) -> list[int]:
    """The set of :class:`camdf.policies.cv_set.CVSet` for one task from its numbers: exposed ranked positions, ascending.

    ``numbers`` holds the chosen member's ``model`` (plugin, seen, neighbours), ``source`` (score,
    membership or None), ``calibrator``, ``sets`` and ``coverage``, and the rule's ``membership``
    model (None: the task's own probabilities, ``task.p``).
    """
    from camdf.core.score_calibration import score_calibrate_task
    from camdf.core.set_models import neighbour_set_weights, seen_set_weights, task_union_set
    from camdf.core.vector_calibration import vector_calibrate_task

    model, source, q = numbers["model"], numbers["source"], float(numbers["coverage"])
    p = None
    if source == "score":
        p = score_calibrate_task(numbers["calibrator"], task.scores, task.ids)
    elif source == "vector":
        p = vector_calibrate_task(numbers["calibrator"], task.scores, task.ids)
    elif source == "membership":
        raw = task.p if numbers.get("membership") is None else \
            membership_task(numbers["membership"], task.z, task.scores, task.ids)
        p = calibrate_task(numbers["calibrator"], raw, task.ids)
    if model == "plugin":
        return plugin_task_set(p, task.costs, task.lam, task.kind, q)
    if sets is None:
        sets = cv_set_sets(numbers)
    if model == "seen":
        weights = seen_set_weights(sets.support_, p, task.ids, sets.padded_)
    else:
        weights = neighbour_set_weights(sets.train_, sets.sets_, int(sets.k), task.z, task.ids, sets.norms_)
    return task_union_set(weights, task.costs, task.lam, task.kind, q)


def cv_set_sets(numbers: dict) -> Any:
    """The chosen cv_set member's set model (seen sets or neighbours) from its numbers; None for a plug-in member."""
    from camdf.core.set_models import NeighbourSets, SeenSets

    if numbers["model"] == "plugin":
        return None
    return (SeenSets if numbers["model"] == "seen" else NeighbourSets).from_numbers(numbers["sets"])


class PortableCVSet:
    """A fitted :class:`camdf.policies.cv_set.CVSet` from its ``to_numbers()``: the one-task path."""

    dials = ()
    picks_prefix = False

    def __init__(self, numbers: dict):
        self.numbers = numbers
        self.sets = cv_set_sets(numbers)

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableCVSet":
        missing = [k for k in ("model", "source", "calibrator", "sets", "coverage", "membership") if k not in numbers]
        if missing:
            raise ValueError(f"rule: the cv_set numbers lack {missing}")
        return cls(numbers)

    def decide_task(self, task: OneTask) -> list[int]:
        return cv_set_task(self.numbers, task, self.sets)
