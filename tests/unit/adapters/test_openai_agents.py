"""OpenAI Agents SDK: the filter over a real MCPServerStdio upstream and over function tools, with a recording model."""

import asyncio
import json
import sys

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.mcp import MCPServerStdio
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from camdf.adapters.openai_agents import CamdfToolFilter
from camdf.runtime.toolset import FailOpenWarning

from ...conftest import FIXTURES
from .conftest import CATALOG, LAM, QUERY

set_tracing_disabled(True)  # the SDK's own trace export would need the network


class RecordingModel(Model):
    """A model (the SDK's Model interface) that records the tools it is offered: one tool call, then an answer."""

    def __init__(self, call: str):
        self.call, self.seen = call, []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, **kwargs):
        self.seen.append(sorted(t.name for t in tools))
        if len(self.seen) % 2 == 1:
            out = [ResponseFunctionToolCall(type="function_call", call_id=f"c{len(self.seen)}", name=self.call,
                                            arguments=json.dumps({"id": "7"}))]
        else:
            out = [ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text="done", annotations=[])])]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


class Broken:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_the_mcp_filter_returns_the_selection_and_decides_once_per_run(policy_dir, expected, tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    flt = CamdfToolFilter(str(policy_dir), lam=LAM)

    async def go():
        server = flt.attach(MCPServerStdio(params={"command": sys.executable,
                                                   "args": [str(FIXTURES / "mcp_upstream.py"), str(catalog)]},
                                           name="shop", client_session_timeout_seconds=30))
        async with server:
            model = RecordingModel(call=expected[0])
            agent = Agent(name="shop", model=model, mcp_servers=[server])
            result = await Runner.run(agent, QUERY)
            assert result.final_output == "done"
            assert model.seen == [sorted(expected)] * 2  # two model turns, one decision
            assert flt.decisions == 1
            await Runner.run(agent, QUERY)  # a second run decides again
            assert flt.decisions == 2
    asyncio.run(go())


def _function_tools():
    def make(spec):
        @function_tool(name_override=spec["name"], description_override=spec["description"])
        def tool(id: str) -> str:
            return f"{spec['name']}({id})"
        return tool
    return [make(s) for s in CATALOG]


def test_function_tools_are_enabled_by_the_decision_and_fail_open(policy_dir, expected):
    flt = CamdfToolFilter(str(policy_dir), lam=LAM, always_include=["get_weather"])
    model = RecordingModel(call=expected[0])
    agent = Agent(name="shop", model=model, tools=flt.enable(_function_tools()))
    assert asyncio.run(Runner.run(agent, QUERY)).final_output == "done"
    assert model.seen == [sorted({*expected, "get_weather"})] * 2 and flt.decisions == 1
    broken = CamdfToolFilter(Broken())
    model = RecordingModel(call="get_order")
    agent = Agent(name="shop", model=model, tools=broken.enable(_function_tools()))
    with pytest.warns(FailOpenWarning, match="policy exploded"):
        asyncio.run(Runner.run(agent, QUERY))
    assert model.seen[0] == sorted(s["name"] for s in CATALOG)


class ScriptedModel(Model):
    """A model (the SDK's Model interface) that records the tools it is offered and plays ``outputs`` in turn."""

    def __init__(self, outputs):
        self.outputs, self.seen = list(outputs), []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, **kwargs):
        self.seen.append(sorted(t.name for t in tools))
        return ModelResponse(output=[self.outputs.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def test_the_search_tool_enables_deferred_tools_from_the_next_turn():
    """A policy that knows the fallback preloads some tools; the model searches and is then offered what it found."""
    from camdf.adapters.openai_agents import SEARCH_TOOL
    from camdf.runtime import StopPolicy
    from camdf.runtime.toolset import search_deferred

    from ..core.test_theory import _family

    policy = StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 3}).fit(
        _family(60, True), costs={"x": 6.0})
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    asked = "send the invoice and a coupon"
    found = search_deferred(asked, CATALOG, sel.deferred, 2)
    assert sel.exposed and found and set(found) <= set(sel.deferred) - set(sel.exposed)
    flt = CamdfToolFilter(policy, lam=LAM, search=True, search_k=2)
    model = ScriptedModel([
        ResponseFunctionToolCall(type="function_call", call_id="s1", name=SEARCH_TOOL,
                                 arguments=json.dumps({"query": asked})),
        ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                              content=[ResponseOutputText(type="output_text", text="done", annotations=[])]),
    ])
    agent = Agent(name="shop", model=model, tools=flt.enable(_function_tools()))
    result = asyncio.run(Runner.run(agent, QUERY))
    assert result.final_output == "done" and flt.decisions == 1
    first = sorted({*sel.exposed, SEARCH_TOOL})
    assert model.seen == [first, sorted({*first, *found})]
    assert any(getattr(item, "output", None) == "Loaded: " + ", ".join(found) for item in result.new_items)
    # A second run starts from the policy's preload again: what the first run's search loaded is not carried over.
    model.outputs = [ResponseOutputMessage(id="m2", type="message", role="assistant", status="completed",
                                           content=[ResponseOutputText(type="output_text", text="ok",
                                                                       annotations=[])])]
    assert asyncio.run(Runner.run(agent, QUERY)).final_output == "ok"
    assert model.seen[-1] == first
