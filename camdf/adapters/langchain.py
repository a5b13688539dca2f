"""LangChain v1: an ``AgentMiddleware`` that exposes the policy's selection of ``request.tools`` to the model.

>>> from langchain.agents import create_agent
>>> agent = create_agent(model, tools, middleware=[CamdfToolSelector("path/to/policy", lam=0.1)])

On every model call (``wrap_model_call`` / ``awrap_model_call``) it takes the query from the
last human message (or ``query(request)``), asks the :class:`~camdf.runtime.toolset.ToolChooser`
once per user turn (the same query over the same tools is one decision), and passes on
``request.override(tools=selection + always_include)``. ``camdf_lam`` and ``camdf_dials`` in the
agent's runtime context (a dict or an object) override ``lam`` and ``dials`` for a run. Tools
without a name (a provider's built-in tool given as a dict) are always passed on. A tool is read as every
adapter reads one (:func:`~camdf.runtime.tooltext.describe_tool`: a ``BaseTool`` by the JSON schema the model
is shown, its ``tool_call_schema``), so the same tools get the same decision through every adapter. Fail open: on
any error every tool is passed on, with one :class:`~camdf.runtime.toolset.FailOpenWarning`.

``search=True`` adds one search tool (:data:`SEARCH_TOOL`, registered on the agent as the middleware's
``tools``) over the tools the policy did not preload (a deferring policy's ``deferred``, else every tool
it left out): the model calls it with what it needs, it loads its top ``search_k`` matches
(:func:`~camdf.runtime.toolset.search_deferred`), and from then on the model sees them too (the tools a
search loaded are read back from the conversation's tool messages, so the middleware keeps no state
across runs).
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, Callable, Sequence

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from camdf.runtime.toolset import FailOpenWarning, Scorer, ToolChooser, search_deferred
from camdf.runtime.tooltext import describe_tool

#: The name of the search tool over the deferred tools (``search=True``).
SEARCH_TOOL = "camdf_search_tools"


def last_human_text(request: Any) -> str:
    """The text of the last human message of a model request ("" when there is none)."""
    for message in reversed(request.messages):
        if isinstance(message, HumanMessage):
            return message.text if isinstance(message.text, str) else str(message.content)
    return ""


def _from_context(context: Any, key: str) -> Any:
    if isinstance(context, dict):
        return context.get(key)
    return getattr(context, key, None)


class CamdfToolSelector(AgentMiddleware):
    """Expose the policy's selection of the agent's tools (plus ``always_include``) on each model call.

    Parameters
    ----------
    policy : str, path or policy object
        Model URI, model or exported folder, or a loaded policy (:class:`~camdf.runtime.toolset.ToolChooser`).
    lam, dials : optional
        Lambda and the rule's dials (the run's context may override them: ``camdf_lam``, ``camdf_dials``).
    task_value : float, optional
        The tokens one solved task is worth: lambda = 1 / task_value (a policy priced in tokens, the default).
    always_include : sequence of str
        Tool names always passed on (not counted against ``max_tools``).
    max_tools : int, optional
        Cap on the policy's selection.
    min_tools : int
        Floor on the policy's selection (default 1; 0: none): its best-ranked others are added.
    scorer : callable, optional
        ``scorer(query, tools) -> scores``: your own retriever instead of the built-in bm25 (``tools``: plain
        descriptions, as :class:`~camdf.runtime.toolset.ToolChooser` documents).
    query : callable, optional
        ``query(request) -> str``; default: the last human message's text.
    search : bool
        Add the search tool over the tools the policy did not preload.
    search_k : int
        Tools one search loads.
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, min_tools: int = 1,
                 scorer: Scorer | None = None, query: Callable[[Any], str] | None = None, search: bool = False,
                 search_k: int = 5):
        super().__init__()
        self.chooser = ToolChooser(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                                   max_tools=max_tools, min_tools=min_tools, scorer=scorer)
        self.query = query or last_human_text
        self.search_k = search_k
        # The tools and the deferred names of the latest decision: what the search tool searches.
        self._deferred: tuple[list[dict], tuple[str, ...]] = ([], ())
        self.tools = [StructuredTool.from_function(
            self._search, name=SEARCH_TOOL, response_format="content_and_artifact",
            description="Find more tools for the task: say what you need to do; the best matching tools are "
                        "loaded for your next step.")] if search else []

    def _search(self, query: str) -> tuple[str, list[str]]:
        """The search tool: the top ``search_k`` deferred tools for ``query`` (content: their names; artifact: the list)."""
        described, deferred = self._deferred
        found = search_deferred(query, described, deferred, self.search_k)
        return ("Loaded: " + ", ".join(found)) if found else "No more tools found.", found

    @staticmethod
    def _loaded(request: Any) -> set[str]:
        """The tools earlier searches of this conversation loaded (their tool messages' artifacts)."""
        return {n for m in request.messages if isinstance(m, ToolMessage) and m.name == SEARCH_TOOL
                for n in (m.artifact or [])}

    def select(self, request: Any) -> Any:
        """``request`` with its tools narrowed to the selection (unchanged when it fails: fail open)."""
        tools = list(request.tools or [])
        if not tools:
            return request
        try:
            described = [describe_tool(t) for t in tools]
            named = [i for i, d in enumerate(described) if d is not None]
            context = getattr(request.runtime, "context", None) if request.runtime is not None else None
            choice = self.chooser.choose([described[i] for i in named], self.query(request),
                                         lam=_from_context(context, "camdf_lam"),
                                         dials=_from_context(context, "camdf_dials"))
        except Exception as err:  # noqa: BLE001  fail open: the agent runs with every tool
            warnings.warn(f"camdf: tool selection failed ({type(err).__name__}: {err}); passing on all "
                          f"{len(tools)} tools", FailOpenWarning, stacklevel=2)
            return request
        keep = {named[k] for k in choice.positions}
        if len(named) < len(tools):  # tools without a name (a provider's built-in) are always passed on
            keep |= set(range(len(tools))) - set(named)
        if self.tools and not choice.failed_open:
            shown = {described[i]["name"] for i in keep if described[i] is not None}
            left = choice.deferred if choice.defers else tuple(
                described[i]["name"] for i in named if described[i]["name"] not in shown)
            self._deferred = ([described[i] for i in named], left)
            loaded = self._loaded(request) | {SEARCH_TOOL}
            keep |= {i for i, d in enumerate(described) if d is not None and d["name"] in loaded}
        return request.override(tools=[tools[i] for i in sorted(keep)])  # the exposed few, not a pass over all

    def wrap_model_call(self, request, handler):
        return handler(self.select(request))

    async def awrap_model_call(self, request, handler):
        # The first call may load the policy (seconds): off the event loop.
        return await handler(await asyncio.to_thread(self.select, request))
