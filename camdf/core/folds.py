"""Fold assignment for cross-fitting: every task gets an out-of-fold decision.

Convention shared by the rankers, the membership models and the stoppers: a task in
fold ``f >= 0`` is scored/decided by models fitted on every task whose fold is not
``f``; fold ``-1`` marks training-only tasks that are never evaluated (the official
train split under ``protocol: split``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

TRAIN_ONLY = -1


def assign_folds(
    task_ids: Sequence[str],
    splits: Sequence[str | None] | None = None,
    n_folds: int = 5,
    protocol: str = "kfold",
    random_state: int | np.random.Generator = 0,
) -> np.ndarray:
    """Assign each task a fold.

    Parameters
    ----------
    task_ids : sequence of str, length T
    splits : sequence of str or None, length T, optional
        The domain's official split labels (needed for ``protocol="split"``).
    n_folds : int
        K for ``protocol="kfold"`` (>= 2).
    protocol : {"kfold", "split"}
        ``kfold``: a seeded random partition into K folds of near-equal size.
        ``split``: official ``test`` tasks form fold 0, every other task is
        training-only (fold -1).
    random_state : int or Generator

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
    raise ValueError(f"protocol: expected 'kfold' or 'split', got {protocol!r}")


def fold_ids(folds: np.ndarray) -> list[int]:
    """The evaluated folds (every fold but the training-only one), sorted."""
    return sorted(int(f) for f in np.unique(folds) if f != TRAIN_ONLY)
