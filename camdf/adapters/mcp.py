"""MCP: a proxy server in front of one or more upstream MCP servers that lists only the tools the policy exposes.

An MCP client asks ``tools/list`` with no query, so the proxy learns the task first, through a
meta-tool: ``select_tools(task)``. The channel, as the client sees it:

1. ``tools/list`` before a task is set answers ``select_tools`` and the ``always_include`` tools;
2. the client (or its model) calls ``select_tools`` with the task's text; the proxy asks the
   :class:`~camdf.runtime.toolset.ToolChooser` over every upstream tool, answers with the exposed
   names, and sends ``notifications/tools/list_changed``;
3. ``tools/list`` now answers ``select_tools``, the selection and ``always_include``;
   ``select_tools`` again sets a new task;
4. ``tools/call`` of an exposed tool is forwarded to the upstream that offers it and its answer
   returned as it is; a withheld tool is refused with an MCP error naming it
   (``on_withheld="refuse"``), or forwarded and recorded in :attr:`ToolProxy.misses`
   (``"forward"``); an upstream that exits or does not answer within ``call_timeout`` seconds
   gives an MCP error naming it, never a hang.

A policy that defers (it chose what to preload knowing a search exists: ``fallback_set``) adds a second
meta-tool once a task is set: ``search_tools(query)`` searches the tools it deferred
(:func:`~camdf.runtime.toolset.search_deferred`), exposes its top ``search_k`` and sends
``notifications/tools/list_changed``.

Fail open: when the policy fails, every tool is exposed and ``select_tools`` says why.
Upstreams are commands (stdio) or ``http(s)://`` URLs (streamable HTTP); two upstreams offering
one tool name are refused at start. A stdio upstream gets the proxy's environment (its API keys, say),
or, with ``env`` (``--env KEY``), only the named variables besides the MCP SDK's own safe defaults
(``PATH``, ``HOME``, ...). ``camdf mcp-proxy`` runs it over stdio.

**Two eras, chosen by the protocol version the client negotiates** (one process serves either: the SDK opens a
connection in the era of the client's first request):

- **2026-07-28 (stateless)**: ``tools/list`` may not vary per connection or with earlier requests, so it is
  fixed for the upstream set and in a deterministic order: ``search_tools``, ``call_tool``, then the **preload**
  (``preload``, ``--preload``: the set :func:`camdf.runtime.preload.plan_preload` fits, ``camdf preload`` prints it),
  each marked ``_meta["anthropic/alwaysLoad"]: true`` (Claude Code loads them up front and defers nothing else
  of this server). ``search_tools(query)`` answers with the policy's cost-aware set of the other tools for the
  query, their names, descriptions and input schemas (:func:`camdf.runtime.search.search_tools`: not a fixed
  k; ``search_max`` caps it); ``call_tool(name, arguments)`` forwards a call to the upstream that offers the tool.
  Nothing is kept between calls (no handle is needed: a found tool is called by its name), so two connections,
  or one before and after any call, list the same tools. A preloaded tool is also called directly. Fail open:
  when the policy fails, ``search_tools`` returns every searchable tool (up to ``search_max``) and says why.
- **Handshake era (2025-11-25 and before)**: the stateful mode above (``select_tools``, ``list_changed``), with the
  preload listed from the start.
"""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import AsyncExitStack
from typing import Any, Sequence

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from camdf.adapters.mcp_upstream import (Upstream, UpstreamError, environment, first_of, forward,
                                        open_upstream)
from camdf.runtime.search import check_max_results, search_tools
from camdf.runtime.toolset import Choice, FailOpenWarning, ToolChooser, search_deferred
from camdf.runtime.tooltext import describe_tool


def _text_tool(name: str, description: str, argument: str, about: str) -> types.Tool:
    """A meta-tool of one required string argument."""
    return types.Tool(name=name, description=description, input_schema={
        "type": "object", "properties": {argument: {"type": "string", "description": about}}, "required": [argument]})


#: The meta-tool that sets the task.
SELECT_TOOL = "select_tools"
_SELECT = _text_tool(SELECT_TOOL, "Set the task you are working on; the tools for it are then listed (tools/list). "
                     "Call it first, with the user's request as `task`, and again when the task changes.",
                     "task", "the task, in words")
#: The meta-tool that searches the tools a deferring policy did not preload.
SEARCH_TOOL = "search_tools"
_SEARCH = _text_tool(SEARCH_TOOL, "Find more tools for the current task: say what you need to do; the best matching "
                     "tools are then listed too (tools/list).", "query", "what you need")
#: The 2026-07-28 meta-tool that forwards a call of any upstream tool.
CALL_TOOL = "call_tool"
#: Claude Code's per-tool "load this up front" mark (``_meta``), on the preload and the meta-tools.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}
#: The 2026-07-28 search: the same input as the handshake era's, answering with the tools themselves.
_MODERN_SEARCH = _SEARCH.model_copy(update={"meta": ALWAYS_LOAD, "description": (
    "Find the tools for what you need to do: say it in words. Answers with the tools that fit, their names, "
    "descriptions and input schemas; call one with call_tool.")})
_CALL = types.Tool(
    name=CALL_TOOL,
    description="Call a tool that search_tools found: its name and its arguments (an object, per its input schema).",
    input_schema={"type": "object", "properties": {"name": {"type": "string", "description": "the tool's name"},
                                                   "arguments": {"type": "object", "description": "its arguments"}},
                  "required": ["name"]},
    _meta=ALWAYS_LOAD,
)
#: How long a client may keep the 2026-07-28 ``tools/list`` (it changes only when the proxy restarts).
LIST_TTL_MS = 3_600_000
ON_WITHHELD = ("refuse", "forward")


class ToolProxy:
    """The proxy's state and handlers; :meth:`run_stdio` serves it.

    Parameters
    ----------
    upstreams : sequence of str
        Each a command line (run over stdio) or an ``http(s)://`` URL (streamable HTTP).
    chooser : ToolChooser
        The policy, lambda, dials, ``always_include`` and ``max_tools``.
    on_withheld : {"refuse", "forward"}
    call_timeout : float
        Seconds an upstream has to answer a call.
    search_k : int
        Tools one ``search_tools`` call exposes.
    env : sequence of str, optional
        The environment variables a stdio upstream gets (besides the SDK's safe defaults); default: all of
        this process's. A name not set here is refused (ValueError naming it).
    preload : sequence of str
        Upstream tools listed from the start, in both eras (``camdf preload``); an unknown name is refused at
        :meth:`connect`.
    search_max : int, optional
        At most this many tools one 2026-07-28 ``search_tools`` answers (None: the policy's whole set).

    Attributes
    ----------
    task : str or None
        The current task (set by ``select_tools``).
    exposed : set of str
        The tools listed for it.
    misses : list of str
        Withheld tools that were called (``on_withheld="forward"``).
    """

    def __init__(self, upstreams: Sequence[str], chooser: ToolChooser, on_withheld: str = "refuse",
                 call_timeout: float = 60.0, search_k: int = 5, env: Sequence[str] | None = None,
                 preload: Sequence[str] = (), search_max: int | None = None):
        if not upstreams:
            raise ValueError("--upstream: give at least one upstream server (a command or an http(s):// URL)")
        if on_withheld not in ON_WITHHELD:
            raise ValueError(f"on_withheld: expected one of {', '.join(ON_WITHHELD)}, got {on_withheld!r}")
        if not call_timeout > 0:
            raise ValueError(f"call_timeout: expected seconds > 0, got {call_timeout!r}")
        if isinstance(search_k, bool) or not isinstance(search_k, int) or search_k < 1:
            raise ValueError(f"--search-k: expected an integer >= 1, got {search_k!r}")
        if isinstance(preload, str) or not all(isinstance(n, str) and n for n in preload):
            raise ValueError(f"--preload: expected a list of tool names, got {preload!r}")
        self.search_max = check_max_results(search_max, "--search-max")
        self.preload = tuple(dict.fromkeys(preload))
        self.env = environment(env)
        self.upstreams = [Upstream(s) for s in upstreams]
        self.chooser = chooser
        self.on_withheld = on_withheld
        self.call_timeout = float(call_timeout)
        self.task: str | None = None
        self.exposed: set[str] = set(chooser.always_include) | set(self.preload)
        self.misses: list[str] = []
        self.search_k = search_k
        #: The tools a deferring policy left to ``search_tools`` for the current task (ranked order).
        self.deferred: tuple[str, ...] = ()
        self._described: list[dict] = []
        self._owner: dict[str, Upstream] = {}

    # -- upstreams ---------------------------------------------------------------------------------
    async def connect(self, stack: AsyncExitStack) -> None:
        """Start (or reach) every upstream, initialise a session with it and list its tools.

        Raises UpstreamError naming the upstream (cannot start, no answer, a tool name clash)."""
        for up in self.upstreams:
            await open_upstream(up, stack, self.env, self.call_timeout)
            for tool in up.tools:
                other = self._owner.get(tool.name)
                if other is not None or tool.name in (SELECT_TOOL, SEARCH_TOOL, CALL_TOOL):
                    where = other.label if other else "the proxy's meta-tool"
                    raise UpstreamError(f"tool {tool.name!r} is offered by {up.label} and by {where}")
                self._owner[tool.name] = up
        unknown = [n for n in self.preload if n not in self._owner]
        if unknown:
            raise UpstreamError(f"--preload: no upstream offers {', '.join(map(repr, unknown))}")

    @property
    def tools(self) -> list[types.Tool]:
        """Every upstream tool, upstream by upstream."""
        return [t for up in self.upstreams for t in up.tools]

    # -- handlers ----------------------------------------------------------------------------------
    @staticmethod
    def modern(ctx: Any) -> bool:
        """Whether the request's connection speaks the stateless protocol (2026-07-28 or later)."""
        return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS

    def fixed_tools(self) -> list[types.Tool]:
        """The 2026-07-28 ``tools/list``: the meta-tools, then the preload by name, each marked always-load."""
        preload = sorted((t for t in self.tools if t.name in set(self.preload)), key=lambda t: t.name)
        marked = [t.model_copy(update={"meta": {**(t.meta or {}), **ALWAYS_LOAD}}) for t in preload]
        return [_MODERN_SEARCH, _CALL, *marked]

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        if self.modern(ctx):
            return types.ListToolsResult(tools=self.fixed_tools(), ttl_ms=LIST_TTL_MS, cache_scope="public")
        search = [_SEARCH] if self.deferred else []
        return types.ListToolsResult(tools=[_SELECT, *search] + [t for t in self.tools if t.name in self.exposed])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, dict(params.arguments or {})
        if self.modern(ctx):
            return await self._stateless_call(name, args)
        if name == SELECT_TOOL:
            return await self._select(ctx, args)
        if name == SEARCH_TOOL and self.deferred:
            return await self._search(ctx, args)
        up = self._owner.get(name)
        if up is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {name!r}: no upstream offers it")
        if name not in self.exposed:
            if self.on_withheld == "refuse":
                state = "no task is set (call select_tools first)" if self.task is None else "for this task"
                raise MCPError(types.INVALID_PARAMS, f"tool {name!r} is withheld by camdf {state}; exposed: "
                                                     f"{', '.join(sorted(self.exposed)) or 'none'}")
            self.misses.append(name)
            print(f"camdf mcp-proxy: withheld tool {name!r} called (a miss); forwarded", file=sys.stderr)
        return await forward(up, name, args, self.call_timeout)

    async def _stateless_call(self, name: str, args: dict) -> types.CallToolResult:
        """A 2026-07-28 call: the search, the call meta-tool, or an upstream tool by its name (nothing is kept)."""
        if name == SEARCH_TOOL:
            return await self._stateless_search(args)
        if name == CALL_TOOL:
            inner, inner_args = args.get("name"), args.get("arguments", {})
            if not isinstance(inner, str) or not inner:
                raise MCPError(types.INVALID_PARAMS, f"{CALL_TOOL}: `name` must be a tool's name (a string)")
            if not isinstance(inner_args, dict):
                raise MCPError(types.INVALID_PARAMS, f"{CALL_TOOL}: `arguments` must be an object, got "
                                                     f"{type(inner_args).__name__}")
            name, args = inner, dict(inner_args)
        up = self._owner.get(name)
        if up is None:
            return types.CallToolResult(is_error=True, content=[types.TextContent(
                type="text", text=f"unknown tool {name!r}: no upstream offers it; find tools with {SEARCH_TOOL}")])
        return await forward(up, name, args, self.call_timeout)

    async def _stateless_search(self, args: dict) -> types.CallToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise MCPError(types.INVALID_PARAMS, f"{SEARCH_TOOL}: `query` must be a non-empty string")
        tools = self.tools
        described = [describe_tool(t) for t in tools]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FailOpenWarning)
            answer = await anyio.to_thread.run_sync(
                lambda: search_tools(self.chooser, described, query, self.preload, self.search_max))
        for w in caught:
            print(f"camdf mcp-proxy: {w.message}", file=sys.stderr)
        by_name = {t.name: t for t in tools}
        found = [{"name": n, "description": by_name[n].description or "", "inputSchema": by_name[n].input_schema}
                 for n in answer.names]
        body: dict[str, Any] = {"tools": found, "searched": answer.searched}
        if answer.failed_open:
            body["note"] = f"the policy failed, so every tool is returned: {answer.error}"
        elif answer.warnings:
            body["note"] = "; ".join(answer.warnings)
        text = (f"{len(found)} of {answer.searched} tools for this: {', '.join(answer.names) or 'none'}; call one with "
                f"{CALL_TOOL}(name, arguments).\n" + json.dumps(body, ensure_ascii=False))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=body)

    async def _select(self, ctx: Any, args: dict) -> types.CallToolResult:
        task = args.get("task")
        if not isinstance(task, str) or not task.strip():
            raise MCPError(types.INVALID_PARAMS, f"{SELECT_TOOL}: `task` must be a non-empty string")
        tools = self.tools
        choice = await anyio.to_thread.run_sync(self.decide, task)
        await self._changed(ctx)
        shown = [t.name for t in tools if t.name in self.exposed]
        text = f"{len(shown)} of {len(tools)} tools exposed for this task: {', '.join(shown) or 'none'}"
        if choice.failed_open:
            text += f" (the policy failed, so every tool is exposed: {choice.error})"
        if self.deferred:
            text += f"; {len(self.deferred)} more can be found with {SEARCH_TOOL}"
        if choice.warnings:
            text += "; note: " + "; ".join(choice.warnings)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    def decide(self, task: str) -> Choice:
        """Decide over every upstream tool for ``task`` and make it the current task (what ``select_tools`` does
        before it answers); the policy's failure and warnings are printed on stderr."""
        described = [describe_tool(t) for t in self.tools]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FailOpenWarning)
            choice = self.chooser.choose(described, task)
        for w in caught:
            print(f"camdf mcp-proxy: {w.message}", file=sys.stderr)
        self.task = task
        self.exposed = set(choice.names) | set(self.chooser.always_include) | set(self.preload)
        self.deferred = choice.deferred if choice.defers else ()
        self._described = described
        return choice

    async def _search(self, ctx: Any, args: dict) -> types.CallToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise MCPError(types.INVALID_PARAMS, f"{SEARCH_TOOL}: `query` must be a non-empty string")
        found = search_deferred(query, self._described, self.deferred, self.search_k)
        self.exposed |= set(found)
        self.deferred = tuple(n for n in self.deferred if n not in set(found))
        await self._changed(ctx)
        text = f"found and exposed: {', '.join(found)}" if found else "no more tools found"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    @staticmethod
    async def _changed(ctx: Any) -> None:
        try:
            await ctx.session.send_tool_list_changed()
        except Exception as err:  # noqa: BLE001  a client without a back channel re-lists on its own
            print(f"camdf mcp-proxy: could not send tools/list_changed: {err}", file=sys.stderr)

    def server(self) -> Server:
        """The lowlevel MCP server of the proxy (advertising ``tools.listChanged``)."""
        return Server("camdf-proxy", on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                      instructions=f"Call {SELECT_TOOL} with the task first; the tools for it are then listed.")

    async def run_stdio(self) -> None:
        """Connect the upstreams, then serve the proxy over this process's stdin and stdout until it closes."""
        from mcp.server.stdio import stdio_server

        try:
            async with AsyncExitStack() as stack:
                await self.connect(stack)
                server = self.server()
                options = server.create_initialization_options(NotificationOptions(tools_changed=True))
                async with stdio_server() as (read, write):
                    await server.run(read, write, options)
        except BaseExceptionGroup as group:  # the transports' task groups wrap the one error that matters
            found = first_of(group, UpstreamError)
            if found is not None:
                raise found from None
            raise
