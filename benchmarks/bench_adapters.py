"""Harness adapters' decision time at catalog scale (issue 49): each adapter end to end vs a plain bm25 top-k.

For each adapter (ToolChooser itself, the LangChain middleware, the OpenAI Agents SDK's function-tool
filter, Anthropic's client-side tool search, the MCP proxy's decision path in this process) at 300 and
2,000 tools: the time of one decision from the harness's own tool objects to its answer, p50 and p95.
The catalog is synthetic and deterministic (seed 0): SaaS-style tools (``salesforce_create_lead``...) with
varied descriptions and JSON schemas. Queries cycle through a few tasks, each call's text made distinct (a
ticket number), so the adapters' cache of identical decisions never answers, while the tool list stays the
same, so the ranker's index (built once per tool list) is hit: what a harness pays per user turn. The
reference, in the same run: a plain bm25 top 5 over the same tools (a prebuilt bm25s index; the query
tokenised, scored, the top 5 taken); the ratio of each adapter's p50 to it is reported, and the time the
ranker took per decision before its index was kept (the index built for every query), and the policy's own
``select`` with the scores given (request parsing and the rule: the floor under every adapter), and the
OpenAI Agents SDK's own turn over the same tools with no filter (its floor: the SDK awaits every tool's
``is_enabled``). Each figure
has its CPU p50 beside it (``time.process_time``: the wall time of an idle core; this machine is shared). The policy is
camdf_lite fitted on a small synthetic cell (the decision rule's own cost is `make bench`'s runtime part). The
adapters rank with the built-in ranker (crosscat when the package ships its model:
:mod:`camdf.runtime.builtin_ranker`); its own time per query (``builtin_ranker``) is reported beside them.
Target: p50 <= 10 ms at 2,000 tools (issue 68: with the transferring ranker).
Run: python benchmarks/bench_adapters.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZES = (300, 2000)
CALLS = {300: 150, 2000: 60}
TARGET_P50_MS = 10.0
SERVICES = ("salesforce hubspot github gitlab jira slack zendesk stripe shopify notion asana trello dropbox gmail "
            "outlook twilio sendgrid mailchimp intercom linear pagerduty datadog sentry quickbooks xero docusign "
            "calendly zoom airtable clickup confluence okta workday greenhouse segment mixpanel").split()
VERBS = "list get create update delete search archive export assign send".split()
OBJECTS = ("lead contact deal issue pull_request message ticket invoice payment subscription order product page "
           "task file folder email event meeting user report alert incident dashboard document candidate "
           "employee refund comment label").split()
EXTRAS = ["Supports pagination with a cursor.", "Returns its id, status and timestamps.",
          "Requires the workspace admin scope.", "Fails when the {o} is archived.",
          "Use it when the user names a specific {o}.", "Rate limited to 100 calls per minute.", ""]
QUERIES = ["create a new lead in salesforce for the acme deal", "find the open jira issues assigned to me",
           "send a slack message to the engineering channel about the outage",
           "refund the last stripe payment of this customer", "schedule a zoom meeting with the candidate",
           "export the datadog dashboard report for last week"]


def _schema(rng, obj: str) -> dict:
    props = {f"{obj}_id": {"type": "string", "description": f"The {obj.replace('_', ' ')}'s id"}}
    pool = {"limit": {"type": "integer", "minimum": 1, "maximum": 100}, "cursor": {"type": "string"},
            "status": {"type": "string", "enum": ["open", "closed", "pending"]},
            "query": {"type": "string", "description": "free-text filter"},
            "fields": {"type": "array", "items": {"type": "string"}},
            "metadata": {"type": "object", "properties": {"source": {"type": "string"}, "tags": {"type": "array"}}},
            "created_after": {"type": "string", "format": "date-time"}, "owner_email": {"type": "string"}}
    for key in rng.choice(list(pool), int(rng.integers(0, 5)), replace=False):
        props[str(key)] = pool[str(key)]
    return {"type": "object", "properties": props, "required": [f"{obj}_id"]}


def catalog(n: int, seed: int = 0) -> list[dict]:
    """``n`` plain tool descriptions, SaaS-style, deterministic from ``seed``."""
    rng = np.random.default_rng(seed)
    tools, seen = [], set()
    while len(tools) < n:
        s, v, o = rng.choice(SERVICES), rng.choice(VERBS), rng.choice(OBJECTS)
        name = f"{s}_{v}_{o}"
        if name in seen:
            name = f"{name}_{len(tools)}"
        seen.add(name)
        words = o.replace("_", " ")
        extra = str(rng.choice(EXTRAS)).format(o=words)
        desc = f"{v.capitalize()} {'a' if v == 'create' else 'the'} {words} in {s.capitalize()}. {extra}".strip()
        tools.append({"name": name, "description": desc, "parameters": _schema(rng, str(o))})
    return tools


def _policy():
    """camdf_lite fitted on a small synthetic cell (tasks of four tools, the top two needed; one tool dear)."""
    import pandas as pd

    from camdf.core.instances import build_instances
    from camdf.runtime import StopPolicy

    rng = np.random.default_rng(0)
    rows, required = [], {}
    for i in range(60):
        top = "a" if i % 2 == 0 else "x"
        scores = np.array([0.9, 0.85, 0.2, 0.1]) + rng.normal(0, 0.01, 4)
        order = np.argsort(-scores, kind="stable")
        rows += [(f"q{i}", [top, "b", "c", "d"][j], scores[j], r + 1, i % 5) for r, j in enumerate(order)]
        required[f"q{i}"] = [top, "b"]
    inst = build_instances(pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"]), required,
                           {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5, "x": 6.0})
    return StopPolicy(method="camdf_lite", lam=0.2).fit(inst, costs={"x": 6.0})


def _adapters(policy, plain: list[dict]) -> tuple[dict, dict]:
    """name -> one decision ``call(query)`` through that adapter, from the harness's own tool objects; and the
    harnesses' own floors: name -> the same turn with no camdf in it (the OpenAI Agents SDK asks every function
    tool's ``is_enabled`` whether or not a filter is set)."""
    import mcp_types
    from agents import Agent, FunctionTool, RunContextWrapper
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import StructuredTool

    from camdf.adapters.anthropic import ToolSearch
    from camdf.adapters.langchain import CamdfToolSelector
    from camdf.adapters.mcp import ToolProxy
    from camdf.adapters.openai_agents import CamdfToolFilter
    from camdf.runtime.toolset import ToolChooser

    chooser = ToolChooser(policy)
    lc_tools = [StructuredTool.from_function(lambda **kw: "ok", name=t["name"], description=t["description"],
                                             args_schema=t["parameters"]) for t in plain]
    model = GenericFakeChatModel(messages=iter([]))
    middleware = CamdfToolSelector(policy)

    def langchain(q):
        request = ModelRequest(model=model, messages=[HumanMessage(q)], tools=lc_tools)
        return middleware.wrap_model_call(request, lambda r: r).tools

    async def invoke(ctx, args):
        return "ok"
    flt = CamdfToolFilter(policy)
    agent = Agent(name="bench", tools=flt.enable([
        FunctionTool(name=t["name"], description=t["description"], params_json_schema=t["parameters"],
                     on_invoke_tool=invoke, strict_json_schema=False) for t in plain]))
    loop = asyncio.new_event_loop()

    def openai_agents(q):  # one run's first turn: the SDK asks every function tool's is_enabled
        return loop.run_until_complete(agent.get_all_tools(RunContextWrapper(context=None, turn_input=[
            {"role": "user", "content": q}])))

    bare = Agent(name="bench-bare", tools=[  # the same tools, no filter: what the SDK itself costs per turn
        FunctionTool(name=t["name"], description=t["description"], params_json_schema=t["parameters"],
                     on_invoke_tool=invoke, strict_json_schema=False) for t in plain])

    def openai_agents_alone(q):
        return loop.run_until_complete(bare.get_all_tools(RunContextWrapper(context=None, turn_input=[
            {"role": "user", "content": q}])))

    search = ToolSearch(policy)
    anthropic_tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                       for t in plain]
    proxy = ToolProxy(["in-process"], ToolChooser(policy))
    proxy.upstreams[0].tools = [mcp_types.Tool(name=t["name"], description=t["description"],
                                               input_schema=t["parameters"]) for t in plain]
    return {"ToolChooser": lambda q: chooser.choose(plain, q), "LangChain middleware": langchain,
            "OpenAI Agents filter": openai_agents,
            "Anthropic ToolSearch": lambda q: search.result({"type": "tool_use", "id": "t", "name": search.name,
                                                             "input": {"query": q}}, anthropic_tools),
            "MCP ToolProxy.decide": proxy.decide}, {"OpenAI Agents SDK alone, no filter": openai_agents_alone}


def _reference(plain: list[dict]):
    """A plain bm25 top 5: a prebuilt bm25s index over the same documents; the query tokenised and scored."""
    from camdf.rankers.lexical import _bm25s, tokenize
    from camdf.runtime.tooltext import tool_text

    retriever = _bm25s().BM25(k1=1.5, b=0.75)
    retriever.index(tokenize([tool_text(t) for t in plain]), show_progress=False)

    def top5(q):
        scores = retriever.get_scores(tokenize([q])[0])
        best = np.argpartition(-scores, 5)[:5]
        return best[np.argsort(-scores[best], kind="stable")]
    return top5


def _times(call, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Wall and CPU milliseconds (this process's, ``time.process_time``: what wall time is on an idle core) of
    ``count`` calls, the query cycling through QUERIES and distinct each call."""
    wall, cpu = np.empty(count), np.empty(count)
    for i in range(count):
        q = f"{QUERIES[i % len(QUERIES)]} (ticket {1000 + i})"
        c0, t0 = time.process_time(), time.perf_counter()
        call(q)
        wall[i], cpu[i] = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
    return wall, cpu


def _figures(wall: np.ndarray, cpu: np.ndarray) -> dict:
    return {"p50_ms": float(np.median(wall)), "p95_ms": float(np.percentile(wall, 95)),
            "cpu_p50_ms": float(np.median(cpu))}


def run() -> dict:
    from threadpoolctl import threadpool_limits

    from camdf.rankers.lexical import bm25_scores
    from camdf.runtime.builtin_ranker import builtin_ranker, tool_scores
    from camdf.runtime.tooltext import tool_text

    rows = []
    with threadpool_limits(1):
        policy = _policy()
        for n in SIZES:
            plain = catalog(n)
            (adapters, floors), reference = _adapters(policy, plain), _reference(plain)
            docs = [tool_text(t) for t in plain]
            for call in [reference, *adapters.values(), *floors.values()]:
                _times(call, 5)  # warm-up: the index is built on the first call, the schemas read
            gc.collect()
            gc.freeze()
            ref = _figures(*_times(reference, CALLS[n]))
            rebuilt = _times(lambda q: bm25_scores([q], docs), 5)[0]  # the ranker before: an index per query
            scores = tool_scores(QUERIES[0], plain).tolist()
            rule = _figures(*_times(lambda q: policy.select(plain, scores=scores, query=q), CALLS[n]))
            ranker = _figures(*_times(lambda q: tool_scores(q, plain), CALLS[n]))
            ranker["ratio_vs_reference"] = ranker["p50_ms"] / ref["p50_ms"]
            row = {"tools": n, "reference": ref, "policy_select_scores_given": rule, "builtin_ranker": ranker,
                   "index_rebuilt_p50_ms": float(np.median(rebuilt)), "adapters": {}}
            for name, call in adapters.items():
                a = _figures(*_times(call, CALLS[n]))
                a["ratio_vs_reference"] = a["p50_ms"] / ref["p50_ms"]
                a["met"] = a["p50_ms"] <= TARGET_P50_MS if n == max(SIZES) else None
                row["adapters"][name] = a
            row["harness_alone"] = {name: _figures(*_times(call, CALLS[n])) for name, call in floors.items()}
            rows.append(row)
            gc.unfreeze()
    big = rows[-1]["adapters"]
    return {"rows": rows, "target_p50_ms": TARGET_P50_MS, "target_tools": max(SIZES),
            "meets_target": all(a["met"] for a in big.values()), "queries": len(QUERIES),
            "policy": "camdf_lite (synthetic cell)", "ranker": builtin_ranker()}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
