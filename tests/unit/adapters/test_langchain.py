"""LangChain v1: create_agent with a fake chat model that records the tools it is bound to, and the middleware."""

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from camdf.adapters.langchain import CamdfToolSelector
from camdf.runtime.toolset import FailOpenWarning

from .conftest import CATALOG, LAM, QUERY


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, recording the tool names of every bind_tools call."""

    seen: list = []

    def bind_tools(self, tools, **kwargs):
        self.seen.append(sorted(t.name if hasattr(t, "name") else t["name"] for t in tools))
        return self


def _tools():
    def make(spec):
        return StructuredTool.from_function(lambda id: f"{spec['name']}({id})", name=spec["name"],
                                            description=spec["description"])
    return [make(s) for s in CATALOG]


def _model():
    # Turn 1 calls a tool; turn 2 answers: two model calls in one user turn.
    call = AIMessage(content="", tool_calls=[{"name": "get_order", "args": {"id": "7"}, "id": "c1"}])
    return RecordingModel(messages=iter([call, AIMessage(content="done")]), seen=[])


def _agent(model, middleware):
    return create_agent(model, _tools(), middleware=[middleware])


class Broken:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_the_model_sees_the_selection_plus_always_include(policy_dir, fitted_policy):
    model = _model()
    mw = CamdfToolSelector(str(policy_dir), lam=LAM, always_include=["get_order"])
    out = _agent(model, mw).invoke({"messages": [HumanMessage(QUERY)]})
    assert out["messages"][-1].content == "done"
    # always_include is not shown to the policy: it decides over the other tools, as the ranker sees them.
    rest = [s for s in CATALOG if s["name"] != "get_order"]
    want = sorted(set(fitted_policy.select(rest, query=QUERY, lam=LAM).exposed) | {"get_order"})
    assert model.seen == [want, want]  # both model calls of the turn
    assert mw.chooser.decisions == 1  # once per user turn


def test_max_tools_caps_the_policy_and_the_runtime_context_sets_lam(policy_dir, expected):
    model = _model()
    mw = CamdfToolSelector(str(policy_dir), lam=0.5, max_tools=3, always_include=["get_order"])
    _agent(model, mw).invoke({"messages": [HumanMessage(QUERY)]}, context={"camdf_lam": LAM})
    assert model.seen[0] == sorted(set(expected[:3]) | {"get_order"})


def test_a_failing_policy_gives_every_tool_and_one_warning():
    model = _model()
    with pytest.warns(FailOpenWarning, match="policy exploded") as caught:
        _agent(model, CamdfToolSelector(Broken())).invoke({"messages": [HumanMessage(QUERY)]})
    assert model.seen == [sorted(s["name"] for s in CATALOG)] * 2
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1


def test_a_policy_that_cannot_load_fails_open(tmp_path):
    model = _model()
    with pytest.warns(FailOpenWarning, match="no such model folder"):
        _agent(model, CamdfToolSelector(str(tmp_path / "nowhere"))).invoke({"messages": [HumanMessage(QUERY)]})
    assert len(model.seen[0]) == len(CATALOG)


def test_async_agent_sees_the_same_selection(policy_dir, expected):
    model = _model()
    agent = _agent(model, CamdfToolSelector(str(policy_dir), lam=LAM))
    asyncio.run(agent.ainvoke({"messages": [HumanMessage(QUERY)]}))
    assert model.seen == [sorted(expected)] * 2
    broken = _model()
    with pytest.warns(FailOpenWarning):
        asyncio.run(_agent(broken, CamdfToolSelector(Broken())).ainvoke({"messages": [HumanMessage(QUERY)]}))
    assert broken.seen[0] == sorted(s["name"] for s in CATALOG)


def test_provider_dict_tools_are_judged_by_name_and_unnamed_ones_kept(policy_dir, expected):
    from langchain.agents.middleware.types import ModelRequest

    dicts = [{"type": "function", "function": s} for s in CATALOG] + [{"type": "web_search"}]
    request = ModelRequest(model=_model(), messages=[HumanMessage(QUERY)], tools=dicts)
    mw = CamdfToolSelector(str(policy_dir), lam=LAM)
    out = mw.wrap_model_call(request, lambda r: r)
    names = [t["function"]["name"] for t in out.tools if "function" in t]
    assert sorted(names) == sorted(expected) and out.tools[-1] == {"type": "web_search"}


def test_the_search_tool_loads_deferred_tools_for_the_next_model_call():
    """A policy that knows the fallback preloads some tools; the model searches, and sees what the search loaded."""
    from camdf.adapters.langchain import SEARCH_TOOL
    from camdf.runtime import StopPolicy
    from camdf.runtime.toolset import search_deferred

    from ..core.test_theory import _family

    policy = StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 3}).fit(
        _family(60, True), costs={"x": 6.0})
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    assert sel.exposed and sel.deferred
    from camdf.runtime.tooltext import describe_tool

    # The search ranks the tools as the middleware reads them (LangChain's own descriptions of them).
    found = search_deferred("send the invoice and a coupon", [describe_tool(t) for t in _tools()], sel.deferred, 2)
    assert found and set(found) <= set(sel.deferred)
    assert set(found) <= {"get_invoice", "update_invoice", "get_coupon", "update_coupon"}  # the words' tools
    search = AIMessage(content="", tool_calls=[{"name": SEARCH_TOOL, "args": {"query": "send the invoice and a coupon"},
                                                "id": "s1"}])
    model = RecordingModel(messages=iter([search, AIMessage(content="done")]), seen=[])
    mw = CamdfToolSelector(policy, lam=LAM, search=True, search_k=2)
    out = _agent(model, mw).invoke({"messages": [HumanMessage(QUERY)]})
    assert out["messages"][-1].content == "done"
    first = sorted(set(sel.exposed) | {SEARCH_TOOL})
    assert model.seen == [first, sorted(set(first) | set(found))]
    assert any(set(getattr(m, "artifact", None) or ()) == set(found) for m in out["messages"])  # what it loaded
