"""camdf as a LangChain v1 agent's tool search: ``create_agent`` with a scripted fake chat model that searches, is
shown what camdf found, and calls one of those tools, which runs; and camdf's preload split given to LangChain's own
``ProviderToolSearchMiddleware``, run on a real ``ModelRequest`` for a real ``ChatAnthropic``."""

import asyncio
import re

import pytest
from anthropic.types import ToolParam
from langchain.agents import create_agent
from langchain.agents.middleware import ProviderToolSearchMiddleware
from langchain.agents.middleware.types import ModelRequest
from langchain_anthropic import ChatAnthropic
from langchain_anthropic.chat_models import convert_to_anthropic_tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from camdf.adapters.langchain import SEARCH_TOOL, CamdfToolSelector, searchable_tools
from camdf.runtime.search import search_tools
from camdf.runtime.toolset import FailOpenWarning, ToolChooser
from camdf.runtime.tooltext import describe_tool

from .test_anthropic_search import PRELOAD, SAAS, SEARCH_QUERY, TASK, _valid


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording the tool names of every bind_tools call (what each model call is
    shown) and the messages of every call (what it reads); its replies are :func:`_script`'s, which read both."""

    seen: list = []
    read: list = []

    def bind_tools(self, tools, **kwargs):
        self.seen.append([t.name if hasattr(t, "name") else t["name"] for t in tools])
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.read.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _args(name: str) -> dict:
    """Arguments for a catalog tool: its required parameters, filled in."""
    spec = next(s for s in SAAS if s["name"] == name)["parameters"]
    return {k: {"amount": 4200} if spec["properties"][k]["type"] == "object" else "ch_3PqR" for k in spec["required"]}


def _script(model: ScriptedModel, query: str):
    """The model's turns: search with ``query``; of the tools the search's answer names (in its order) and the call
    is shown, call the one whose name shares the most words with the task (the first, on a tie); then answer."""
    yield AIMessage(content="", tool_calls=[{"name": SEARCH_TOOL, "args": {"query": query}, "id": "call_search"}])
    answer = [m for m in model.read[-1] if isinstance(m, ToolMessage) and m.name == SEARCH_TOOL][-1]
    named = answer.content.removeprefix("Loaded: ").split(", ")
    words = set(re.findall(r"[a-z]+", TASK.lower()))
    pick = max((n for n in named if n in model.seen[-1]), key=lambda n: len(set(n.split("_")) & words))
    yield AIMessage(content="", tool_calls=[{"name": pick, "args": _args(pick), "id": "call_tool"}])
    yield AIMessage(content="Refunded the duplicate charge.")


def _model(query: str = SEARCH_QUERY) -> ScriptedModel:
    model = ScriptedModel(messages=iter(()), seen=[], read=[])
    model.messages = _script(model, query)
    return model


def _tools(ran: list) -> list[StructuredTool]:
    """The catalog as LangChain tools with their JSON schemas; each records its call in ``ran``."""
    def make(spec):
        def run(**kwargs):
            ran.append((spec["name"], kwargs))
            return f"{spec['name']}: ok"
        return StructuredTool.from_function(run, name=spec["name"], description=spec["description"],
                                            args_schema=spec["parameters"])
    return [make(s) for s in SAAS]


def _run(middleware: CamdfToolSelector, model: ScriptedModel, ran: list) -> list:
    agent = create_agent(model, _tools(ran), middleware=[middleware])
    return agent.invoke({"messages": [HumanMessage(TASK)]})["messages"]


def _search_message(messages: list) -> ToolMessage:
    (message,) = [m for m in messages if isinstance(m, ToolMessage) and m.name == SEARCH_TOOL]
    return message


def test_the_model_searches_is_shown_camdfs_set_and_calls_a_tool_it_found():
    model, ran = _model(), []
    messages = _run(CamdfToolSelector(search=True, preload=PRELOAD), model, ran)
    found = _search_message(messages).artifact
    want = search_tools(ToolChooser(), [describe_tool(t) for t in _tools([])], SEARCH_QUERY, preload=PRELOAD)
    assert want.error is None and found == list(want.names)
    assert 0 < len(found) < len(SAAS) - len(PRELOAD) and not set(found) & set(PRELOAD)
    # First call: the preload and the search tool; then the tools the search found, too.
    up_front = sorted([*PRELOAD, SEARCH_TOOL])
    assert [sorted(s) for s in model.seen] == [up_front] + [sorted([*up_front, *found])] * 2
    # The model called a tool it was shown because camdf found it, the one the task needs, and it ran.
    ((name, kwargs),) = ran
    assert name in found and "refund" in name and kwargs == _args(name)
    assert [m.content for m in messages if isinstance(m, ToolMessage) and m.name == name] == [f"{name}: ok"]
    assert messages[-1].content == "Refunded the duplicate charge."


class Broken:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_a_broken_policy_makes_the_search_load_every_tool_with_one_warning():
    model, ran = _model(), []
    with pytest.warns(FailOpenWarning, match="policy exploded") as caught:
        messages = _run(CamdfToolSelector(Broken(), search=True, preload=PRELOAD), model, ran)
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1
    assert _search_message(messages).artifact == [s["name"] for s in SAAS if s["name"] not in PRELOAD]
    assert sorted(model.seen[1]) == sorted([s["name"] for s in SAAS] + [SEARCH_TOOL])
    assert len(ran) == 1 and messages[-1].content == "Refunded the duplicate charge."


def test_max_results_caps_the_search_in_an_async_agent():
    model, ran = _model(), []
    agent = create_agent(model, _tools(ran), middleware=[CamdfToolSelector(search=True, preload=PRELOAD,
                                                                           max_results=3)])
    messages = asyncio.run(agent.ainvoke({"messages": [HumanMessage(TASK)]}))["messages"]
    want = search_tools(ToolChooser(), [describe_tool(t) for t in _tools([])], SEARCH_QUERY, preload=PRELOAD)
    assert len(want.names) > 3 and _search_message(messages).artifact == list(want.names[:3])
    assert ran[0][0] in want.names[:3]


def test_preload_is_checked():
    with pytest.raises(ValueError, match="preload: the tools not preloaded are reached only through the search"):
        CamdfToolSelector(preload=PRELOAD)
    with pytest.raises(ValueError, match="preload: expected a list of tool names"):
        CamdfToolSelector(search=True, preload="slack_create_message")
    with pytest.raises(ValueError, match="max_results: expected an integer >= 1"):
        CamdfToolSelector(search=True, preload=PRELOAD, max_results=0)
    with pytest.raises(ValueError, match=r"preload: \['slack_send_message'\] are not among the agent's tools"):
        _run(CamdfToolSelector(search=True, preload=["slack_send_message"]), _model(), [])
    with pytest.raises(ValueError, match=r"preload: \['slack_send_message'\] are not among the tools"):
        searchable_tools(_tools([]), ["slack_send_message"])


def test_the_providers_search_middleware_takes_camdfs_split():
    """LangChain's own ProviderToolSearchMiddleware, given searchable_tools(...), defers every tool but the preload
    (extras["defer_loading"]), and langchain-anthropic turns that into the Messages API's defer_loading."""
    web_search = {"type": "web_search_20250305", "name": "web_search"}  # a provider's tool: never searchable
    tools = [*_tools([]), web_search]
    split = searchable_tools(tools, PRELOAD)
    assert split == [s["name"] for s in SAAS if s["name"] not in PRELOAD]
    request = ModelRequest(model=ChatAnthropic(model="claude-sonnet-4-6", api_key="test"),
                           messages=[HumanMessage(TASK)], tools=tools)
    prepared = ProviderToolSearchMiddleware(searchable_tools=split).wrap_model_call(request, lambda r: r)
    *bound, server_search = prepared.tools
    assert server_search == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert bound[-1] == web_search
    deferred = {t.name for t in bound if isinstance(t, BaseTool) and (t.extras or {}).get("defer_loading") is True}
    assert deferred == set(split)
    payload = [convert_to_anthropic_tool(t) for t in bound if isinstance(t, BaseTool)]
    for tool in payload:
        _valid(ToolParam, tool)
    assert {t["name"] for t in payload if "defer_loading" not in t} == set(PRELOAD)
    assert all(t["defer_loading"] is True for t in payload if t["name"] not in PRELOAD)
