"""Fold assignment for cross-fitting: every task gets an out-of-fold decision.

Convention shared by the rankers, the membership models and the stoppers: a task in
fold ``f >= 0`` is scored/decided by models fitted on every task whose fold is not
``f``; fold ``-1`` marks training-only tasks that are never evaluated (the official
train split under ``protocol: split``). Under ``protocol: group`` tasks that share a
``group`` (one template) always land in the same fold, so no template is on both
sides of a fit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.model_selection import GroupKFold

TRAIN_ONLY = -1


def assign_folds(
    task_ids: Sequence[str],
    splits: Sequence[str | None] | None = None,
    n_folds: int = 5,
    protocol: str = "kfold",
    random_state: int | np.random.Generator = 0,
    *,
    groups: Sequence[str | None] | None = None,
) -> np.ndarray:
    """Assign each task a fold.

    Parameters
    ----------
    task_ids : sequence of str, length T
    splits : sequence of str or None, length T, optional
        The domain's official split labels (needed for ``protocol="split"``).
    n_folds : int
        K for ``protocol="kfold"`` and ``protocol="group"`` (>= 2).
    protocol : {"kfold", "split", "group"}
        ``kfold``: a seeded random partition into K folds of near-equal size.
        ``split``: official ``test`` tasks form fold 0, every other task is
        training-only (fold -1).
        ``group``: a seeded partition into K folds that never splits a group:
        the distinct groups are relabelled by a seeded permutation and dealt,
        largest first, to the fold with the fewest tasks so far (scikit-learn's
        ``GroupKFold``), so fold sizes stay balanced and ties between groups of
        equal size (and so the partition) change with ``random_state``.
    random_state : int or Generator
    groups : sequence of str or None, length T, optional
        Each task's group (``Task.group``), needed for ``protocol="group"``; a task
        whose group is None is a group of its own.

    Returns
    -------
    ndarray of int, shape (T,)
    """
    n = len(task_ids)
    if protocol == "kfold":
        if n_folds < 2:
            raise ValueError(f"n_folds: must be >= 2, got {n_folds}")
        if n < n_folds:
            raise ValueError(f"n_folds: {n_folds} folds need at least as many tasks, got {n}")
        rng = np.random.default_rng(random_state)
        folds = np.arange(n) % n_folds
        return rng.permutation(folds)
    if protocol == "split":
        if splits is None or len(splits) != n:
            raise ValueError("splits: protocol 'split' needs one split label per task")
        folds = np.where(np.asarray([s == "test" for s in splits]), 0, TRAIN_ONLY)
        if not (folds == 0).any() or not (folds == TRAIN_ONLY).any():
            raise ValueError("splits: protocol 'split' needs both test and non-test tasks")
        return folds
    if protocol == "group":
        return _group_folds(groups, n, n_folds, random_state)
    raise ValueError(f"protocol: expected 'kfold', 'split' or 'group', got {protocol!r}")


def group_codes(groups: Sequence[str | None]) -> np.ndarray:
    """Integer group labels: named groups in sorted order, then one new label per task whose group is None."""
    named = sorted({g for g in groups if g is not None})
    code = {g: i for i, g in enumerate(named)}
    out = np.empty(len(groups), dtype=int)
    next_code = len(named)
    for i, g in enumerate(groups):
        if g is None:
            out[i], next_code = next_code, next_code + 1
        else:
            out[i] = code[g]
    return out


def count_groups(groups: Sequence[str | None]) -> int:
    """Distinct groups of ``groups``, a task whose group is None counting as one of its own (:func:`group_codes`)."""
    return int(group_codes(groups).max()) + 1 if len(groups) else 0


def _group_folds(
    groups: Sequence[str | None] | None, n: int, n_folds: int, random_state: int | np.random.Generator
) -> np.ndarray:
    if groups is None or len(groups) != n:
        got = "none" if groups is None else len(groups)
        raise ValueError(f"groups: protocol 'group' needs one group label (or None) per task: {n} tasks, got {got}")
    if n_folds < 2:
        raise ValueError(f"folds.n_folds: must be >= 2, got {n_folds}")
    codes = group_codes(groups)
    n_groups = int(codes.max()) + 1 if n else 0
    if n_groups < n_folds:
        raise ValueError(
            f"folds.n_folds: protocol 'group' with {n_folds} folds needs at least {n_folds} distinct groups, "
            f"the tasks have {n_groups} (a task without a group counts as one); lower folds.n_folds "
            f"to at most {n_groups} or use another protocol"
        )
    rng = np.random.default_rng(random_state)
    permuted = rng.permutation(n_groups)[codes]  # a seeded relabelling decides ties between equal-size groups
    folds = np.empty(n, dtype=int)
    splitter = GroupKFold(n_splits=n_folds)
    for f, (_, test) in enumerate(splitter.split(np.zeros((n, 1)), groups=permuted)):
        folds[test] = f
    return folds


def fold_ids(folds: np.ndarray) -> list[int]:
    """The evaluated folds (every fold but the training-only one), sorted."""
    return sorted(int(f) for f in np.unique(folds) if f != TRAIN_ONLY)
