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

``search=True`` adds one search tool (:attr:`CamdfToolFilter.search_tool`, named :data:`SEARCH_TOOL`;
:meth:`~CamdfToolFilter.enable` appends it, an agent of MCP servers alone lists it in ``tools``) over
the tools the policy did not preload in this run (a deferring policy's ``deferred``, else every tool it
left out): the model calls it with what it needs, it loads the top ``search_k`` matches
(:func:`~camdf.runtime.toolset.search_deferred`), and from the next turn on they are enabled too.

``preload=[...]`` (implies ``search``) makes it a deferred-tool harness with camdf as the search: every run
starts with the preload (and ``always_include``) enabled, no decision over the run's input, and the search
tool answers the model's query with the policy's cost-aware set of the other tools
(:func:`~camdf.runtime.search.search_tools`: ranked order first, not a fixed k; at most ``max_results``),
enabled from the next turn on. Fail open: when the policy fails, a search loads every other tool, with one
:class:`~camdf.runtime.toolset.FailOpenWarning`:

>>> flt = CamdfToolFilter(preload=["get_order"])              # the package's default policy
>>> agent = Agent(name="shop", tools=flt.enable([get_order, refund_order, ...]))

What the SDK (0.24) offers for deferred tools, and how camdf fits it:

- **OpenAI's hosted search** (Responses models only): function tools with ``defer_loading=True`` behind
  ``ToolSearchTool()``, searched by the API (``tool_namespace`` groups them for it). :meth:`CamdfToolFilter.defer`
  builds that list: the preload loaded, every other function tool deferred. camdf chooses what is loaded up
  front; the search itself is OpenAI's, not camdf's cost-aware set.
- **A client-executed search** (``ToolSearchTool(execution="client")``): the SDK's runner refuses the model's
  client ``tool_search_call`` (``ModelBehaviorError``: "Handle the tool_search_call yourself"), so camdf cannot
  be the Responses API's ``tool_search`` inside ``Runner.run``. camdf's search in the SDK is its own function
  tool (above), which works with every model; for the Responses API's own client-executed tool search, drive
  the API directly with :class:`camdf.adapters.openai_responses.ClientToolSearch`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import warnings
import weakref
from typing import Any, Callable, Sequence

from agents import FunctionTool, ToolSearchTool
from agents.mcp import ToolFilterContext

from camdf.common.waits import TOOL_LIST, within
from camdf.runtime.search import check_max_results, search_tools
from camdf.runtime.toolset import FailOpenWarning, Scorer, ToolChooser, search_deferred
from camdf.runtime.tooltext import check_tools, describe_tool

#: The name of the search tool over the deferred tools (``search=True``).
SEARCH_TOOL = "camdf_search_tools"


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


def _run(context: Any) -> int:
    """A run's identity: its usage record, which the run's context wrapper and every tool call's
    ``ToolContext`` (a copy of the wrapper) share."""
    return id(getattr(context, "usage", None) or context)


class CamdfToolFilter:
    """One set decision per run and server, answered tool by tool (``tool_filter``, ``is_enabled``).

    Parameters
    ----------
    policy, lam, dials, always_include, max_tools, min_tools, scorer
        As :class:`~camdf.runtime.toolset.ToolChooser` (``min_tools`` default 1; ``scorer(query, tools)``: your own
        retriever, given plain descriptions).
    query : callable, optional
        ``query(run_context) -> str``; default: the run's last user text.
    search : bool
        Add the search tool over the tools the policy did not preload (implied by ``preload``).
    search_k : int
        Tools one search loads (without ``preload``).
    preload : sequence of str, optional
        Tool names every run starts with (and ``always_include``); the search tool (implied) answers with the
        policy's cost-aware set of the others. None (the default): the policy decides per run.
    max_results : int, optional
        With ``preload``: at most this many tools one search loads (None: the policy's whole set).

    Attributes
    ----------
    decisions : int
        Set decisions made (one per run and server, or per run for the function tools; with ``preload``, the
        runs' starts, where the set is the preload and no policy is asked).
    search_tool : FunctionTool or None
        The search tool (``search=True`` or ``preload``).
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, min_tools: int = 1,
                 scorer: Scorer | None = None, query: Callable[[Any], str] | None = None, search: bool = False,
                 search_k: int = 5, preload: Sequence[str] | None = None, max_results: int | None = None):
        self.chooser = ToolChooser(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                                   max_tools=max_tools, min_tools=min_tools, scorer=scorer)
        if preload is not None and (isinstance(preload, (str, bytes)) or not isinstance(preload, Sequence)
                                    or not all(isinstance(n, str) and n for n in preload)):
            raise ValueError(f"preload: expected a list of tool names or None, got {preload!r}")
        self.preload = None if preload is None else tuple(dict.fromkeys(preload))
        self.max_results = check_max_results(max_results)
        search = search or self.preload is not None
        self.query = query or run_input_text
        self.decisions = 0
        self.search_k = search_k
        self._servers: dict[str, Any] = {}
        self._enabled: list[FunctionTool] = []
        self._runs: dict[tuple[int, str], asyncio.Future] = {}  # each run's and server's decision (a task)
        # Per run: the described tools and deferred names of its decisions (what a search searches), and
        # the names its searches loaded.
        self._deferred: dict[int, tuple[list[dict], list[str]]] = {}
        self._loaded: dict[int, set[str]] = {}
        self.search_tool = FunctionTool(
            name=SEARCH_TOOL, on_invoke_tool=self._search,
            description="Find more tools for the task: say what you need to do; the best matching tools are "
                        "loaded for your next step.",
            params_json_schema={"type": "object", "properties": {"query": {"type": "string"}},
                                "required": ["query"], "additionalProperties": False},
        ) if search else None

    @property
    def up_front(self) -> frozenset[str]:
        """The tools loaded up front with ``preload`` and in :meth:`defer`: ``preload`` and ``always_include``."""
        return frozenset(self.preload or ()) | frozenset(self.chooser.always_include)

    async def _search(self, context: Any, arguments: str) -> str:
        """The search tool: load the deferred tools of this run for the model's query (with ``preload``: the
        policy's set of the tools not preloaded; else the top ``search_k`` of what the run's decision left out)."""
        try:
            query = json.loads(arguments or "{}").get("query", "")
        except (ValueError, AttributeError):
            query = ""
        described, deferred = self._deferred.get(_run(context), ([], []))
        loaded = self._loaded.setdefault(_run(context), set())
        if self.preload is None:
            found = search_deferred(str(query), described, [n for n in deferred if n not in loaded], self.search_k)
        else:
            answer = await asyncio.to_thread(search_tools, self.chooser, described, str(query),
                                             tuple(self.up_front), self.max_results)
            found = list(answer.names)
        loaded.update(found)
        return ("Loaded: " + ", ".join(found)) if found else "No more tools found."

    def attach(self, server: Any) -> Any:
        """Make this filter ``server``'s ``tool_filter`` (an SDK MCP server) and return the server."""
        server.tool_filter = self
        self._servers[server.name] = server
        return server

    def enable(self, tools: Sequence[FunctionTool]) -> list[FunctionTool]:
        """Set each function tool's ``is_enabled`` to this filter's decision and return the tools (and the
        search tool, when there is one)."""
        tools = [t for t in tools if t is not self.search_tool]
        for tool in tools:
            tool.is_enabled = self._is_enabled(tool.name)
            self._enabled.append(tool)
        return tools + ([self.search_tool] if self.search_tool is not None else [])

    def defer(self, tools: Sequence[Any]) -> list[Any]:
        """``tools`` for OpenAI's hosted tool search: the preload (and ``always_include``) as given, a copy of
        every other function tool with ``defer_loading=True``, then ``ToolSearchTool()`` (when one was deferred).

        The API's search finds the deferred tools, not camdf's policy (a Responses model only: the SDK refuses
        deferred tools elsewhere). Other tools (hosted, MCP) pass through; the given tools are not changed.

        Raises
        ------
        ValueError
            ``tools`` holds a ``ToolSearchTool`` already.
        """
        if any(isinstance(t, ToolSearchTool) for t in tools):
            raise ValueError("tools: a ToolSearchTool is already there; defer() adds it (give the tools without it)")
        keep = self.up_front | {SEARCH_TOOL}
        out = []
        for tool in tools:
            if isinstance(tool, FunctionTool) and tool.name not in keep and not tool.defer_loading:
                tool = copy.copy(tool)  # as the SDK's tool_namespace() does: the caller's tool is not changed
                tool.defer_loading = True
            out.append(tool)
        deferred = any(isinstance(t, FunctionTool) and t.defer_loading for t in out)
        return out + ([ToolSearchTool()] if deferred else [])

    async def __call__(self, context: ToolFilterContext, tool: Any) -> bool:
        server = self._servers.get(context.server_name)

        async def candidates():
            if server is None:
                raise ValueError(f"MCP server {context.server_name!r} was not attached (CamdfToolFilter.attach)")
            tools, cursor = [], None
            while True:
                page = await within(server.session.list_tools(params=None if cursor is None else _page(cursor)),
                                    TOOL_LIST, f"MCP server {context.server_name!r}'s tool list")
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    return tools
        exposed = await self._exposed(context.run_context, f"mcp:{context.server_name}", candidates)
        return tool.name in exposed or tool.name in self._loaded.get(_run(context.run_context), ())

    def _is_enabled(self, name: str):
        async def is_enabled(run_context: Any, agent: Any) -> bool:
            async def candidates():
                mine = {id(t) for t in self._enabled}
                return [t for t in getattr(agent, "tools", []) if id(t) in mine]
            exposed = await self._exposed(run_context, f"agent:{getattr(agent, 'name', '')}", candidates)
            return name in exposed or name in self._loaded.get(_run(run_context), ())
        return is_enabled

    async def _exposed(self, run_context: Any, where: str, candidates) -> frozenset[str] | _All:
        """The run's decision for ``where``: made once, in a task of its own that every tool check awaits shielded,
        so a check the SDK or the caller cancels neither cancels the decision nor leaves the next check waiting on
        a decision nobody makes; a decision cancelled itself is made again by the next check."""
        key = (_run(run_context), where)
        while True:
            decision = self._runs.get(key)
            if decision is None or decision.cancelled():  # the first tool of this run and server: decide, once
                if decision is None:
                    try:
                        weakref.finalize(run_context, self._forget, key)
                    except TypeError:  # a context that takes no weak reference: keep a bounded number of runs
                        while len(self._runs) >= 1024:
                            self._forget(next(iter(self._runs)))
                decision = self._runs[key] = asyncio.ensure_future(self._decide(run_context, candidates))
            try:
                return await asyncio.shield(decision)
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if decision.cancelled() and not (me is not None and me.cancelling()):
                    continue  # the decision was cancelled, not this check: decide again
                raise

    def _forget(self, key: tuple[int, str]) -> None:
        """Drop a finished run's decision (and its search state)."""
        self._runs.pop(key, None)
        self._deferred.pop(key[0], None)
        self._loaded.pop(key[0], None)

    async def _decide(self, run_context: Any, candidates) -> frozenset[str] | _All:
        self.decisions += 1
        try:
            raw = await candidates()
            tools = [describe_tool(t) for t in raw]
            check_tools(raw, tools)  # a tool a model could not call: every tool (one warning)
            if self.preload is not None:  # the run starts with the preload; the search finds the rest
                described, _ = self._deferred.setdefault(_run(run_context), ([], []))
                described += tools
                return frozenset(self.up_front)
            context = getattr(run_context, "context", None)
            choice = await asyncio.to_thread(self.chooser.choose, tools, self.query(run_context),
                                             _from_context(context, "camdf_lam"), _from_context(context, "camdf_dials"))
        except Exception as err:  # noqa: BLE001  fail open: every tool of the run is enabled
            warnings.warn(f"camdf: tool selection failed ({type(err).__name__}: {err}); enabling every tool",
                          FailOpenWarning, stacklevel=2)
            return _ALL
        if self.search_tool is not None and not choice.failed_open:
            shown = set(choice.names)
            left = choice.deferred if choice.defers else tuple(t["name"] for t in tools if t["name"] not in shown)
            described, deferred = self._deferred.setdefault(_run(run_context), ([], []))
            described += tools
            known = set(deferred)  # once: a catalog defers thousands of tools
            deferred += [n for n in left if n not in known]
        return frozenset(choice.names)


class _All:
    """Every tool (fail open)."""

    def __contains__(self, name: object) -> bool:
        return True


_ALL = _All()


def _page(cursor: str):
    import mcp_types

    return mcp_types.PaginatedRequestParams(cursor=cursor)
