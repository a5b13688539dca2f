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
