"""Anthropic tool search: a client-side search tool whose result is ``tool_reference`` blocks for the chosen tools.

Data in, data out (Messages API dicts; no client library, no network). The request carries the
search tool and every other tool with ``defer_loading: true`` (``ToolParam.defer_loading``); when the
model calls the search tool, answer with :meth:`ToolSearch.result`: a ``tool_result`` block
(``ToolResultBlockParam``) whose content is one ``{"type": "tool_reference", "tool_name": ...}``
(``ToolReferenceBlockParam``) per tool found, which loads those tools' definitions. The search is
camdf's (:func:`~camdf.runtime.search.search_tools`): the policy's cost-aware set of the deferred tools
for the query the model searched with, ranked order first, not a fixed k:

>>> search = ToolSearch(preload=["get_order"])            # the package's default policy
>>> tools = search.prepare(my_tools)                      # the search tool + get_order + deferred tools
>>> # ... the model answers with a tool_use block calling search.name ...
>>> block = search.result(tool_use, my_tools)             # {"type": "tool_result", ...}

``preload`` and ``always_include`` tools are loaded up front: not deferred, never returned by the search
(the search tool itself is never deferred either, so a request always has a tool loaded up front, as the
API requires). ``max_results`` caps one answer. Fail open: when the policy fails, every deferred tool is
referenced, with one :class:`~camdf.runtime.toolset.FailOpenWarning`. A search that finds nothing (an
empty query) answers with a text block, since a ``tool_result`` without content tells the model nothing.

A policy that defers (it chose what to preload knowing the search exists, ``fallback_set``): give
``prepare`` the task, and its preloaded tools are loaded up front too, the rest deferred; give ``result``
the same task, and the search answers the model's query with its top ``search_k`` deferred tools
(:func:`~camdf.runtime.toolset.search_deferred`):

>>> tools = search.prepare(my_tools, task="refund my order")   # preloaded + the search tool + deferred
>>> block = search.result(tool_use, my_tools, task="refund my order")
"""

from __future__ import annotations

import operator
from itertools import repeat
from typing import Any, Sequence

from camdf.runtime.search import SearchBackend
from camdf.runtime.toolset import Scorer, search_deferred
from camdf.runtime.tooltext import check_tools, describe_tool

SEARCH_TOOL = "camdf_tool_search"
#: The search's answer when it finds nothing.
NOTHING_FOUND = "No tools matched the query."


def _plain(tool: dict, i: int) -> dict:
    plain = describe_tool(tool) if isinstance(tool, dict) else None
    if plain is None:
        raise ValueError(f"tools[{i}]: expected a Messages API tool (an object with a name)")
    return plain


def _plains(tools: Sequence[dict]) -> list[dict]:
    """Each tool's plain description; a tool without a name, with a blank one or one another tool has, or with a
    schema that is not an object's, is refused."""
    plain = [_plain(t, i) for i, t in enumerate(tools)]
    check_tools(tools, plain)
    return plain



def _tool_use(block: Any) -> dict:
    """A ``tool_use`` block as a dict: the dict itself, or the SDK's ``ToolUseBlock`` (a pydantic model) dumped."""
    if isinstance(block, dict):
        return block
    dump = getattr(block, "model_dump", None)
    return dump() if callable(dump) else {}


class ToolSearch(SearchBackend):
    """The client-side search tool of one policy.

    Parameters
    ----------
    policy, lam, task_value, dials, always_include, preload, max_tools, min_tools, scorer, max_results
        As :class:`~camdf.runtime.search.SearchBackend`.
    name : str
        The search tool's name.
    search_k : int
        Tools one search loads when the policy defers (see the module's docstring).
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None, always_include: Sequence[str] = (), preload: Sequence[str] = (),
                 max_tools: int | None = None, min_tools: int = 1, scorer: Scorer | None = None,
                 max_results: int | None = None, name: str = SEARCH_TOOL, search_k: int = 5):
        super().__init__(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                         preload=preload, max_tools=max_tools, min_tools=min_tools, scorer=scorer,
                         max_results=max_results)
        self.name = name
        self.search_k = search_k
        self._last: tuple[list, list, list[dict]] | None = None

    def _cached_plains(self, tools: Sequence[dict]) -> list[dict]:
        """:func:`_plains`, kept for the last list: a conversation sends the same tools on every turn, and reading
        and checking 2,000 tools costs tens of milliseconds. The list is read again unless every tool is the same
        object with the same name, description and schema objects (a C-level comparison, well under a millisecond)."""
        if not isinstance(tools, (list, tuple)) or not all(type(t) is dict for t in tools):
            return _plains(tools)
        fields = [list(map(dict.get, tools, repeat(k))) for k in ("name", "description", "input_schema")]
        last = self._last
        if last is not None and len(last[0]) == len(tools) and all(map(operator.is_, last[0], tools)) \
                and all(all(map(operator.is_, a, b)) for a, b in zip(last[1], fields)):
            return last[2]
        plain = _plains(tools)
        self._last = (list(tools), fields, plain)
        return plain

    def definition(self) -> dict:
        """The search tool's definition (a custom tool of the Messages API, ``ToolParam``)."""
        return {"name": self.name,
                "description": "Find the tools for a task: give the task in words; the tools it needs are loaded.",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
                                 "required": ["query"]}}

    def prepare(self, tools: Sequence[dict], task: str | None = None) -> list[dict]:
        """The request's tools: the search tool, then ``tools`` with ``defer_loading: true`` except ``preload`` and
        ``always_include``. With ``task`` and a policy that defers: its preloaded tools are not deferred either
        (every tool is loaded when it fails: fail open). A ``preload`` name not among ``tools`` is a ValueError."""
        plain = self._cached_plains(tools)
        named = {t["name"] for t in plain}
        missing = [n for n in self.preload if n not in named]
        if missing:
            raise ValueError(f"preload: {missing} are not among the tools")
        keep = set(self.up_front)
        if task is not None:
            choice = self.chooser.choose(plain, task)
            if choice.defers or choice.failed_open:
                keep |= set(choice.names)
        return [self.definition()] + [t if t.get("name") in keep else {**t, "defer_loading": True} for t in tools]

    def result(self, tool_use: Any, tools: Sequence[dict], task: str | None = None) -> dict:
        """The ``tool_result`` block answering the model's ``tool_use`` of the search tool.

        Parameters
        ----------
        tool_use : dict or the SDK's ``ToolUseBlock``
            The model's call of the search tool, as its response's content holds it.
        tools : sequence of dict
            The Messages API tools given to :meth:`prepare` (without the search tool).
        task : str, optional
            With a policy that defers: the task given to :meth:`prepare`.

        Returns
        -------
        dict
            ``{"type": "tool_result", "tool_use_id": ..., "content": [{"type": "tool_reference", "tool_name": ...},
            ...]}``: camdf's set of the deferred tools for the model's query (ranked order first, at most
            ``max_results``); with ``task`` and a policy that defers, the top ``search_k`` of its deferred tools.
            Nothing found: one text block instead.
        """
        block = _tool_use(tool_use)
        if block.get("name") != self.name or not isinstance(block.get("id"), str):
            raise ValueError(f"tool_use: expected a tool_use block calling {self.name!r}")
        query = (block.get("input") or {}).get("query")
        query = query if isinstance(query, str) else ""
        plain = self._cached_plains(tools)
        up_front = self.up_front
        found: Sequence[str] | None = None
        if task is not None:
            choice = self.chooser.choose(plain, task)
            if choice.defers:  # the policy preloaded for the task: the search is over what it deferred
                deferred = [n for n in choice.deferred if n not in up_front]
                found = search_deferred(query, plain, deferred, self.search_k)[: self.max_results]
        if found is None:
            found = self.search(plain, query).names
        content = ([{"type": "tool_reference", "tool_name": n} for n in found] if found
                   else [{"type": "text", "text": NOTHING_FOUND}])
        return {"type": "tool_result", "tool_use_id": block["id"], "content": content}
