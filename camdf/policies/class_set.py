"""class_set: the set of highest expected payoff under a multinomial over the training tasks' sufficient-set classes.

The model (:class:`camdf.core.class_sets.ClassSetModel`) puts a probability on each training class
(a task's G_x with its alternatives, as tool ids) from the task's vocabulary score vector and
exposes the vocabulary subset of highest expected payoff; with no weight on the scores it is the
static set. Its two settings, the penalty C and the score feature, are chosen among :data:`GRID`
by inner cross-validation on realised training payoff, repeated :data:`INNER_REPEATS` times with
fresh inner folds and averaged (one draw of inner folds picks among close settings by noise: the
repeats halve that noise, at three times the fitting cost). Inner folds keep each task group whole
when the instances know the groups (:func:`camdf.core.instances.inner_folds`), so a setting that
copies the G_x of a template's other tasks is scored on templates it never saw. Ties go to the
first setting of the grid.

Above :data:`~camdf.core.class_sets.MAX_EXACT` tools (no enumeration) it is the static set
(:class:`~camdf.core.set_baselines.StaticSet`, the model's no-score limit, found by the static set's
forward path): an earlier cut kept the class frequencies there and decided by greedy unions of the
classes' sets, which add one set at a time and exposed nothing on telecom and BFCL, where no single
G_x pays its cost but their union does.

Designed (grid and repeats) after the main cells' earlier results had been seen, as cv_set's pool
was: the fold seeds' cells and the other domains are its check, not its design.

Run-time features: the ranking's scores, the tools' identities and costs, lambda. It reads no
membership probability. Not shipped (no portable form): the runtime's rules stay those of the cards
marked shippable.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from camdf.core.class_sets import MAX_EXACT, ClassSetModel, task_classes
from camdf.core.instances import inner_folds
from camdf.core.set_baselines import StaticSet
from camdf.core.sets import set_payoffs
from camdf.policies.base import StateBatch, StoppingRule

__all__ = ["ClassSet", "GRID", "INNER_REPEATS"]

#: The settings inner CV chooses among, (score feature, C), in tie order.
GRID: tuple[tuple[str, float], ...] = (("normalised", 0.1), ("normalised", 1.0), ("raw", 0.1), ("raw", 1.0))
#: Draws of inner folds whose realised payoffs are averaged per setting.
INNER_REPEATS = 3


class ClassSet(StoppingRule):
    """The class multinomial's expected-payoff set, its setting chosen by repeated inner CV (module docstring).

    Parameters
    ----------
    grid : tuple of (str, float)
    inner_folds : int
    inner_repeats : int
    random_state : int
        Seeds the inner folds (repeat r: ``random_state + 1000 r``).

    Attributes
    ----------
    choice_ : tuple of (str, float) or None
        The chosen (feature, C); None above ``MAX_EXACT`` tools.
    inner_payoffs_ : dict of str to float
        Each setting's mean realised inner-CV payoff (over the repeats).
    inner_split_ : {"group", "kfold", "none"}
    model_ : ClassSetModel or StaticSet
        The chosen setting refitted on every training task (the static set above ``MAX_EXACT`` tools).
    """

    picks_prefix = False

    def __init__(self, grid: tuple = GRID, inner_folds: int = 5, inner_repeats: int = INNER_REPEATS,
                 random_state: int = 0):
        self.grid = grid
        self.inner_folds = inner_folds
        self.inner_repeats = inner_repeats
        self.random_state = random_state

    def feature_names(self) -> tuple[str, ...]:
        return ()

    @staticmethod
    def _model(inst, classes, rows, feature: str, C: float, kind: str) -> ClassSetModel:
        return ClassSetModel(C, feature).fit(inst.scores[rows], inst.tool_ids[rows], inst.valid[rows],
                                             [classes[i] for i in rows], len(inst.vocab), kind)

    def fit(self, batch: StateBatch) -> "ClassSet":
        inst = batch.inst
        sets, present = inst.sufficient()
        self.inner_payoffs_, self.inner_split_ = {}, "none"
        if len(inst.vocab) > MAX_EXACT:  # the model's no-score limit, found by the static set's own search
            self.choice_ = None
            self.model_ = StaticSet().fit(inst.tool_ids, inst.valid, inst.costs, batch.lam, sets, present,
                                          _payoff_kind(batch.kind), inst.member, inst.g_size)
            return self
        classes = task_classes(inst.tool_ids, sets, present)
        everything = np.arange(inst.T)
        grid = tuple(self.grid)
        best = 0
        k = min(int(self.inner_folds), inst.T)  # a small training set (a user's split) gets as many folds as tasks
        if len(grid) > 1 and k >= 2:
            draws = [inner_folds(inst, k, self.random_state + 1000 * r) for r in range(self.inner_repeats)]
            self.inner_split_ = draws[0][1]
            for feature, C in grid:
                total = 0.0
                for folds, _ in draws:
                    folds = np.asarray(folds)
                    for f in np.unique(folds):
                        train, test = everything[folds != f], everything[folds == f]
                        model = self._model(inst, classes, train, feature, C, batch.kind)
                        sub = inst.subset(test)
                        mask = model.select(sub.scores, sub.tool_ids, sub.valid, sub.costs, batch.lam)
                        s, p = sub.sufficient()
                        total += float(set_payoffs(mask, sub.costs, batch.lam, _payoff_kind(batch.kind), s, p,
                                                   sub.member, sub.g_size).sum())
                self.inner_payoffs_[f"{feature}/{C:g}"] = total / (inst.T * len(draws))
            best = max(range(len(grid)), key=lambda k: (round(self.inner_payoffs_[f"{grid[k][0]}/{grid[k][1]:g}"], 12),
                                                        -k))
        self.choice_ = grid[best]
        self.model_ = self._model(inst, classes, everything, *self.choice_, batch.kind)
        return self

    def _subset(self, batch: StateBatch, **dials) -> np.ndarray:
        check_is_fitted(self)
        inst = batch.inst
        if isinstance(self.model_, StaticSet):
            return self.model_.predict(inst.tool_ids, inst.valid)
        return self.model_.select(inst.scores, inst.tool_ids, inst.valid, inst.costs, batch.lam)

    def tuned_parameters(self) -> dict[str, object]:
        check_is_fitted(self)
        if self.choice_ is None:
            return {"model": "static set", "n_tools": len(self.model_.tools_)}
        return {"model": "classes", "feature": self.choice_[0], "C": self.choice_[1]}


def _payoff_kind(kind: str) -> str:
    """The payoff inner CV scores: the recovery payoff's rules read the exact value (as the plug-in estimates do)."""
    return "partial" if kind == "partial" else "exact"
