"""Anthropic tool search: a client-side search tool whose result is ``tool_reference`` blocks for the chosen tools.

Data in, data out (Messages API dicts; no client library, no network). The request carries the
search tool and every other tool with ``defer_loading: true``; when the model calls the search
tool, answer with :meth:`ToolSearch.result`, whose ``tool_reference`` blocks load the policy's
selection for the query the model searched with:

>>> search = ToolSearch("path/to/policy", lam=0.1)
>>> tools = search.prepare(my_tools)                      # the search tool + deferred tools
>>> # ... the model answers with a tool_use block calling search.name ...
>>> block = search.result(tool_use, my_tools)             # {"type": "tool_result", ...}

``always_include`` tools are not deferred (always loaded). Fail open: when the policy fails,
every tool is referenced, with one :class:`~camdf.runtime.toolset.FailOpenWarning`.

A policy that defers (it chose what to preload knowing the search exists, ``fallback_set``): give
``prepare`` the task, and its preloaded tools are loaded up front, the rest deferred; give ``result``
the same task, and the search answers the model's query with its top ``search_k`` deferred tools
(:func:`~camdf.runtime.toolset.search_deferred`):

>>> tools = search.prepare(my_tools, task="refund my order")   # preloaded + the search tool + deferred
>>> block = search.result(tool_use, my_tools, task="refund my order")
"""

from __future__ import annotations

from typing import Any, Sequence

from camdf.runtime.toolset import Scorer, ToolChooser, search_deferred
from camdf.runtime.tooltext import describe_tool

SEARCH_TOOL = "camdf_tool_search"


def _plain(tool: dict, i: int) -> dict:
    plain = describe_tool(tool) if isinstance(tool, dict) else None
    if plain is None:
        raise ValueError(f"tools[{i}]: expected a Messages API tool (an object with a name)")
    return plain


class ToolSearch:
    """The client-side search tool of one policy.

    Parameters
    ----------
    policy, lam, dials, always_include, max_tools, min_tools, scorer
        As :class:`~camdf.runtime.toolset.ToolChooser` (``min_tools`` default 1; ``scorer(query, tools)``: your own
        retriever, given plain descriptions).
    name : str
        The search tool's name.
    search_k : int
        Tools one search loads when the policy defers.
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, min_tools: int = 1,
                 scorer: Scorer | None = None, name: str = SEARCH_TOOL, search_k: int = 5):
        self.chooser = ToolChooser(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                                   max_tools=max_tools, min_tools=min_tools, scorer=scorer)
        self.name = name
        self.search_k = search_k

    def definition(self) -> dict:
        """The search tool's definition (a custom tool of the Messages API)."""
        return {"name": self.name,
                "description": "Find the tools for a task: give the task in words; the tools it needs are loaded.",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
                                 "required": ["query"]}}

    def _choice(self, tools: Sequence[dict], task: str):
        return self.chooser.choose([_plain(t, i) for i, t in enumerate(tools)], task)

    def prepare(self, tools: Sequence[dict], task: str | None = None) -> list[dict]:
        """The request's tools: the search tool, then ``tools`` with ``defer_loading: true`` (except
        ``always_include``). With ``task`` and a policy that defers: its preloaded tools are not deferred
        (every tool is loaded when it fails: fail open)."""
        keep = set(self.chooser.always_include)
        if task is not None:
            choice = self._choice(tools, task)
            if choice.defers or choice.failed_open:
                keep |= set(choice.names)
        return [self.definition()] + [t if t.get("name") in keep else {**t, "defer_loading": True} for t in tools]

    def result(self, tool_use: dict, tools: Sequence[dict], task: str | None = None) -> dict:
        """The ``tool_result`` block answering the model's ``tool_use`` of the search tool: one
        ``tool_reference`` per chosen tool (the policy's selection for the query, in the tools' order); with
        ``task`` and a policy that defers, the top ``search_k`` of its deferred tools for the model's query."""
        if not isinstance(tool_use, dict) or tool_use.get("name") != self.name or "id" not in tool_use:
            raise ValueError(f"tool_use: expected a tool_use block calling {self.name!r}")
        query = (tool_use.get("input") or {}).get("query")
        query = query if isinstance(query, str) else ""
        keep = set(self.chooser.always_include)
        if task is not None:
            choice = self._choice(tools, task)
            if choice.defers:  # the policy preloaded for the task: the search is over what it deferred
                found = search_deferred(query, [_plain(t, i) for i, t in enumerate(tools)], choice.deferred,
                                        self.search_k)
                return {"type": "tool_result", "tool_use_id": tool_use["id"],
                        "content": [{"type": "tool_reference", "tool_name": n} for n in found]}
        choice = self._choice(tools, query)
        return {"type": "tool_result", "tool_use_id": tool_use["id"],
                "content": [{"type": "tool_reference", "tool_name": n} for n in choice.names if n not in keep]}
