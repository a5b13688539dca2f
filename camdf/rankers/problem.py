"""What every scorer shares: the (task x tool) problem, cross-fitting groups and ranking.

A scorer maps a :class:`Problem` to a score matrix of shape (T, A) over the
domain's acquirable tools; entries outside a task's candidates are ignored. A scorer
that fits on G_x is marked with :func:`learned` and cross-fits over ``problem.folds``
(:func:`crossfit_groups`); :func:`camdf.rankers.score_domain` then scores it by the
nested cross-fit (one view per outer fold).
:func:`rank_matrix` turns scores into ranks within each task's candidates (ties
broken by an optional secondary score, then by catalog order) and
:func:`long_frame` into the long format every later stage reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from camdf.data.model import Domain
from camdf.core.folds import TRAIN_ONLY, fold_ids
from camdf.rankers.text import parameter_names, tool_document

COLUMNS = ["task_id", "tool", "score", "rank", "fold"]
#: The extra column of a learned scorer's frame: the outer fold whose training design a row belongs to.
VIEW = "view"


@dataclass(frozen=True)
class Problem:
    """A domain as arrays: T tasks x A acquirable tools (catalog order).

    Attributes
    ----------
    task_ids, texts : list of str, length T
    tools, docs : list of str, length A
        Tool names and the documents rankers read (:func:`~camdf.rankers.text.tool_document`).
    mask : ndarray of bool, shape (T, A)
        ``mask[t, j]``: tool j is a candidate of task t.
    membership : ndarray of bool, shape (T, A)
        ``membership[t, j]``: tool j is in G_x of task t.
    folds : ndarray of int, shape (T,)
    name : str
        The domain's name ("" when built by hand).
    descriptions, parameters : list, length A, or None
        Each tool's description and top-level parameter names, for rankers that read a tool's fields one by one
        (:mod:`camdf.rankers.loco`); None when built by hand.
    """

    task_ids: list[str]
    texts: list[str]
    tools: list[str]
    docs: list[str]
    mask: np.ndarray
    membership: np.ndarray
    folds: np.ndarray
    name: str = ""
    descriptions: list[str] | None = None
    parameters: list[tuple[str, ...]] | None = None

    @classmethod
    def from_domain(cls, domain: Domain, folds: np.ndarray) -> "Problem":
        folds = np.asarray(folds, dtype=int)
        if folds.shape != (len(domain.tasks),):
            raise ValueError(f"folds: expected shape ({len(domain.tasks)},) (one per task), got {folds.shape}")
        tools = domain.acquirable
        if not tools:
            raise ValueError(f"domain `{domain.name}`: no acquirable tools to rank")
        col = {name: j for j, name in enumerate(tools)}
        by_name = domain.tool_by_name
        mask = np.zeros((len(domain.tasks), len(tools)), dtype=bool)
        membership = np.zeros_like(mask)
        for t, task in enumerate(domain.tasks):
            mask[t, [col[n] for n in domain.candidates_of(task)]] = True
            membership[t, [col[n] for n in task.required]] = True
        return cls(
            task_ids=[t.id for t in domain.tasks],
            texts=[t.text for t in domain.tasks],
            tools=tools,
            docs=[tool_document(by_name[n]) for n in tools],
            mask=mask,
            membership=membership,
            folds=folds,
            name=domain.name,
            descriptions=[by_name[n].description for n in tools],
            parameters=[tuple(parameter_names(by_name[n])) for n in tools],
        )

    def subset(self, rows: np.ndarray) -> "Problem":
        """The problem restricted to the tasks ``rows`` (integer indices), every tool kept."""
        rows = np.asarray(rows, dtype=int)
        return replace(
            self,
            task_ids=[self.task_ids[i] for i in rows],
            texts=[self.texts[i] for i in rows],
            mask=self.mask[rows],
            membership=self.membership[rows],
            folds=self.folds[rows],
        )


def learned(scorer):
    """Mark ``scorer`` as one that fits on G_x (``supervised``, ``prior``, or a user's own).

    A learned scorer must score every task by a model fitted only on tasks of other
    folds (:func:`crossfit_groups` over ``problem.folds``);
    :func:`camdf.rankers.score_domain` then runs it once per outer fold on the training
    tasks alone (the nested cross-fit), so that no training task's score depends on the
    labels of the fold it is evaluated against.
    """
    scorer.learned = True
    return scorer


def is_learned(scorer) -> bool:
    """Whether ``scorer`` was marked by :func:`learned`."""
    return bool(getattr(scorer, "learned", False))


def crossfit_groups(
    folds: np.ndarray, inner_folds: int = 5, random_state: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs (tasks to score, tasks to fit on) such that no task is scored by a model that saw it.

    A task in fold ``f >= 0`` is scored by a model fitted on every task with fold
    ``!= f``.  Training-only tasks (fold -1, protocol ``split``) are scored by an
    inner ``inner_folds``-fold cross-fit *among the training-only tasks*, so their
    scores never use an evaluated task's labels either.

    Returns
    -------
    list of (ndarray, ndarray)
        Integer index arrays into the tasks; the scored arrays partition all tasks.
    """
    folds = np.asarray(folds, dtype=int)
    groups = [(np.flatnonzero(folds == f), np.flatnonzero(folds != f)) for f in fold_ids(folds)]
    train_only = np.flatnonzero(folds == TRAIN_ONLY)
    if len(train_only):
        k = max(1, min(inner_folds, len(train_only)))
        inner = np.random.default_rng(random_state).permutation(np.arange(len(train_only)) % k)
        for g in range(k):
            groups.append((train_only[inner == g], train_only[inner != g]))
    return groups


def rank_matrix(scores: np.ndarray, mask: np.ndarray, secondary: np.ndarray | None = None) -> np.ndarray:
    """Rank of every candidate within its task (1 = best); 0 outside the candidates.

    Order: higher ``scores`` first, then higher ``secondary``, then catalog order.

    Parameters
    ----------
    scores, secondary : ndarray of float, shape (T, A)
    mask : ndarray of bool, shape (T, A)

    Returns
    -------
    ndarray of int, shape (T, A)
    """
    scores = np.where(mask, scores, 0.0)
    if not np.isfinite(scores).all():
        raise ValueError("scores: every candidate needs a finite score")
    second = np.zeros_like(scores) if secondary is None else np.where(mask, secondary, 0.0)
    col = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.lexsort((col, -second, -scores, ~mask), axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[1] + 1)[None, :].repeat(len(scores), 0), axis=1)
    return np.where(mask, ranks, 0)


def long_frame(problem: Problem, scores: np.ndarray, ranks: np.ndarray) -> pd.DataFrame:
    """One row per (task, candidate), sorted by task order then rank (columns :data:`COLUMNS`)."""
    t_idx, j_idx = np.nonzero(problem.mask)
    order = np.lexsort((ranks[t_idx, j_idx], t_idx))
    t_idx, j_idx = t_idx[order], j_idx[order]
    return pd.DataFrame(
        {
            "task_id": np.asarray(problem.task_ids, dtype=object)[t_idx],
            "tool": np.asarray(problem.tools, dtype=object)[j_idx],
            "score": scores[t_idx, j_idx].astype(np.float64),
            "rank": ranks[t_idx, j_idx].astype(np.int64),
            "fold": problem.folds[t_idx].astype(np.int64),
        }
    ).astype({"task_id": str, "tool": str})


def evaluation_view(frame: pd.DataFrame) -> pd.DataFrame:
    """Every task's scores as a test task meets them: the frame itself without a :data:`VIEW` column.

    In a learned scorer's frame (one view per outer fold, see
    :func:`camdf.rankers.score_domain`) a task of fold f is taken from view f, where it
    is scored by the model fitted on every task outside f, and a training-only task
    (fold -1) from the first view, where it is scored by the cross-fit among the
    training-only tasks (the same in every view). Rows keep the task order and rank
    order of the frame, columns :data:`COLUMNS`.
    """
    if VIEW not in frame.columns:
        return frame
    first = frame[VIEW].min()
    keep = (frame[VIEW] == frame["fold"]) | ((frame["fold"] == TRAIN_ONLY) & (frame[VIEW] == first))
    position = pd.factorize(frame["task_id"])[0]  # each row's task in first-seen order
    keep = keep.to_numpy()
    order = np.flatnonzero(keep)[np.argsort(position[keep], kind="stable")]  # rank order kept within a task
    return frame[COLUMNS].take(order).reset_index(drop=True)


def training_view(frame: pd.DataFrame, fold: int) -> pd.DataFrame:
    """Every task's scores as the stopper evaluated on ``fold`` is trained on them (columns :data:`COLUMNS`).

    Rows of view ``fold`` of a learned scorer's frame; a frame without a :data:`VIEW`
    column is its own training view.
    """
    if VIEW not in frame.columns:
        return frame
    return frame[frame[VIEW] == fold][COLUMNS].reset_index(drop=True)
