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
"""

from __future__ import annotations

from typing import Any, Sequence

from camdf.runtime.toolset import ToolChooser

SEARCH_TOOL = "camdf_tool_search"


def _plain(tool: dict, i: int) -> dict:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise ValueError(f"tools[{i}]: expected a Messages API tool (an object with a name)")
    return {"name": tool["name"], "description": tool.get("description") or "",
            "parameters": tool.get("input_schema")}


class ToolSearch:
    """The client-side search tool of one policy.

    Parameters
    ----------
    policy, lam, dials, always_include, max_tools
        As :class:`~camdf.runtime.toolset.ToolChooser`.
    name : str
        The search tool's name.
    """

    def __init__(self, policy: Any, *, lam: float | None = None, dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, name: str = SEARCH_TOOL):
        self.chooser = ToolChooser(policy, lam=lam, dials=dials, always_include=always_include, max_tools=max_tools)
        self.name = name

    def definition(self) -> dict:
        """The search tool's definition (a custom tool of the Messages API)."""
        return {"name": self.name,
                "description": "Find the tools for a task: give the task in words; the tools it needs are loaded.",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
                                 "required": ["query"]}}

    def prepare(self, tools: Sequence[dict]) -> list[dict]:
        """The request's tools: the search tool, then ``tools`` with ``defer_loading: true`` (except
        ``always_include``)."""
        keep = set(self.chooser.always_include)
        return [self.definition()] + [t if t.get("name") in keep else {**t, "defer_loading": True} for t in tools]

    def result(self, tool_use: dict, tools: Sequence[dict]) -> dict:
        """The ``tool_result`` block answering the model's ``tool_use`` of the search tool: one
        ``tool_reference`` per chosen tool (the policy's selection for the query, in the tools' order)."""
        if not isinstance(tool_use, dict) or tool_use.get("name") != self.name or "id" not in tool_use:
            raise ValueError(f"tool_use: expected a tool_use block calling {self.name!r}")
        query = (tool_use.get("input") or {}).get("query")
        choice = self.chooser.choose([_plain(t, i) for i, t in enumerate(tools)],
                                     query if isinstance(query, str) else "")
        keep = set(self.chooser.always_include)
        return {"type": "tool_result", "tool_use_id": tool_use["id"],
                "content": [{"type": "tool_reference", "tool_name": n} for n in choice.names if n not in keep]}
