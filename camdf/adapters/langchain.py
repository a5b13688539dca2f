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

camdf as the agent's tool search (``search=True, preload=[...]``): the model is shown the ``preload`` tools
(and ``always_include``) as they are, and the search tool; every other tool is reachable through the search,
which answers the model's query with camdf's cost-aware set of them (:func:`~camdf.runtime.search.search_tools`:
the policy's stop, not a fixed k; at most ``max_results``), loaded for the model's next calls as above. No
decision is made before the model searches, and the search uses the middleware's ``lam`` and ``dials`` (the
run's ``camdf_lam`` and ``camdf_dials`` are not read by a tool call). Fail open: a policy that fails makes the
search load every tool, with one :class:`~camdf.runtime.toolset.FailOpenWarning`. This works with any chat model,
since the tools are passed on or not.

For an agent that keeps the provider's own search (:class:`langchain.agents.middleware.ProviderToolSearchMiddleware`,
Anthropic's or OpenAI's server-side search over tools marked ``extras["defer_loading"]``), :func:`searchable_tools`
gives it the same split: every tool but the preload searchable:

>>> from langchain.agents.middleware import ProviderToolSearchMiddleware
>>> middleware = [ProviderToolSearchMiddleware(searchable_tools=searchable_tools(tools, preload=["get_order"]))]
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, Callable, Sequence

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from camdf.runtime.search import check_max_results, check_names, search_tools
from camdf.runtime.toolset import FailOpenWarning, Scorer, ToolChooser, search_deferred
from camdf.runtime.tooltext import check_tools, describe_tool

#: The name of the search tool over the deferred tools (``search=True``).
SEARCH_TOOL = "camdf_search_tools"


def last_human_text(request: Any) -> str:
    """The text of the last human message of a model request ("" when there is none)."""
    for message in reversed(request.messages):
        if isinstance(message, HumanMessage):
            return message.text if isinstance(message.text, str) else str(message.content)
    return ""



def searchable_tools(tools: Sequence[Any], preload: Sequence[str] = ()) -> list[str]:
    """The names to give ``ProviderToolSearchMiddleware(searchable_tools=...)``: every tool but the preload.

    Parameters
    ----------
    tools : sequence of BaseTool or dict
        The agent's tools (``create_agent(model, tools, ...)``). Only a ``BaseTool`` can be deferred by
        ``ProviderToolSearchMiddleware`` (it marks ``extras["defer_loading"]``), so dict tools are never searchable.
    preload : sequence of str
        The names loaded up front, as :class:`CamdfToolSelector`'s ``preload``.

    Returns
    -------
    list of str
        The ``BaseTool`` names not in ``preload``, in the order of ``tools``.
    """
    preload = check_names(preload, "preload")
    names = [t.name for t in tools if isinstance(t, BaseTool)]
    known = set(names)
    missing = [n for n in preload if n not in known]
    if missing:
        raise ValueError(f"preload: {missing} are not among the tools (BaseTool objects: {len(names)})")
    skip = set(preload)
    return [n for n in names if n not in skip]


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
        Tools one search loads when the policy chose what to preload (``preload`` not given).
    preload : sequence of str, optional
        With ``search=True``: camdf is the agent's tool search. These tools (and ``always_include``) are passed on
        as they are; every other tool is reached through the search tool, which answers with camdf's set for the
        model's query. None (the default): the policy chooses what to preload for the turn.
    max_results : int, optional
        At most this many tools in one search's answer (None: the policy's whole set; ``search_k`` caps the
        search when ``preload`` is not given).
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None,
                 always_include: Sequence[str] = (), max_tools: int | None = None, min_tools: int = 1,
                 scorer: Scorer | None = None, query: Callable[[Any], str] | None = None, search: bool = False,
                 search_k: int = 5, preload: Sequence[str] | None = None, max_results: int | None = None):
        super().__init__()
        if preload is not None and not search:
            raise ValueError("preload: the tools not preloaded are reached only through the search tool; "
                             "give search=True")
        self.chooser = ToolChooser(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                                   max_tools=max_tools, min_tools=min_tools, scorer=scorer)
        self.query = query or last_human_text
        self.search_k = search_k
        self.preload = None if preload is None else check_names(preload, "preload")
        self.max_results = check_max_results(max_results)
        # The tools and the deferred names of the latest decision: what the search tool searches. With
        # ``preload``: the latest model call's tools and the names loaded up front, which it leaves out.
        self._deferred: tuple[list[dict], tuple[str, ...]] = ([], ())
        self.tools = [StructuredTool.from_function(
            self._search, name=SEARCH_TOOL, response_format="content_and_artifact",
            description="Find more tools for the task: say what you need to do; the best matching tools are "
                        "loaded for your next step.")] if search else []

    def _search(self, query: str) -> tuple[str, list[str]]:
        """The search tool (content: the names it loaded; artifact: their list): camdf's set of the tools not loaded
        up front for ``query`` (with ``preload``), else the top ``search_k`` deferred tools."""
        described, names = self._deferred
        if self.preload is not None:
            found = list(search_tools(self.chooser, described, query, preload=names,
                                      max_results=self.max_results).names)
        else:
            found = search_deferred(query, described, names, self.search_k)[: self.max_results]
        return ("Loaded: " + ", ".join(found)) if found else "No more tools found.", found

    @staticmethod
    def _loaded(request: Any) -> set[str]:
        """The tools earlier searches of this conversation loaded (their tool messages' artifacts)."""
        return {n for m in request.messages if isinstance(m, ToolMessage) and m.name == SEARCH_TOOL
                for n in (m.artifact or [])}

    def select(self, request: Any) -> Any:
        """``request`` with its tools narrowed to the selection (unchanged when it fails: fail open); with
        ``preload``, to the tools loaded up front and those the conversation's searches loaded."""
        tools = list(request.tools or [])
        if not tools:
            return request
        if self.preload is not None:
            return self._preloaded(request, tools)
        try:
            described = [describe_tool(t) for t in tools]
            check_tools(tools, described)  # a tool a model could not call: every tool (one warning)
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

    def _preloaded(self, request: Any, tools: list) -> Any:
        """``request`` with the tools loaded up front, the search tool and what earlier searches loaded (tools
        without a name always). A ``preload`` name not among the request's tools is a ValueError."""
        described = [describe_tool(t) for t in tools]
        check_tools(tools, described)
        named = [d for d in described if d is not None]
        known = {d["name"] for d in named}
        missing = [n for n in self.preload if n not in known]
        if missing:
            raise ValueError(f"preload: {missing} are not among the agent's tools")
        up_front = {*self.preload, *self.chooser.always_include, SEARCH_TOOL}
        self._deferred = (named, tuple(up_front))
        shown = up_front | self._loaded(request)
        return request.override(tools=[t for t, d in zip(tools, described) if d is None or d["name"] in shown])

    def wrap_model_call(self, request, handler):
        return handler(self.select(request))

    async def awrap_model_call(self, request, handler):
        # The first call may load the policy (seconds): off the event loop.
        return await handler(await asyncio.to_thread(self.select, request))
