"""``camdf fit``: a policy fitted on a harness builder's own catalog and logged tasks, kept only if it beats the base.

From the catalog (:mod:`camdf.runtime.fit_inputs`) and the tasks it builds ranked
:class:`~camdf.core.instances.Instances` as the runtime will see them: the built-in ranker
(:mod:`camdf.runtime.builtin_ranker`) scores every
task against the whole catalog (one index), each task keeps its ``top_n`` best-ranked tools (the fitted
policy cuts a request to its top ``top_n`` the same way), a tool's cost is its schema tokens
(:func:`camdf.costs.units.schema_tokens`) and lambda is ``1 / task_value`` per token. G_x is the tools a
task used; a used tool outside its top ``top_n`` is a miss at every depth.

:class:`PolicyFitter` then compares, out of fold (:mod:`camdf.runtime.fit_compare`), each candidate rule
fitted on the other folds against the base policy (the package's default policy, or ``base``) on the same
held-out tasks, and ships the best candidate refitted on every task only when its paired mean payoff
difference with the base has a bootstrap CI above 0; otherwise it ships the base, as it is. The report
goes into the exported folder's manifest (``fit``).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from camdf.core.instances import Instances, curves_from_sets, sufficient_sets
from camdf.runtime.fit_inputs import LoggedTask, check_tasks, tool_views
from camdf.costs.units import DEFAULT_TASK_VALUE, TOKENS, lam_from_task_value, schema_tokens

#: Ranked tools kept per task for fitting (and per request when deciding), as the default policy keeps: the fits
#: of 1,000 tasks stay well under a minute at 2,000 tools.
TOP_N = 50
#: Multiples of the task's lambda a lambda-conditioned rule (camdf) is fitted across, so task_value stays a dial.
LAM_FACTORS = (0.25, 1.0, 4.0)


def catalog_instances(views: list[dict], tasks: Sequence[LoggedTask], top_n: int | None = TOP_N) -> Instances:
    """The tasks ranked by the built-in ranker over the whole catalog, each cut to its ``top_n`` tools, costs in
    schema tokens.

    Parameters
    ----------
    views : list of dict, length A
        The catalog's plain views ``{name, description, parameters}``.
    tasks : sequence of LoggedTask, length T
    top_n : int or None
        Ranked tools kept per task (None: all A).

    Returns
    -------
    Instances
        Shapes (T, N) with N = min(A, top_n); ``vocab`` is the catalog's names, so ``tool_ids`` index ``views``.
    """
    from camdf.rankers.lexical import tokenize
    from camdf.runtime.builtin_ranker import tool_scores

    names = np.array([v["name"] for v in views], dtype=object)
    for task, words in zip(tasks, tokenize([t.query for t in tasks])):
        if not words:  # the runtime refuses such a query too: nothing for bm25 to rank by
            raise ValueError(f"{task.where}: query: no word the built-in bm25 ranker can use (two or more "
                             f"letters, not English stop words), got {task.query[:80]!r}")
    # (T, A): the built-in ranker over the whole catalog (one index, kept), as the runtime ranks a request
    scores = np.vstack([tool_scores(t.query, views) for t in tasks]) if tasks else np.zeros((0, len(views)))
    # Ranked as the runtime ranks a request of the whole catalog: by score, ties in catalog order.
    order = np.argsort(-scores, axis=1, kind="stable")[:, : min(len(views), top_n or len(views))]
    T, N = order.shape
    index = {name: j for j, name in enumerate(names)}
    member = np.zeros((T, N), dtype=bool)
    positions = []
    for i, task in enumerate(tasks):
        gold = np.array([index[name] for name in task.tools_used], dtype=np.int64)
        member[i] = np.isin(order[i], gold)
        listed = len(gold) == member[i].sum()
        positions.append([np.flatnonzero(member[i]) if listed else None])  # G_x is the one sufficient set
    n = np.full(T, N, dtype=np.int64)
    success, partial = curves_from_sets(member, positions, n)
    sets, present = sufficient_sets(positions, N)
    cost = schema_tokens(views)
    return Instances(task_ids=np.array([t.where or str(i) for i, t in enumerate(tasks)], dtype=object),
                     tools=names[order], scores=np.take_along_axis(scores, order, axis=1), costs=cost[order],
                     member=member, success=success, partial=partial, n=n, folds=np.zeros(T, dtype=np.int64),
                     text_len=np.array([float(len(t.query)) for t in tasks]), tool_ids=order.astype(np.int64),
                     vocab=list(names), sets=sets, present=present,
                     groups=np.array([t.group for t in tasks], dtype=object))  # a rule's inner CV keeps a group whole


def default_base():
    """The package's default policy (:func:`camdf.runtime.defaults.default_policy_dir` where this install has
    one, else ``load_policy()``'s default); ValueError saying to give ``base`` when there is none."""
    from camdf.runtime.loading import load_policy

    try:
        from camdf.runtime.defaults import default_policy_dir
    except ImportError:
        default_policy_dir = None
    try:
        return load_policy(str(default_policy_dir())) if default_policy_dir is not None else load_policy()
    except ValueError as err:
        raise ValueError(f"base: no default policy to start from ({err}); give a base policy folder "
                         "(--base FOLDER)") from None


def _full(policy):
    """A loaded policy that decides batches: a lean policy's full form."""
    return policy.full() if getattr(policy, "full", None) is not None and not hasattr(policy, "rule_") else policy


class PolicyFitter(BaseEstimator):
    """Fit a stopping policy on a catalog and logged tasks; keep the base policy unless out of fold it loses.

    Parameters
    ----------
    methods : sequence of str or None
        Candidate rules (shippable cards, :func:`camdf.runtime.policy.policy_methods`); the best out of fold is
        compared with the base. None: the base policy's own rule (the default policy's ``camdf_transfer``),
        fitted on your tasks and tools.
    task_value : float
        Tokens of tool definitions one solved task is worth: lambda = 1 / task_value per token.
    base : str, path, policy or None
        The policy to keep unless beaten: a folder or URI, a loaded policy, or None (the package's default).
    top_n : int or None
        Ranked tools kept per task, and per request when the fitted policy decides (None: the whole catalog).
    n_folds : int
        Inner folds (group folds when the tasks name groups).
    random_state : int
        Seeds the folds, the rules and the bootstrap.

    Attributes
    ----------
    policy_ : StopPolicy
        The policy to ship: the best candidate refitted on every task, or the base.
    report_ : dict
        The out-of-fold comparison (JSON-ready), written into the exported manifest as ``fit``.
    shipped_ : {"fitted", "base"}
    """

    def __init__(self, methods: Sequence[str] | None = None, task_value: float = DEFAULT_TASK_VALUE,
                 base: Any = None, top_n: int | None = TOP_N, n_folds: int = 5, random_state: int = 0):
        self.methods = methods
        self.task_value = task_value
        self.base = base
        self.top_n = top_n
        self.n_folds = n_folds
        self.random_state = random_state

    def _candidates(self, lam: float, base: Any) -> dict[str, Any]:
        from camdf.policies import card
        from camdf.runtime.policy import StopPolicy, policy_methods

        if self.methods is None:
            methods = [base.method]
        else:
            methods = [self.methods] if isinstance(self.methods, str) else list(self.methods)
        if not methods:
            raise ValueError("method: expected at least one candidate rule")
        out = {}
        for m in methods:
            if m not in policy_methods():
                raise ValueError(f"method: expected one of {', '.join(policy_methods())}, got {m!r}")
            grid = [lam * f for f in LAM_FACTORS] if card(m).across_lambdas else None
            out[m] = StopPolicy(method=m, lam=lam, lam_grid=grid, random_state=self.random_state, n_jobs=1,
                                top_n=self.top_n)
        return out

    def _check(self) -> float:
        lam = lam_from_task_value(self.task_value, "task_value")
        top = self.top_n
        if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1):
            raise ValueError(f"top_n: expected an integer >= 1 or None, got {top!r}")
        if isinstance(self.n_folds, bool) or not isinstance(self.n_folds, (int, np.integer)) or self.n_folds < 2:
            raise ValueError(f"n_folds: expected an integer >= 2, got {self.n_folds!r}")
        return lam

    def fit(self, tools: Any, tasks: Sequence[Any]) -> "PolicyFitter":
        """Fit on ``tools`` (see :func:`~camdf.runtime.fit_inputs.tool_views`) and ``tasks`` (dicts
        ``{"query", "tools_used"}`` or :class:`~camdf.runtime.fit_inputs.LoggedTask`); returns ``self``."""
        from camdf.runtime.fit_compare import summary
        from camdf.runtime.loading import load_policy

        lam = self._check()
        views = tool_views(tools)
        tasks = check_tasks(tasks, [v["name"] for v in views])
        base = default_base() if self.base is None else (
            load_policy(os.fspath(self.base)) if isinstance(self.base, (str, os.PathLike)) else self.base)
        base = _full(base)
        candidates = self._candidates(lam, base)
        inst = catalog_instances(views, tasks, self.top_n)
        folds = self._folds(tasks)
        oof = {m: self._out_of_fold(c, inst, folds, lam) for m, c in candidates.items()}
        from camdf.runtime.fit_compare import base_masks, paired, task_payoffs

        masks, warned = base_masks(base, views, inst, lam)
        base_out = task_payoffs(inst, masks, lam)
        best = max(oof, key=lambda m: (oof[m]["payoff"].mean(), -list(oof).index(m)))
        diff = paired(oof[best]["payoff"] - base_out["payoff"], self.random_state)
        win = diff["ci_low"] > 0
        self.shipped_ = "fitted" if win else "base"
        if win:
            self.policy_ = clone(candidates[best]).fit(inst)
            self.policy_.cost_unit_, self.policy_.task_value_ = TOKENS, float(self.task_value)
        else:
            self.policy_ = base
        self.report_ = {
            "tasks": inst.T, "tools": len(views), "top_n": self.top_n, "folds": int(folds.max()) + 1,
            "cv": "group k-fold" if any(t.group is not None for t in tasks) else "k-fold",
            "task_value": float(self.task_value), "seed": int(self.random_state),
            "listed": float(inst.present.any(axis=1).mean()),
            "base": {"method": base.method, "origin": dict(getattr(base, "origin_", None) or {}),
                     "oof": summary(base_out), "warned": warned},
            "candidates": {m: {"oof": summary(o)} for m, o in oof.items()},
            "best": best, "difference": diff, "shipped": self.shipped_,
            "verdict": (f"shipped: {best} fitted on every task ({best} beats the base out of fold)" if win else
                        f"shipped: the base {base.method} as it is ({best} does not beat it out of fold: CI not above 0)"),
        }
        return self

    def _folds(self, tasks: Sequence[LoggedTask]) -> np.ndarray:
        from camdf.core.folds import assign_folds

        k = min(int(self.n_folds), len(tasks))
        ids = [str(i) for i in range(len(tasks))]
        groups = [t.group for t in tasks]
        if any(g is not None for g in groups):
            distinct = len({g if g is not None else f"\0{i}" for i, g in enumerate(groups)})
            if distinct < 2:
                raise ValueError("tasks: group: every task is in one group; inner folds need at least 2 groups")
            return assign_folds(ids, n_folds=min(k, distinct), protocol="group", random_state=self.random_state,
                                groups=groups)
        return assign_folds(ids, n_folds=k, protocol="kfold", random_state=self.random_state)

    def _out_of_fold(self, candidate, inst: Instances, folds: np.ndarray, lam: float) -> dict[str, np.ndarray]:
        """Each task decided by ``candidate`` fitted on the other folds: :func:`task_payoffs` per task."""
        from camdf.runtime.fit_compare import task_payoffs

        masks = np.zeros(inst.tools.shape, dtype=bool)
        for f in np.unique(folds):
            test = folds == f
            fitted = clone(candidate).fit(inst.subset(~test))
            masks[test] = fitted.exposed(inst.subset(test), lam)
        return task_payoffs(inst, masks, lam)

    def export(self, folder: str | os.PathLike):
        """Write the shipped policy with the report in its manifest (:func:`camdf.runtime.export.export_policy`)."""
        from camdf.runtime.export import export_policy

        check_is_fitted(self)
        return export_policy(self.policy_, folder, fit=self.report_)


def fit_policy(tools: Any, tasks: Sequence[Any], **params: Any) -> PolicyFitter:
    """``PolicyFitter(**params).fit(tools, tasks)``: the fitted fitter (``policy_``, ``report_``, ``export``)."""
    return PolicyFitter(**params).fit(tools, tasks)
