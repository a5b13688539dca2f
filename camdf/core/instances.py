"""Ranked instances: every task's ranking, costs and success curve as padded arrays.

All hot paths (payoffs, labels, features, stopping rules) work on these arrays for
every task and every prefix at once. A task ``i`` has ``n[i]`` ranked candidates;
position ``j`` (0-based) holds its ``j+1``-th ranked tool, and the prefix of depth
``t`` (``0 <= t <= n[i]``) exposes positions ``0 .. t-1``. Arrays are padded to
``N = max(n)`` columns (``N + 1`` for per-depth curves).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Instances:
    """A batch of ranked tasks.

    Attributes
    ----------
    task_ids : ndarray of str, shape (T,)
    tools : ndarray of object, shape (T, N)
        Tool names in rank order, ``""`` in padding.
    scores : ndarray of float, shape (T, N)
        Ranker scores, non-increasing along each row; NaN in padding.
    costs : ndarray of float, shape (T, N)
        Costs c_j(d) of the ranked tools; 0 in padding.
    member : ndarray of bool, shape (T, N)
        Whether the tool is in the task's required set G_x.
    success : ndarray of bool, shape (T, N + 1)
        Exact success of each prefix depth: some sufficient set lies inside A_t.
    partial : ndarray of float, shape (T, N + 1)
        Partial value |G_x & A_t| / |G_x| of each prefix depth (1 where G_x is empty).
    n : ndarray of int, shape (T,)
        Number of ranked candidates per task.
    folds : ndarray of int, shape (T,)
    text_len : ndarray of float, shape (T,)
        Task text length in characters.
    tool_ids : ndarray of int, shape (T, N)
        Index of each tool in ``vocab`` (-1 in padding), for tool-identity features.
    vocab : list of str
        Every tool name that appears, in first-seen order.
    train_views : dict int -> Instances, or None
        A learned ranker's training views (the nested cross-fit of
        :func:`camdf.rankers.score_domain`): for each evaluated fold f, the same tasks
        with the rankings the fold-f stopper is trained on; the rows of fold f equal
        these instances' rows. None when the ranker learns nothing: these rankings are
        then every fold's training view.
    groups : ndarray of object, shape (T,), or None
        Each task's fold group (``Task.group``, or the cell's ``folds.group_by`` field; None: a group of its
        own), for a rule's inner cross-validation that keeps a group whole (:func:`inner_folds`); None when
        the caller gives no groups (a run-time fit on a user's tasks).
    """

    task_ids: np.ndarray
    tools: np.ndarray
    scores: np.ndarray
    costs: np.ndarray
    member: np.ndarray
    success: np.ndarray
    partial: np.ndarray
    n: np.ndarray
    folds: np.ndarray
    text_len: np.ndarray
    tool_ids: np.ndarray
    vocab: list[str] = field(default_factory=list)
    train_views: dict[int, "Instances"] | None = field(default=None, repr=False)
    sets: np.ndarray | None = field(default=None, repr=False)
    present: np.ndarray | None = field(default=None, repr=False)
    groups: np.ndarray | None = field(default=None, repr=False)

    @property
    def T(self) -> int:
        return len(self.task_ids)

    @property
    def N(self) -> int:
        return self.tools.shape[1]

    @property
    def valid(self) -> np.ndarray:
        """(T, N) bool: position j holds a real tool."""
        return np.arange(self.N)[None, :] < self.n[:, None]

    def sufficient(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sets (T, K, N), present (T, K))``: the sufficient sets, or G_x alone (its listed part) without them.

        Without ``sets`` a task whose required tools are not all listed cannot be told apart
        from one whose G_x is listed; such hand-built instances score G_x's listed part.
        """
        if self.sets is not None:
            return self.sets, self.present
        return self.member[:, None, :].copy(), np.ones((self.T, 1), dtype=bool)

    @property
    def g_size(self) -> np.ndarray:
        """|G_x| per task, (T,) int: the listed required tools and those :func:`truncate` cut off the list.

        Read from the partial curve, whose denominator it is (``partial[i, n[i]]`` = listed / |G_x|):
        a set scored with it (:func:`camdf.core.sets.set_partial`) gets the partial value its prefix
        gets. A task whose required tools are all cut off counts 1 (any set holds none of them).
        """
        listed = self.member.sum(axis=1)
        whole = self.partial[np.arange(self.T), self.n]
        ratio = np.rint(listed / np.where(whole > 0, whole, 1.0)).astype(np.int64)
        return np.where(listed > 0, ratio, np.where(whole >= 1.0, 0, 1))

    @property
    def valid_depth(self) -> np.ndarray:
        """(T, N + 1) bool: depth t is reachable (t <= n)."""
        return np.arange(self.N + 1)[None, :] <= self.n[:, None]

    def subset(self, rows: np.ndarray) -> "Instances":
        """The instances of the selected rows (boolean mask or indices)."""
        return replace(
            self,
            task_ids=self.task_ids[rows],
            tools=self.tools[rows],
            scores=self.scores[rows],
            costs=self.costs[rows],
            member=self.member[rows],
            success=self.success[rows],
            partial=self.partial[rows],
            n=self.n[rows],
            folds=self.folds[rows],
            text_len=self.text_len[rows],
            tool_ids=self.tool_ids[rows],
            train_views=self.map_views(lambda v: v.subset(rows)),
            sets=None if self.sets is None else self.sets[rows],
            present=None if self.present is None else self.present[rows],
            groups=None if self.groups is None else self.groups[rows],
        )

    def cost_free_inputs(self) -> tuple:
        """What a fit that reads no cost and no lambda sees of these instances (the rankings: scores, lengths and
        tool ids; the membership labels; the vocabulary's size): the key under which such fits are kept for the
        cells of a lambda x d grid (:func:`camdf.common.fit_memo.shared_fits`)."""
        return self.scores, self.n, self.tool_ids, self.member, len(self.vocab)

    def training_view(self, fold: int) -> "Instances":
        """The rankings the stopper evaluated on ``fold`` is trained on (see ``train_views``)."""
        return self if self.train_views is None else self.train_views[fold]

    def map_views(self, apply) -> dict[int, "Instances"] | None:
        """``train_views`` with ``apply`` (Instances -> Instances) applied to each view; None without views."""
        return None if self.train_views is None else {f: apply(v) for f, v in self.train_views.items()}

    def with_costs(self, cost_of: dict[str, float]) -> "Instances":
        """Same rankings with other costs (looked up by tool name)."""
        costs = np.zeros_like(self.costs)
        valid = self.valid
        costs[valid] = [cost_of[name] for name in self.tools[valid]]
        return replace(self, costs=costs, train_views=self.map_views(lambda v: v.with_costs(cost_of)))


def curves_from_sets(
    member: np.ndarray, positions_of_sets: list[list[np.ndarray]], n: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Success and partial curves from each task's sufficient sets.

    Parameters
    ----------
    member : (T, N) bool
        Membership of each ranked position in G_x.
    positions_of_sets : list (T) of list of int arrays
        For each task, the ranked positions of each sufficient set (G_x first, then
        the alternatives); a set with a tool outside the ranking is passed as None.
    n : (T,) int

    Returns
    -------
    success : (T, N + 1) bool
        ``t >= cover`` with cover = min over sets of (max position + 1), 0 for an empty set.
    partial : (T, N + 1) float
        cumulative members / |G_x|, 1 where G_x is empty.
    """
    T, N = member.shape
    big = N + 1
    cover = np.full(T, big, dtype=np.int64)
    for i, sets in enumerate(positions_of_sets):
        for pos in sets:
            if pos is None:
                continue
            cover[i] = min(cover[i], int(pos.max()) + 1 if len(pos) else 0)
    depth = np.arange(N + 1)
    success = depth[None, :] >= cover[:, None]
    g = member.sum(axis=1)
    cum = np.concatenate([np.zeros((T, 1)), np.cumsum(member, axis=1)], axis=1)
    partial = np.where(g[:, None] > 0, cum / np.maximum(g, 1)[:, None], 1.0)
    return success, partial


def sufficient_sets(positions_of_sets: Sequence[Sequence[np.ndarray | None]], N: int) -> tuple[np.ndarray, np.ndarray]:
    """Each task's sufficient sets as a padded bool array.

    Parameters
    ----------
    positions_of_sets : list (T) of list of int arrays or None
        For each task, the ranked positions of each sufficient set (G_x first, then the
        alternatives), as :func:`camdf.core.instances.curves_from_sets` takes them; a set
        with a tool outside the ranking is passed as None.
    N : int
        Padded width (the instances' number of columns).

    Returns
    -------
    sets : ndarray of bool, shape (T, K, N)
        ``sets[i, k, j]``: position j belongs to the k-th sufficient set of task i;
        K = the largest number of sets of any task (at least 1).
    present : ndarray of bool, shape (T, K)
        False for padding and for sets that are not on the list (None).
    """
    T = len(positions_of_sets)
    K = max([1, *(len(s) for s in positions_of_sets)])
    sets = np.zeros((T, K, N), dtype=bool)
    present = np.zeros((T, K), dtype=bool)
    for i, task_sets in enumerate(positions_of_sets):
        for k, pos in enumerate(task_sets):
            if pos is None:
                continue
            pos = np.asarray(pos, dtype=np.int64)
            if len(pos) and (pos.min() < 0 or pos.max() >= N):
                raise ValueError(f"positions_of_sets[{i}][{k}]: positions must lie in [0, {N}), got {pos.tolist()}")
            sets[i, k, pos] = True
            present[i, k] = True
    return sets, present


def _set_positions(order, rows, cols, codes, uniques, required, alternatives, N: int):
    """G_x as a (T, N) mask over the ranked positions, and each task's sufficient sets' positions (None for a set
    with a tool off its list), from the rows (task row, position, tool code into ``uniques``) of every candidate."""
    # The position of every (task, tool) a sufficient set names (the last when a tool is listed twice), matched on
    # integer keys (task row x number of tools + tool code), not on (row, name) pairs of every candidate.
    code_of = {name: c for c, name in enumerate(uniques)}
    U = max(len(uniques), 1)
    wanted = {i * U + code_of[r] for i, tid in enumerate(order)
              for s in [required.get(tid, ()), *alternatives.get(tid, ())] for r in s if r in code_of}
    keys = rows * U + codes
    hit = np.isin(keys, np.fromiter(wanted, dtype=np.int64, count=len(wanted))) if wanted else np.zeros(len(rows), bool)
    pos = {(int(i), uniques[c]): int(j) for i, c, j in zip(rows[hit], codes[hit], cols[hit])}
    member = np.zeros((len(order), N), dtype=bool)
    sets_pos: list[list[np.ndarray | None]] = []
    for i, tid in enumerate(order):
        req = list(required.get(tid, ()))
        member[i, [pos[(i, r)] for r in req if (i, r) in pos]] = True
        sets_pos.append([None if any((i, r) not in pos for r in s) else np.array([pos[(i, r)] for r in s], dtype=int)
                         for s in [req, *alternatives.get(tid, ())]])
    return member, sets_pos


def build_instances(
    scores: pd.DataFrame,
    required: dict[str, Sequence[str]],
    costs: dict[str, float] | pd.Series,
    alternatives: dict[str, Sequence[Sequence[str]]] | None = None,
    texts: dict[str, str] | None = None,
    vocab: Sequence[str] = (),
    groups: dict[str, str | None] | None = None,
) -> Instances:
    """Pad a long-format score table into :class:`Instances`.

    Parameters
    ----------
    scores : DataFrame
        Columns ``task_id, tool, score, rank, fold``; one row per (task, candidate).
    required : dict task id -> tool names (G_x)
    costs : mapping tool -> cost c_j(d) > 0
    alternatives : dict task id -> list of other sufficient sets, optional
    texts : dict task id -> text, optional (for the text-length feature)
    vocab : sequence of str, optional
        Tool names whose ids come first, in this order (a learned ranker's training views
        share the test rankings' ids); other tools follow in first-seen order.
    groups : dict task id -> group (str or None), optional
        Each task's fold group (:attr:`Instances.groups`).
    """
    import pandas as pd  # imported here: the run-time stopper loads Instances without pandas

    # Column operations over every (task, candidate) row at once (a catalog cell holds ~10^6 of them): names are
    # factorized once (codes, first-seen uniques; no Python string per row) and every look-up indexes the uniques by
    # code; only the sufficient sets, a few tools per task, are walked task by task.
    task_code, order = pd.factorize(scores["task_id"])  # the caller's task order: first seen
    order = np.asarray(order, dtype=object)
    T = len(order)
    by_row = np.lexsort((scores["rank"].to_numpy(), task_code))  # task by task, rank by rank (stable)
    rows = task_code[by_row].astype(np.int64)
    n = np.bincount(rows, minlength=T).astype(np.int64)
    N = int(n.max()) if T else 0
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(n) - n, n)  # each row's position within its task
    codes, uniques = pd.factorize(scores["tool"].take(by_row))
    if (task_code < 0).any() or (codes < 0).any():
        raise ValueError("scores: a candidate row without a task id or a tool name")
    codes, uniques = codes.astype(np.int64), np.asarray(uniques, dtype=object)  # first seen: by task, by rank
    tools = np.full((T, N), "", dtype=object)
    tools[rows, cols] = uniques[codes]
    sc = np.full((T, N), np.nan)
    sc[rows, cols] = scores["score"].to_numpy(dtype=float)[by_row]
    cost_of = pd.Series(costs, dtype=float) if not isinstance(costs, pd.Series) else costs.astype(float)
    unpriced = ~pd.Index(uniques).isin(cost_of.index)
    if unpriced.any():
        raise KeyError(uniques[np.flatnonzero(unpriced)[0]])
    cost = np.zeros((T, N))
    cost[rows, cols] = cost_of.reindex(uniques).to_numpy(dtype=float)[codes]
    folds = scores["fold"].to_numpy()[by_row][np.cumsum(n) - n].astype(np.int64)  # each task's first (best-ranked) row
    ids: dict[str, int] = {name: i for i, name in enumerate(vocab)}
    for name in uniques:
        ids.setdefault(name, len(ids))
    tool_ids = np.full((T, N), -1, dtype=np.int64)
    tool_ids[rows, cols] = np.array([ids[name] for name in uniques], dtype=np.int64)[codes]
    vocab = list(ids)
    member, sets_pos = _set_positions(order, rows, cols, codes, uniques, required, alternatives or {}, N)
    success, partial = curves_from_sets(member, sets_pos, n)
    sets, present = sufficient_sets(sets_pos, N)
    texts = texts or {}
    return Instances(
        task_ids=np.asarray(order, dtype=object),
        tools=tools,
        scores=sc,
        costs=cost,
        member=member,
        success=success,
        partial=partial,
        n=n,
        folds=folds,
        text_len=np.array([len(texts.get(t, "")) for t in order], dtype=float),
        tool_ids=tool_ids,
        vocab=list(vocab),
        sets=sets,
        present=present,
        groups=None if groups is None else np.array([groups.get(t) for t in order], dtype=object),
    )


def truncate(inst: Instances, top_k: int | None) -> Instances:
    """Keep only the ``top_k`` best-ranked candidates of every task.

    Tasks with at most ``top_k`` candidates are unchanged. Cutting positions only cuts
    columns, so the curves stay exact without the sufficient sets: a depth
    ``t <= top_k`` exposes the same prefix as before, and the new full depth of task
    ``i`` is ``min(n[i], top_k)``. ``partial`` keeps its original denominator, so it
    is still |G_x & A_t| / |G_x| with the required tools cut off the list counted in
    |G_x| (they can no longer be acquired); ``member`` marks only the listed ones.

    Parameters
    ----------
    inst : Instances
        Padded to N columns (N + 1 for the curves).
    top_k : int or None
        Candidates kept per task (``candidates.top_k``); None keeps every candidate.

    Returns
    -------
    Instances
        Padded to ``min(N, top_k)`` columns; ``n = min(n, top_k)``; ``vocab`` is kept.
    """
    if top_k is None:
        return inst
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"candidates.top_k: expected an integer >= 1 or None, got {top_k!r}")
    k = min(int(top_k), inst.N)
    return replace(
        inst,
        tools=inst.tools[:, :k],
        scores=inst.scores[:, :k],
        costs=inst.costs[:, :k],
        member=inst.member[:, :k],
        success=inst.success[:, : k + 1],
        partial=inst.partial[:, : k + 1],
        n=np.minimum(inst.n, k),
        tool_ids=inst.tool_ids[:, :k],
        train_views=inst.map_views(lambda v: truncate(v, top_k)),
        # A set with a member cut off the list can no longer be exposed: it is not present any more.
        sets=None if inst.sets is None else inst.sets[:, :, :k],
        present=None if inst.present is None else inst.present & ~inst.sets[:, :, k:].any(axis=2),
    )


def inner_folds(inst: Instances, k: int, random_state: int) -> tuple[np.ndarray, str]:
    """A rule's inner cross-validation folds over ``inst``'s tasks, and how they were drawn.

    With :attr:`Instances.groups` and at least ``k`` distinct groups (a task of group None is one of its
    own), no group is split (:func:`camdf.core.folds.assign_folds`, protocol ``group``): a member that
    copies what similar training tasks needed is scored on tasks of templates it never saw, as the outer
    group folds score it (``"group"``). Otherwise a seeded random partition into ``k`` near-equal folds
    (``"kfold"``, the same as ``assign_folds``' ``kfold``).
    """
    from camdf.core.folds import assign_folds, count_groups

    ids = [str(t) for t in inst.task_ids]
    if inst.groups is not None and count_groups(list(inst.groups)) >= k:
        return assign_folds(ids, n_folds=k, protocol="group", random_state=random_state,
                            groups=list(inst.groups)), "group"
    return assign_folds(ids, n_folds=k, protocol="kfold", random_state=random_state), "kfold"
