"""One catalog through every adapter gives one decision: each harness's own tool objects (LangChain tools with a
pydantic or a JSON schema, the OpenAI Agents SDK's FunctionTool, MCP tools from a real server over stdio,
Anthropic dicts) are read the same way (camdf.runtime.tooltext.describe_tool); with the caller's scorer, and
with the min_tools floor, too.

The catalog's tools differ only by their parameters' names (the query's words are in no name or description),
so an adapter that read less of a schema than the others (LangChain's ``tool.args`` did) would decide otherwise.
"""

import asyncio
import json
import sys
from contextlib import AsyncExitStack

import anyio
import numpy as np
import pytest
from agents import Agent, FunctionTool, RunContextWrapper
from langchain.agents.middleware.types import ModelRequest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool
from pydantic import Field, create_model

from camdf.adapters.anthropic import ToolSearch
from camdf.adapters.langchain import CamdfToolSelector
from camdf.adapters.mcp import ToolProxy
from camdf.adapters.openai_agents import CamdfToolFilter
from camdf.runtime.builtin_ranker import tool_scores
from camdf.runtime.toolset import ToolChooser
from camdf.runtime.tooltext import describe_tool, ranker_key

from ...conftest import FIXTURES

PAIRS = [("refund", "amount"), ("order", "number"), ("weather", "city"), ("flight", "origin"), ("invoice", "total"),
         ("coupon", "code"), ("shipping", "address"), ("review", "stars"), ("user", "email"), ("ticket", "priority"),
         ("payment", "card"), ("calendar", "date")]
CATALOG = [{"name": f"action_{i}", "description": "Run an action on the account.",
            "parameters": {"type": "object", "properties": {f"{a}_{b}": {"type": "string"}, "note": {"type": "string"}},
                           "required": [f"{a}_{b}"]}} for i, (a, b) in enumerate(PAIRS)]
QUERY = "refund the order amount and change the shipping address"
LAM = 0.05  # a selection between none and all of the 12 tools (the synthetic policy, these scores)


def _langchain_tools():
    """Even tools with a JSON-schema dict, odd ones with a pydantic model (what @tool builds from a signature)."""
    out = []
    for i, spec in enumerate(CATALOG):
        first = next(iter(spec["parameters"]["properties"]))
        schema = spec["parameters"] if i % 2 == 0 else create_model(
            f"Args{i}", **{first: (str, Field(...)), "note": (str | None, None)})
        out.append(StructuredTool.from_function(lambda **kw: "ok", name=spec["name"], description=spec["description"],
                                                args_schema=schema))
    return out


def _function_tools():
    async def invoke(ctx, args):
        return "ok"
    return [FunctionTool(name=s["name"], description=s["description"], params_json_schema=s["parameters"],
                         on_invoke_tool=invoke, strict_json_schema=False) for s in CATALOG]


def _through_every_adapter(policy, upstream_cmd, lam=LAM, **options) -> dict[str, list[str]]:
    """The names each adapter exposes for QUERY over CATALOG, in its harness's own tool objects."""
    out = {"ToolChooser": list(ToolChooser(policy, lam=lam, **options).choose(CATALOG, QUERY).names)}
    request = ModelRequest(model=GenericFakeChatModel(messages=iter([])), messages=[HumanMessage(QUERY)],
                           tools=_langchain_tools())
    narrowed = CamdfToolSelector(policy, lam=lam, **options).wrap_model_call(request, lambda r: r)
    out["LangChain"] = [t.name for t in narrowed.tools]
    flt = CamdfToolFilter(policy, lam=lam, **options)
    agent = Agent(name="shop", tools=flt.enable(_function_tools()))
    enabled = asyncio.run(agent.get_all_tools(RunContextWrapper(context=None, turn_input=[
        {"role": "user", "content": QUERY}])))
    out["OpenAI Agents"] = [t.name for t in enabled]
    anthropic = [{"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
                 for s in CATALOG]
    block = ToolSearch(policy, lam=lam, **options).result(
        {"type": "tool_use", "id": "t1", "name": "camdf_tool_search", "input": {"query": QUERY}}, anthropic)
    out["Anthropic"] = [c["tool_name"] for c in block["content"]]

    async def mcp():  # the real upstream over stdio; its extra `crash` tool kept out of the decision
        proxy = ToolProxy([upstream_cmd], ToolChooser(policy, lam=lam, always_include=["crash"], **options))
        with anyio.fail_after(60):
            async with AsyncExitStack() as stack:
                await proxy.connect(stack)
                return [n for n in proxy.decide(QUERY).names if n != "crash"]
    out["MCP"] = anyio.run(mcp)
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def upstream_cmd(tmp_path_factory):
    catalog = tmp_path_factory.mktemp("same") / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    return f"{sys.executable} {FIXTURES / 'mcp_upstream.py'} {catalog}"


def test_every_harness_reads_a_tool_as_the_ranker_does():
    want = [ranker_key(s) for s in CATALOG]
    assert [ranker_key(describe_tool(t)) for t in _langchain_tools()] == want
    assert [ranker_key(describe_tool(t)) for t in _function_tools()] == want
    import mcp_types

    mcp_tools = [mcp_types.Tool(name=s["name"], description=s["description"], input_schema=s["parameters"])
                 for s in CATALOG]
    assert [ranker_key(describe_tool(t)) for t in mcp_tools] == want


def test_one_catalog_through_every_adapter_gives_one_selection(fitted_policy, upstream_cmd):
    want = sorted(fitted_policy.select(CATALOG, query=QUERY, lam=LAM).exposed)
    assert 0 < len(want) < len(CATALOG)
    args_only = [{**s, "parameters": s["parameters"]["properties"]} for s in CATALOG]  # LangChain's old reading
    assert not np.array_equal(tool_scores(QUERY, args_only), tool_scores(QUERY, CATALOG))  # the ranker reads it
    got = _through_every_adapter(fitted_policy, upstream_cmd)
    assert got == {k: want for k in got}


def test_the_callers_scorer_and_the_min_tools_floor_in_every_adapter(fitted_policy, upstream_cmd):
    seen = []

    def scorer(query, tools):  # the caller's retriever: it ranks action_11 first, whatever bm25 says
        seen.append([ranker_key(t) for t in tools])
        return [float(int(t["name"].split("_")[1])) for t in tools]

    # lambda 50: the policy exposes nothing; the floor adds its best-ranked tools: the scorer's first two.
    assert fitted_policy.select(CATALOG, query=QUERY, lam=50.0).exposed == []
    got = _through_every_adapter(fitted_policy, upstream_cmd, lam=50.0, scorer=scorer, min_tools=2)
    assert got == {k: ["action_10", "action_11"] for k in got}
    assert len(seen) == 5 and all(s == [ranker_key(c) for c in CATALOG] for s in seen)
