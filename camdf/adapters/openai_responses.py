"""OpenAI Responses API tool search, executed by the client: camdf answers the model's ``tool_search_call``.

Data in, data out (Responses API dicts; no client, no network). The request's ``tools`` carry a
client-executed ``tool_search`` tool (``ToolSearchToolParam`` with ``execution: "client"``) and every
function or custom tool with ``defer_loading: true``, except the preload; the model sees the deferred
tools' names and descriptions, not their schemas. When it searches, its response's output holds a
``tool_search_call`` (``ResponseToolSearchCall``, ``execution: "client"``) whose ``arguments`` are the
search tool's ``parameters`` filled in (``{"query": ...}``); the client answers with a
``tool_search_output`` input item (``ResponseToolSearchOutputItemParamParam``) of the same ``call_id``,
whose ``tools`` are the found tools' definitions, and from then on the model can call them.
:meth:`ClientToolSearch.output` is that answer, and the search is camdf's
(:func:`~camdf.runtime.search.search_tools`): the policy's cost-aware set of the deferred tools for the
model's query, ranked order first, not a fixed k:

>>> search = ClientToolSearch(preload=["get_order"])          # the package's default policy
>>> request_tools = search.prepare(my_tools)                  # tool_search + get_order + deferred tools
>>> response = client.responses.create(model=..., input=history, tools=request_tools)
>>> for item in response.output:
...     if item.type == "tool_search_call" and item.execution == "client":
...         history += [item, search.output(item, my_tools)]   # then create(input=history, ...) again

``preload`` and ``always_include`` tools are loaded up front: not deferred, never returned by a search
(``camdf preload`` / :func:`camdf.runtime.preload.plan_preload` fit such a set). ``max_results`` caps one
answer. Fail open: when the policy fails, the answer holds every deferred tool (up to ``max_results``), with
one :class:`~camdf.runtime.toolset.FailOpenWarning`.

What is searched: the top-level ``function`` and ``custom`` tools (the kinds that take ``defer_loading``).
Every other tool (``namespace``, ``mcp``, the hosted tools) passes through :meth:`~ClientToolSearch.prepare`
as given and is never in an answer: a ``namespace`` whose functions you defer yourself is not reachable through
camdf's search. A found tool is returned as the request declares it (``defer_loading: true`` kept, as OpenAI's
own Codex client answers), so the definitions the model is given match the request's.

The OpenAI Agents SDK's runner does not execute a client ``tool_search_call`` (it raises); for the Agents
SDK see :mod:`camdf.adapters.openai_agents`.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from camdf.runtime.search import SearchBackend
from camdf.runtime.toolset import Scorer
from camdf.runtime.tooltext import check_tool, describe_tool

#: What the model is told the search tool does.
SEARCH_DESCRIPTION = ("Find the tools for a task: say in words what you need to do; the tools it needs are "
                      "loaded for your next step.")
#: The search tool's parameters: the model's query (a ``tool_search_call``'s ``arguments``).
SEARCH_PARAMETERS = {"type": "object",
                     "properties": {"query": {"type": "string", "description": "What you need to do, in words."}},
                     "required": ["query"], "additionalProperties": False}
#: The tool types a search can load (the Responses API's deferrable top-level tools).
SEARCHABLE = ("function", "custom")



def _item(call: Any) -> dict:
    """A ``tool_search_call`` as a dict: the dict itself, or the SDK's ``ResponseToolSearchCall`` dumped."""
    if isinstance(call, dict):
        return call
    dump = getattr(call, "model_dump", None)
    if not callable(dump):
        raise ValueError(f"call: expected a tool_search_call (a dict or the SDK's ResponseToolSearchCall), "
                         f"got {type(call).__name__}")
    return dump()


def _query(arguments: Any) -> str:
    """The model's query from a call's ``arguments`` (an object, or its JSON text); "" when there is none: the
    arguments are the model's, so a malformed one is answered (with nothing found), not refused."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return ""
    query = arguments.get("query") if isinstance(arguments, dict) else None
    return query if isinstance(query, str) else ""


class ClientToolSearch(SearchBackend):
    """The client-executed ``tool_search`` of one policy, for the OpenAI Responses API.

    Parameters
    ----------
    policy, lam, task_value, dials, always_include, preload, max_tools, min_tools, scorer, max_results
        As :class:`~camdf.runtime.search.SearchBackend`.
    description : str
        What the model is told the search tool does.

    Raises
    ------
    ValueError
        Naming the argument that is wrong (``preload``, ``max_results``, or one of :class:`ToolChooser`'s).
    """

    def __init__(self, policy: Any = None, *, lam: float | None = None, task_value: float | None = None,
                 dials: dict | None = None, always_include: Sequence[str] = (), preload: Sequence[str] = (),
                 max_tools: int | None = None, min_tools: int = 1, scorer: Scorer | None = None,
                 max_results: int | None = None, description: str = SEARCH_DESCRIPTION):
        super().__init__(policy, lam=lam, task_value=task_value, dials=dials, always_include=always_include,
                         preload=preload, max_tools=max_tools, min_tools=min_tools, scorer=scorer,
                         max_results=max_results)
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"description: expected a non-empty string, got {description!r}")
        self.description = description

    def definition(self) -> dict:
        """The search tool: ``{"type": "tool_search", "execution": "client", "description", "parameters"}``
        (``ToolSearchToolParam``)."""
        return {"type": "tool_search", "execution": "client", "description": self.description,
                "parameters": SEARCH_PARAMETERS}

    def _catalog(self, tools: Sequence[dict]) -> tuple[list[dict], dict[str, int]]:
        """``tools`` checked (the request's tools, camdf's own search tool left out) and the position of each
        searchable tool by name; ValueError naming ``tools`` or ``tools[i]``."""
        if isinstance(tools, (str, bytes, dict)) or not isinstance(tools, Sequence):
            raise ValueError(f"tools: expected a list of Responses API tools, got {type(tools).__name__}")
        own = self.definition()
        kept: list[dict] = []
        searchable: dict[str, int] = {}
        seen: dict[str, int] = {}
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
                raise ValueError(f"tools[{i}]: expected a Responses API tool (an object with a \"type\"), "
                                 f"got {tool!r:.80}")
            if tool == own:  # a list prepare() returned: its search tool is added again, once
                continue
            kind = tool["type"]
            if kind == "tool_search":
                raise ValueError(f"tools[{i}]: a tool_search tool is already there; ClientToolSearch adds its own "
                                 f"(give the tools without it)")
            if kind in SEARCHABLE:
                if isinstance(tool.get("function"), dict):
                    raise ValueError(f"tools[{i}]: a Chat Completions tool ({{\"type\": \"function\", \"function\": "
                                     f"{{...}}}}); the Responses API takes the flat shape {{\"type\": \"function\", "
                                     f"\"name\": ..., \"parameters\": ...}}")
                plain = describe_tool(tool)
                if plain is None:
                    raise ValueError(f"tools[{i}]: expected a {kind} tool with a non-empty \"name\" (a string), "
                                     f"got {tool.get('name')!r:.80}")
                check_tool(i, tool, plain, seen)
                searchable[plain["name"]] = len(kept)
            kept.append(tool)
        missing = [n for n in self.up_front if n not in searchable]
        if missing:
            raise ValueError(f"preload/always_include: {sorted(missing)} are not among the tools' function or "
                             f"custom tools")
        return kept, searchable

    def prepare(self, tools: Sequence[dict]) -> list[dict]:
        """The request's ``tools``: the search tool, then ``tools`` in their order, each function or custom tool
        with ``defer_loading: true`` except ``preload`` and ``always_include`` (loaded: a ``defer_loading`` they
        carry is dropped); other tools as given.

        Parameters
        ----------
        tools : sequence of dict
            Responses API tools (``ToolParam``; function tools in the flat shape, ``{"type": "function",
            "name", "description", "parameters", ...}``). A list this method returned is taken too.

        Returns
        -------
        list of dict
            The request's tools. Without a tool to defer (every one preloaded), no search tool is added: the
            API's tool search needs something to search.

        Raises
        ------
        ValueError
            Naming ``tools[i]``: not a tool, a function tool without a name or in the Chat Completions shape, a
            name given twice, a ``tool_search`` tool of its own; or a ``preload`` / ``always_include`` name that
            is not among the tools.
        """
        kept, searchable = self._catalog(tools)
        up_front = self.up_front
        out = []
        for tool in kept:
            if tool["type"] not in SEARCHABLE:
                out.append(tool)
            elif tool["name"] in up_front:
                out.append({k: v for k, v in tool.items() if k != "defer_loading"} if "defer_loading" in tool
                           else tool)
            else:
                out.append({**tool, "defer_loading": True})
        deferred = len(searchable) > len(up_front)
        return ([self.definition()] if deferred else []) + out

    def output(self, call: Any, tools: Sequence[dict]) -> dict:
        """The ``tool_search_output`` input item answering the model's client-executed ``tool_search_call``.

        Parameters
        ----------
        call : dict or the SDK's ``ResponseToolSearchCall``
            The call, as the response's output holds it.
        tools : sequence of dict
            The tools given to :meth:`prepare` (or the list it returned).

        Returns
        -------
        dict
            ``{"type": "tool_search_output", "call_id": <the call's>, "execution": "client", "status":
            "completed", "tools": [...]}``: the definitions (as :meth:`prepare` declares them) of camdf's set of
            the deferred tools for the model's query, ranked order first, at most ``max_results``; none for a
            call without a query. Every deferred tool when the policy fails (one ``FailOpenWarning``).

        Raises
        ------
        ValueError
            ``call`` is not a client-executed ``tool_search_call`` with a ``call_id``; ``tools`` as
            :meth:`prepare`.
        """
        item = _item(call)
        if item.get("type") != "tool_search_call":
            raise ValueError(f"call: expected a tool_search_call item, got type {item.get('type')!r}")
        if item.get("execution") != "client":
            raise ValueError(f"call: execution is {item.get('execution')!r}: only a client-executed tool_search_call "
                             f"(execution \"client\") is answered by the client; the API runs the others itself")
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ValueError(f"call: expected a non-empty call_id (the tool_search_output must carry it), "
                             f"got {call_id!r}")
        declared = [t for t in self.prepare(tools) if t != self.definition()]
        by_name = {t["name"]: t for t in declared if t["type"] in SEARCHABLE}
        plain = [describe_tool(t) for t in by_name.values()]
        answer = self.search(plain, _query(item.get("arguments")))
        return {"type": "tool_search_output", "call_id": call_id, "execution": "client", "status": "completed",
                "tools": [by_name[n] for n in answer.names]}
