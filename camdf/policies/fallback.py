"""The set rule that knows a miss can be recovered by searching the deferred tools (issue 43).

:class:`FallbackSet` is the plug-in set (:class:`camdf.policies.sets.PluginSet`: per-tool calibrated
membership probabilities and the list coverage q) whose estimated payoff is the recovery payoff of
:mod:`camdf.core.recovery`: what it preloads is paid, and a miss costs one search round and the
tools the search returns, with the search's chance of recovering the task
(:func:`camdf.core.recovery.fallback_set`; with the search rounds of the batch it was fitted on, each round's
chance and price counted). What it does not preload is deferred: still reachable
through the harness's search tool. The search's price and size are run-time dials; a rule fitted on
a batch built with a search (:attr:`camdf.policies.base.StateBatch.search`, the cell's ``search``)
takes that search's as its defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if

from camdf.core.recovery import SEARCH_COST, SEARCH_K, check_k, fallback_set, search_dials
from camdf.policies.base import StateBatch, check_fitted
from camdf.policies.plain import OneTask, fallback_task_set, fitted_search
from camdf.policies.sets import PluginSet, _carries

__all__ = ["FallbackSet"]


class FallbackSet(PluginSet):
    """Preload the set of highest estimated recovery payoff; defer the rest to the search.

    Parameters
    ----------
    search_cost : float
        Price of one search round in units of the task's mean candidate cost (a dial).
    search_k : int
        Tools a search returns (a dial).
    shrinkage, scale, carry_membership, random_state
        As :class:`~camdf.policies.sets.PluginSet`.

    Attributes
    ----------
    search_cost_, search_k_ : float, int
        The search the rule assumes: the training batch's (``batch.search``) when it has one, else the parameters.
    search_rounds_ : int
        The search rounds its estimate counts: the training batch's (``batch.search.rounds``), else 1.
    """

    dials = (SEARCH_COST, SEARCH_K)
    defers = True

    def __init__(self, search_cost: float = SEARCH_COST.default, search_k: float = SEARCH_K.default,
                 shrinkage: float = 10.0, scale: float = 1.0, carry_membership: bool = False, random_state: int = 0):
        super().__init__(shrinkage=shrinkage, scale=scale, carry_membership=carry_membership,
                         random_state=random_state)
        self.search_cost = search_cost
        self.search_k = search_k

    def fit(self, batch: StateBatch) -> "FallbackSet":
        super().fit(batch)
        if batch.search is not None:
            self.search_cost_, self.search_k_ = float(batch.search.cost), int(batch.search.k)
            self.search_rounds_ = int(batch.search.rounds)
        else:
            self.search_cost_ = SEARCH_COST.check(self.search_cost)
            self.search_k_ = check_k(self.search_k)
            self.search_rounds_ = 1
        return self

    def _subset(self, batch: StateBatch, search_cost: float | None = None, search_k: float | None = None) -> np.ndarray:
        inst = batch.inst
        check_fitted(self, "search_cost_")
        cost, k = search_dials(self.search_cost_, self.search_k_, search_cost, search_k)
        return fallback_set(self.calibrated(batch), inst.costs, inst.valid, batch.lam, cost, k,
                            coverage=self.coverage_, rounds=self.search_rounds_)

    def decide_task(self, task: OneTask, search_cost: float | None = None, search_k: float | None = None) -> list[int]:
        """:meth:`select` for one ranked task: the preloaded ranked positions, ascending (the rest is deferred)."""
        check_fitted(self, "search_cost_")
        cost, k = search_dials(self.search_cost_, self.search_k_, search_cost, search_k)
        return fallback_task_set(self._task_p(task), task.costs, task.lam, cost, k, self.coverage_,
                                 self.search_rounds_)

    @available_if(_carries)
    def to_numbers(self) -> dict[str, Any]:
        """The plug-in set's numbers and the search the rule assumes."""
        return {**super().to_numbers(), "search_cost_": float(self.search_cost_), "search_k_": int(self.search_k_),
                "search_rounds_": int(self.search_rounds_)}

    @classmethod
    def from_numbers(cls, numbers: dict[str, Any]) -> "FallbackSet":
        """The fitted rule of :meth:`to_numbers` (plain numbers, nothing unpickled)."""
        rule = super().from_numbers(numbers)
        rule.search_cost_, rule.search_k_, rule.search_rounds_ = fitted_search(numbers)
        return rule

    def tuned_parameters(self) -> dict[str, object]:
        return {**super().tuned_parameters(), "search_cost": self.search_cost_, "search_k": self.search_k_}
