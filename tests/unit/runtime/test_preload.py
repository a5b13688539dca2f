"""The fitted preload set (camdf.runtime.preload) and `camdf preload`, each format read back by the harness's own
parser: the MCP SDK (the Claude Code entry, run), the OpenAI and Anthropic SDKs' tool types, LangChain's
ProviderToolSearchMiddleware, tomllib (codex)."""

import json
import subprocess
import sys
import tomllib

import anyio
import numpy as np
import pytest

from camdf.costs.units import schema_tokens
from camdf.runtime.fit_inputs import LoggedTask
from camdf.runtime.preload import SEARCH_COST, plan_preload

from ...conftest import FIXTURES, ROOT

APPS = ("slack", "github", "jira", "notion", "hubspot", "zendesk", "stripe", "shopify")
THINGS = ("message", "issue", "page", "contact", "ticket", "payment")
VERBS = ("create", "get", "update", "delete", "list")


def _params(**fields):
    return {"type": "object", "properties": {k: {"type": "string", "description": d} for k, d in fields.items()},
            "required": list(fields)[:1]}


#: 240 tools of a harness builder: eight services, plausible names, descriptions and schemas.
TOOLS = [{"name": f"{app}_{verb}_{thing}",
          "description": f"{verb.capitalize()} a {thing} in {app.capitalize()}"
                         + (" (paginated, newest first)." if verb == "list" else "."),
          "parameters": _params(workspace="The workspace's id", **{f"{thing}_id": f"The {thing}'s id"},
                                **({"body": f"The {thing}'s text"} if verb in ("create", "update") else {}))}
         for app in APPS for verb in VERBS for thing in THINGS]
NAMES = [t["name"] for t in TOOLS]


def _tasks(seed=0, n=200):
    """Logged tasks: slack_get_message in 90% of them, jira_get_issue in 40%, the rest rare."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        used = set(rng.choice(NAMES, 2, replace=False))
        if rng.random() < 0.9:
            used.add("slack_get_message")
        if rng.random() < 0.4:
            used.add("jira_get_issue")
        out.append(LoggedTask(f"task {i}", tuple(sorted(used))))
    return out


def test_the_rule_preloads_a_tool_iff_its_share_pays_for_its_tokens_on_every_task():
    tasks = _tasks()
    plan = plan_preload(TOOLS, tasks=tasks)
    cost = dict(zip(NAMES, schema_tokens(TOOLS)))
    search = SEARCH_COST * float(np.mean(list(cost.values())))
    assert plan.search_tokens == pytest.approx(search)
    for name in NAMES:
        share = sum(name in t.tools_used for t in tasks) / len(tasks)
        assert plan.need[name] == pytest.approx(share)
        assert (name in plan.names) == (share > 0 and share * (search + cost[name]) >= cost[name]), name
    assert "slack_get_message" in plan.names and "jira_get_issue" in plan.names  # 0.9 and 0.4 pay; rare ones do not
    assert len(plan.names) == 2 and len(plan.deferred) == len(TOOLS) - 2
    # A dearer search preloads more; a search almost free preloads only what nearly every task uses.
    assert set(plan.names) <= set(plan_preload(TOOLS, tasks=tasks, search_cost=64).names)
    assert plan_preload(TOOLS, tasks=tasks, search_cost=0.5).names == ("slack_get_message",)
    assert plan_preload(TOOLS, tasks=tasks, search_cost=0.05).names == ()  # 0.9 < c / (S + c) ~ 0.95


def test_sample_queries_preload_what_the_default_policy_keeps_exposing():
    queries = [f"Post a Slack message to the team about {topic}" for topic in ("the outage", "the release", "lunch",
                                                                              "the new hire", "the budget")]
    plan = plan_preload(TOOLS, queries=queries)
    assert plan.source == "queries" and plan.count == 5 and plan.failed == 0
    # Each tool's need is the share of the queries the default policy exposes it for; Slack's message tools, which
    # every query asks for, are among them (the built-in ranker puts them first; a near-duplicate vendor's
    # message tool may follow).
    from camdf.runtime.toolset import ToolChooser

    chooser = ToolChooser(None, min_tools=0)  # the default policy, no floor: what plan_preload asks
    exposed = [set(chooser.choose(TOOLS, q).exposed) for q in queries]
    for name in NAMES:
        assert plan.need.get(name, 0.0) == pytest.approx(sum(name in e for e in exposed) / len(queries)), name
    assert {f"slack_{verb}_message" for verb in ("create", "get", "update")} <= set(plan.names), plan.names


class Broken:
    method = "broken"

    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


@pytest.mark.parametrize("kwargs, says", [
    ({}, "give tasks .* or queries"),
    ({"tasks": [], "queries": ["x"]}, "not both"),
    ({"queries": ["ok", " "]}, r"queries\[1\] is not"),
    ({"tasks": _tasks(n=3), "search_cost": 0}, "search_cost: expected a finite number > 0"),
    ({"tasks": _tasks(n=3), "search_cost": float("nan")}, "search_cost"),
])
def test_bad_arguments_are_named(kwargs, says):
    with pytest.raises(ValueError, match=says):
        plan_preload(TOOLS, **kwargs)


def test_a_policy_that_fails_on_every_query_is_an_error_not_an_empty_preload():
    from camdf.runtime.toolset import ToolChooser

    with pytest.raises(ValueError, match="the policy failed on every one of the 2 queries"):
        plan_preload(TOOLS, queries=["a b", "c d"], chooser=ToolChooser(Broken()))


# -- the command and each harness's own parser ------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("preload")
    (folder / "tools.json").write_text(json.dumps({"tools": TOOLS}))
    (folder / "tasks.jsonl").write_text("".join(json.dumps({"query": t.query, "tools_used": list(t.tools_used)}) + "\n"
                                                for t in _tasks()))
    (folder / "catalog.json").write_text(json.dumps(TOOLS))
    return folder


def _preload(files, *args):
    return subprocess.run([sys.executable, "-m", "camdf.cli", "preload", "--tools", str(files / "tools.json"),
                           "--tasks", str(files / "tasks.jsonl"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_claude_code_entry_runs_a_server_whose_fixed_list_is_the_preload_marked_always_load(files):
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    upstream = f"{sys.executable} {FIXTURES / 'mcp_upstream.py'} {files / 'catalog.json'}"
    done = _preload(files, "--format", "claude-code", "--upstream", upstream)
    assert done.returncode == 0, done.stderr
    assert "2 of 240 tools preloaded" in done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["camdf"]
    assert entry["type"] == "stdio" and entry["command"] == "camdf" and entry["alwaysLoad"] is True
    params = StdioServerParameters(command=sys.executable, args=["-m", "camdf.cli", *entry["args"]],
                                   env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def go():
        with anyio.fail_after(90):
            async with Client(params, cache=None) as client:
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == ["search_tools", "call_tool", "jira_get_issue", "slack_get_message"]
                assert all(t.meta == {"anthropic/alwaysLoad": True} for t in listed)

    anyio.run(go)


def test_codex_table_parses_as_toml_with_the_same_server(files):
    done = _preload(files, "--format", "codex", "--upstream", "python server.py", "--server", "tools")
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(done.stdout)["mcp_servers"]["tools"]
    assert table["command"] == "camdf"
    assert table["args"] == ["mcp-proxy", "--upstream", "python server.py", "--preload",
                             "slack_get_message,jira_get_issue"]


def test_openai_tools_validate_as_responses_api_tools_with_all_but_the_preload_deferred(files):
    from openai.types.responses import ToolParam
    from pydantic import TypeAdapter

    done = _preload(files, "--format", "openai")
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    checked = TypeAdapter(list[ToolParam]).validate_python(tools)
    assert checked[0]["type"] == "tool_search" and checked[0]["execution"] == "client"
    functions = [t for t in tools if t["type"] == "function"]
    assert len(functions) == 240
    assert sorted(t["name"] for t in functions if not t.get("defer_loading")) == ["jira_get_issue",
                                                                                 "slack_get_message"]


def test_anthropic_tools_validate_as_messages_api_tools_with_all_but_the_preload_and_search_deferred(files):
    from anthropic.types import ToolParam
    from pydantic import TypeAdapter

    done = _preload(files, "--format", "anthropic")
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    TypeAdapter(list[ToolParam]).validate_python(tools, strict=True)
    assert tools[0]["name"] == "camdf_tool_search" and not tools[0].get("defer_loading")
    loaded = sorted(t["name"] for t in tools[1:] if not t.get("defer_loading"))
    assert loaded == ["jira_get_issue", "slack_get_message"] and len(tools) == 241


def test_langchain_split_is_accepted_by_provider_tool_search_middleware(files):
    from langchain.agents.middleware import ProviderToolSearchMiddleware

    done = _preload(files, "--format", "langchain")
    assert done.returncode == 0, done.stderr
    split = json.loads(done.stdout)
    assert split["preloaded"] == ["slack_get_message", "jira_get_issue"]
    assert len(split["searchable_tools"]) == 238 and not set(split["preloaded"]) & set(split["searchable_tools"])
    middleware = ProviderToolSearchMiddleware(searchable_tools=split["searchable_tools"])
    assert middleware.searchable_tool_names == set(split["searchable_tools"])


def test_json_and_names(files):
    done = _preload(files, "--format", "names")
    assert done.returncode == 0 and done.stdout.strip() == "slack_get_message,jira_get_issue"
    body = json.loads(_preload(files).stdout)
    assert body["preload"] == ["slack_get_message", "jira_get_issue"] and body["source"] == "tasks"
    assert body["count"] == 200 and body["need"]["slack_get_message"] > 0.85


@pytest.mark.parametrize("args, says", [
    (["--format", "claude-code"], "--format claude-code: give the upstream MCP servers"),
    (["--queries", "/nonexistent/q.txt"], "give --tasks .* or --queries .*, one of them"),
    (["--format", "codex", "--upstream", "x", "--server", 'a"b'], "--server: expected a plain name"),
    (["--search-cost", "-1"], "search_cost: expected a finite number > 0"),
])
def test_bad_requests_are_one_line_and_exit_2(files, args, says):
    import re

    done = _preload(files, *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and re.search(says, done.stderr), done.stderr
