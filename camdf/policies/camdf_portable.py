"""A fitted CAM-DF rule from its numbers, deciding one task with numpy alone (the lean ``camdf select``).

:class:`PortableCamDF` is the portable class of the CAM-DF cards (``camdf``, ``camdf_transfer``; the
registry's ``portable``): its :meth:`~PortableCamDF.from_numbers` reads what
:meth:`camdf.policies.camdf.CamDF.to_numbers` wrote - the parameters, the booster in LightGBM's text
format - and evaluates the booster with :class:`camdf.policies.trees.Forest`, which gives LightGBM's raw
scores to the last bit. Its one-task decision is :meth:`CamDF.decide_task <camdf.policies.camdf.CamDF.decide_task>`'s
(the same design matrix, stop at the first state whose raw score is >= 0), without scikit-learn, pandas
or LightGBM.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from camdf.core.features import FEATURES
from camdf.policies.plain import OneTask, first_stop
from camdf.policies.trees import Forest, read_forest

#: The parameters of CamDF.to_numbers this class reads; the others (grid, folds, seeds, threads) shaped the fit only.
_PARAMS = {"features", "tool_identity", "weighted", "target", "grid", "inner_folds", "random_state", "predict_jobs"}


class PortableCamDF:
    """A fitted :class:`camdf.policies.camdf.CamDF` from its ``to_numbers()``: the one-task path.

    Parameters
    ----------
    features : tuple of str
        The state features of the design matrix, in its order.
    tool_identity : bool
        The next tool's vocabulary id is the design matrix's last column.
    forest : Forest or None
        The booster (None with ``constant``).
    constant : bool or None
        The constant decision of a rule fitted on one class (stop everywhere or nowhere).
    """

    dials = ()
    picks_prefix = True

    def __init__(self, features: tuple[str, ...], tool_identity: bool, forest: Forest | None,
                 constant: bool | None = None):
        self.features, self.tool_identity = tuple(features), bool(tool_identity)
        self.forest, self.constant = forest, constant

    def feature_names(self) -> tuple[str, ...]:
        return self.features

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "PortableCamDF":
        """The rule of ``CamDF.to_numbers()``; ValueError naming the field (``rule.params.features``,
        ``rule.booster``: :func:`camdf.policies.trees.read_forest`) when it is not one."""
        params = numbers.get("params") if isinstance(numbers, dict) else None
        if not isinstance(params, dict) or set(params) - _PARAMS:
            raise ValueError(f"rule.params: expected CamDF parameters (some of {sorted(_PARAMS)})")
        names = params.get("features")
        names = [f for f in FEATURES if f != "lam"] if names is None else names
        if not isinstance(names, list) or not names or any(not isinstance(f, str) or f not in FEATURES
                                                           for f in names):
            raise ValueError(f"rule.params.features: expected a list of state features (some of {list(FEATURES)})")
        identity = params.get("tool_identity", True)
        if not isinstance(identity, bool):
            raise ValueError("rule.params.tool_identity: expected true or false")
        constant = numbers.get("constant")
        if constant is not None:
            if not isinstance(constant, bool):
                raise ValueError("rule.constant: expected true, false or null")
            return cls(tuple(names), identity, None, constant)
        booster = numbers.get("booster")
        if booster is None:
            raise ValueError("rule.booster: a CamDF rule needs a booster or a constant decision")
        return cls(tuple(names), identity, read_forest(booster, "rule.booster", len(names) + identity))

    def stops(self, X: np.ndarray) -> np.ndarray:
        """Stop decisions for rows of the design matrix, (S,) bool: the booster's raw score >= 0 (P(stop) >= 1/2,
        or a regressed Delta >= 0), as :meth:`CamDF._predict <camdf.policies.camdf.CamDF._predict>`."""
        if self.forest is None:
            return np.full(len(X), bool(self.constant))
        return self.forest.raw_score(X) >= 0

    def decide_task(self, task: OneTask) -> int:
        """The depth of one ranked task: its first state the booster stops at (else its length)."""
        X = np.array(task.features(self.features), dtype=np.float64).T
        if self.tool_identity:
            X = np.column_stack([X, np.array(task.ids).astype(float)])
        return first_stop(self.stops(X).tolist())
