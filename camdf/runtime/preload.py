"""What to preload when every other tool is one search away: a fitted set, the same for every task.

A harness that defers tools behind a search (Claude Code, Copilot, OpenAI ``tool_search``, LangChain's tool search,
an MCP server of the 2026-07-28 spec, whose ``tools/list`` may not change with the task) loads a fixed list up front
and leaves the rest to the search. Today that list is written by hand. :func:`plan_preload` fits it.

The rule, per tool ``j`` with definition cost ``c_j`` (schema tokens, :func:`camdf.costs.units.schema_tokens`):

- preloaded, ``j`` is paid on every task: ``c_j``;
- deferred, it is paid only by the tasks that need it, ``p_j`` of them, each paying one search round ``S`` as well
  (the search tool's call, its answer and the extra model turn) and ``c_j`` when the search loads it:
  ``p_j * (S + c_j)``;

so ``j`` is preloaded iff ``p_j * (S + c_j) >= c_j``, i.e. ``p_j >= c_j / (S + c_j)``: a cheap tool most tasks use
is preloaded, a rare or long one is not. ``S`` is ``search_cost`` mean tool definitions of the catalog (default 4, the
middle of A29's grid, 1 / 4 / 16). The rule assumes the search finds the tool it is asked for (so it defers a little
more than a search that misses would warrant; docs/harness.md measures the search).

``p_j`` comes from one of two sources:

- **logged tasks** (the tools each used, the input of ``camdf fit``): ``p_j`` is the share of tasks that used ``j``;
- **sample queries** without outcomes: ``p_j`` is the share of queries for which the policy
  (:class:`~camdf.runtime.toolset.ToolChooser`, no ``min_tools`` floor) exposes ``j``, its own estimate of need.
  A query on which the policy fails is left out and counted (:attr:`PreloadPlan.failed`); when it fails on every
  query, :func:`plan_preload` raises.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

#: A search round's price in mean tool definitions of the catalog (A29's grid: 1, 4, 16).
SEARCH_COST = 4.0


@dataclass(frozen=True)
class PreloadPlan:
    """A fitted preload set and what it was fitted from.

    Attributes
    ----------
    names : tuple of str
        The preloaded tools, in the catalog's order.
    need : dict of str to float
        ``p_j``: the share of tasks (or queries) that needed (or were given) each tool.
    tokens : dict of str to float
        ``c_j``: each tool's definition in tokens.
    search_tokens : float
        ``S``: one search round in tokens.
    source : {"tasks", "queries"}
    count : int
        Tasks or queries the shares are over.
    failed : int
        Queries on which the policy failed (left out).
    """

    names: tuple[str, ...]
    need: dict[str, float]
    tokens: dict[str, float]
    search_tokens: float
    source: str
    count: int
    failed: int = 0
    catalog: tuple[str, ...] = field(default=())

    @property
    def deferred(self) -> tuple[str, ...]:
        """The tools left to the search, in the catalog's order."""
        keep = set(self.names)
        return tuple(n for n in self.catalog if n not in keep)

    def threshold(self, name: str) -> float:
        """``c_j / (S + c_j)``: the share of tasks above which ``name`` is preloaded."""
        c = self.tokens[name]
        return c / (self.search_tokens + c)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready account: the set, its tokens, the rule's inputs."""
        return {
            "preload": list(self.names),
            "preload_tokens": round(float(sum(self.tokens[n] for n in self.names)), 1),
            "catalog_tokens": round(float(sum(self.tokens.values())), 1),
            "deferred": len(self.deferred),
            "search_tokens": round(self.search_tokens, 1),
            "source": self.source,
            "count": self.count,
            "failed": self.failed,
            "rule": "preload j iff need_j >= tokens_j / (search_tokens + tokens_j)",
        }


def _check_cost(search_cost: Any) -> float:
    if isinstance(search_cost, bool) or not isinstance(search_cost, (int, float)) or not (
            math.isfinite(search_cost) and search_cost > 0):
        raise ValueError(f"search_cost: expected a finite number > 0 (mean tool definitions), got {search_cost!r}")
    return float(search_cost)


def plan_preload(tools: Sequence[dict], *, tasks: Sequence[Any] | None = None, queries: Sequence[str] | None = None,
                 chooser: Any = None, search_cost: float = SEARCH_COST) -> PreloadPlan:
    """Fit the preload set of a catalog.

    Parameters
    ----------
    tools : sequence of dict
        The catalog, plain views ``{name, description, parameters}``
        (:func:`camdf.runtime.fit_inputs.tool_views`).
    tasks : sequence of LoggedTask, optional
        Logged tasks with the tools each used (:func:`camdf.runtime.fit_inputs.read_tasks`).
    queries : sequence of str, optional
        Sample queries without outcomes: the policy's exposures stand for need. Give ``tasks`` or ``queries``.
    chooser : ToolChooser, optional
        The policy deciding over ``queries`` (default: the package's default policy, no ``min_tools`` floor).
    search_cost : float
        A search round's price in mean tool definitions of the catalog.
    """
    from camdf.costs.units import schema_tokens

    search_cost = _check_cost(search_cost)
    if (tasks is None) == (queries is None):
        raise ValueError("give tasks (logged, with the tools each used) or queries (sample requests), not both "
                         "and not neither")
    names = [t["name"] for t in tools]
    if not names:
        raise ValueError("tools: expected a non-empty catalog")
    cost = schema_tokens(list(tools))
    used = np.zeros(len(names))
    index = {n: i for i, n in enumerate(names)}
    failed = 0
    if tasks is not None:
        if not tasks:
            raise ValueError("tasks: expected at least one logged task")
        for task in tasks:
            for n in set(task.tools_used):
                used[index[n]] += 1
        count, source = len(tasks), "tasks"
    else:
        queries = list(queries)
        bad = next((i for i, q in enumerate(queries) if not isinstance(q, str) or not q.strip()), None)
        if not queries or bad is not None:
            raise ValueError("queries: expected non-empty strings" + (f"; queries[{bad}] is not" if queries else
                                                                       ", got none"))
        if chooser is None:
            from camdf.runtime.toolset import ToolChooser

            chooser = ToolChooser(None, min_tools=0)
        for q in queries:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # counted below; the plan says how many failed
                choice = chooser.choose(list(tools), q)
            if choice.failed_open:
                failed += 1
                continue
            for n in choice.names:
                used[index[n]] += 1
        count, source = len(queries) - failed, "queries"
        if count == 0:
            raise ValueError(f"the policy failed on every one of the {len(queries)} queries; nothing to fit from "
                             f"(last error: {choice.error})")
    need = used / count
    search_tokens = search_cost * float(cost.mean())
    keep = need * (search_tokens + cost) >= cost
    keep &= need > 0
    return PreloadPlan(tuple(n for n, k in zip(names, keep) if k), dict(zip(names, need.tolist())),
                       dict(zip(names, cost.tolist())), search_tokens, source, count, failed, tuple(names))
