"""OpenAI Agents SDK: a ``tool_filter`` for its MCP servers and an ``is_enabled`` for its function tools.

The SDK asks a filter about one tool at a time, from a run context, on every turn; a set
decision is made once per run and server (cached by the run context) from the run's input (the
last user text of ``run_context.turn_input``, or ``query(run_context)``), and each tool is then
answered from it:

>>> flt = CamdfToolFilter("path/to/policy", lam=0.1)
>>> server = flt.attach(MCPServerStdio(params={"command": "python", "args": ["server.py"]}))
>>> tools = flt.enable([get_order, refund_order, ...])        # function tools
>>> agent = Agent(name="shop", mcp_servers=[server], tools=tools)

An MCP server's candidates are its full list (``server.session.list_tools()``, one extra
request per run); function tools' are the agent's function tools that this filter enables.
``camdf_lam`` and ``camdf_dials`` in the run's context override ``lam`` and ``dials``. Fail open:
on any error every tool is enabled, with one :class:`~camdf.runtime.toolset.FailOpenWarning`.
"""

from __future__ import annotations

import asyncio
import warnings
import weakref
from typing import Any, Callable, Sequence

from agents import FunctionTool
from agents.mcp import ToolFilterContext

from camdf.runtime.toolset import FailOpenWarning, ToolChooser


def run_input_text(run_context: Any) -> str:
    """The last user text of a run's input (``run_context.turn_input``; "" when there is none)."""
    for item in reversed(list(getattr(run_context, "turn_input", None) or [])):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _from_context(context: Any, key: str) -> Any:
    return context.get(key) if isinstance(context, dict) else getattr(context, key, None)


class CamdfToolFilter:
    """One set decision per run and server, answered tool by tool (``tool_filter``, ``is_enabled``).

    Parameters
    ----------
    policy, lam, dials, always_include, max_tools
        As :class:`~camdf.runtime.toolset.ToolChooser`.
    query : callable, optional
        ``query(run_context) -> str``; default: the run's last user text.

    Attributes
    ----------
    decisions : int
        Set decisions made (one per run and server, or per run for the function tools).
    """

    def __init__(self, policy: Any, *, lam: float | None = None, dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None,
                 query: Callable[[Any], str] | None = None):
        self.chooser = ToolChooser(policy, lam=lam, dials=dials, always_include=always_include, max_tools=max_tools)
        self.query = query or run_input_text
        self.decisions = 0
        self._servers: dict[str, Any] = {}
        self._enabled: list[FunctionTool] = []
        self._runs: dict[tuple[int, str], asyncio.Future] = {}

    def attach(self, server: Any) -> Any:
        """Make this filter ``server``'s ``tool_filter`` (an SDK MCP server) and return the server."""
        server.tool_filter = self
        self._servers[server.name] = server
        return server

    def enable(self, tools: Sequence[FunctionTool]) -> list[FunctionTool]:
        """Set each function tool's ``is_enabled`` to this filter's decision and return the tools."""
        for tool in tools:
            tool.is_enabled = self._is_enabled(tool.name)
            self._enabled.append(tool)
        return list(tools)

    async def __call__(self, context: ToolFilterContext, tool: Any) -> bool:
        server = self._servers.get(context.server_name)

        async def candidates():
            if server is None:
                raise ValueError(f"MCP server {context.server_name!r} was not attached (CamdfToolFilter.attach)")
            tools, cursor = [], None
            while True:
                page = await server.session.list_tools(
                    params=None if cursor is None else _page(cursor))
                tools += [{"name": t.name, "description": t.description or "",
                           "parameters": getattr(t, "input_schema", None)} for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    return tools
        return tool.name in await self._exposed(context.run_context, f"mcp:{context.server_name}", candidates)

    def _is_enabled(self, name: str):
        async def is_enabled(run_context: Any, agent: Any) -> bool:
            async def candidates():
                mine = {id(t) for t in self._enabled}
                return [{"name": t.name, "description": t.description or "", "parameters": t.params_json_schema}
                        for t in getattr(agent, "tools", []) if id(t) in mine]
            return name in await self._exposed(run_context, f"agent:{getattr(agent, 'name', '')}", candidates)
        return is_enabled

    async def _exposed(self, run_context: Any, where: str, candidates) -> frozenset[str] | _All:
        key = (id(run_context), where)
        future = self._runs.get(key)
        if future is None:  # the first tool of this run and server: decide for all of them, once
            future = self._runs[key] = asyncio.get_running_loop().create_future()
            try:
                weakref.finalize(run_context, self._runs.pop, key, None)
            except TypeError:  # a context that takes no weak reference: keep a bounded number of runs
                while len(self._runs) > 1024:
                    self._runs.pop(next(iter(self._runs)))
            future.set_result(await self._decide(run_context, candidates))
        return await asyncio.shield(future) if not future.done() else future.result()

    async def _decide(self, run_context: Any, candidates) -> frozenset[str] | _All:
        self.decisions += 1
        try:
            tools = await candidates()
            context = getattr(run_context, "context", None)
            choice = await asyncio.to_thread(self.chooser.choose, tools, self.query(run_context),
                                             _from_context(context, "camdf_lam"), _from_context(context, "camdf_dials"))
        except Exception as err:  # noqa: BLE001  fail open: every tool of the run is enabled
            warnings.warn(f"camdf: tool selection failed ({type(err).__name__}: {err}); enabling every tool",
                          FailOpenWarning, stacklevel=2)
            return _ALL
        return frozenset(choice.names)


class _All:
    """Every tool (fail open)."""

    def __contains__(self, name: object) -> bool:
        return True


_ALL = _All()


def _page(cursor: str):
    import mcp_types

    return mcp_types.PaginatedRequestParams(cursor=cursor)
