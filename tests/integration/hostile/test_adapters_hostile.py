"""Hostile tool lists and upstreams for every harness adapter: refused in one line naming the tool, or failed open
with exactly one warning; never a traceback out of the harness, never a hang.

A generated family (:data:`CASES`: one hostile tool among good ones, in each harness's own shape) runs through
LangChain's ``CamdfToolSelector``, the Agents SDK's ``CamdfToolFilter`` (a real ``ToolFilterContext`` and run
context), the Responses API's ``ClientToolSearch``, Anthropic's ``ToolSearch`` and the MCP proxy (a hand-written
upstream over stdio serving the list as raw JSON). Then the Agents filter under cancellation (a cancelled tool check
must not leave the next one waiting forever), and ``camdf mcp-proxy`` in front of an upstream that lists an empty
name, writes garbage on stdout, or refuses the connection: one line naming it, exit 2, no traceback.
"""

import asyncio
import json
import math
import re
import socket
import subprocess
import sys
import textwrap
import warnings
from contextlib import AsyncExitStack
from types import SimpleNamespace

import anyio
import pytest

from camdf.runtime.toolset import FailOpenWarning, ToolChooser

from ..test_pipeline import ROOT

#: A bounded wait for anything that could hang (seconds).
BOUND = 60
TASK = "get the order of the customer"
GOOD = [{"name": n, "description": f"{n.replace('_', ' ').capitalize()} of the customer by its id",
         "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}
        for n in ("get_order", "update_order", "get_weather", "get_invoice")]
#: Where the hostile tool goes in the list.
AT = 2


def _with(**fields):
    tool = {**GOOD[AT], **fields}
    return [t for t in (*GOOD[:AT], {k: v for k, v in tool.items() if v is not _DROP}, *GOOD[AT:])]


_DROP = object()
#: (id, tool list: the hostile item at AT, or a whole list for the duplicate).
CASES = [
    ("no-name", _with(name=_DROP)),
    ("empty-name", _with(name="")),
    ("blank-name", _with(name="   ")),
    ("int-name", _with(name=7)),
    ("null-name", _with(name=None)),
    ("duplicate-name", _with(name=GOOD[0]["name"])),
    ("junk-int", [*GOOD[:AT], 42, *GOOD[AT:]]),
    ("junk-null", [*GOOD[:AT], None, *GOOD[AT:]]),
    ("junk-string", [*GOOD[:AT], "get_refund", *GOOD[AT:]]),
    ("junk-list", [*GOOD[:AT], [], *GOOD[AT:]]),
    ("huge-description", _with(name="get_refund", description="refund the order " * 60_000)),
    ("null-description", _with(name="get_refund", description=None)),
    ("int-description", _with(name="get_refund", description=12)),
    ("schema-string", _with(name="get_refund", parameters="string")),
    ("schema-list", _with(name="get_refund", parameters=[1, 2])),
    ("schema-not-object", _with(name="get_refund", parameters={"type": "string"})),
    ("schema-nan", _with(name="get_refund", parameters={"type": "object", "properties": {
        "amount": {"type": "number", "default": math.nan, "maximum": math.inf}}})),
    ("schema-deep", _with(name="get_refund", parameters=json.loads('{"a":' * 200 + "1" + "}" * 200))),
]


class FirstTool:
    """A policy (``select``) that exposes the first tool: the decision is camdf's, not the case's."""

    def select(self, tools, query=None, lam=None, **kwargs):
        names = [t["name"] for t in tools]
        return SimpleNamespace(exposed=names[:1], ranked=names)


def _names(tools) -> list[str]:
    return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


# -- each adapter: the case's list in the harness's shape, one request, the names it exposes -------------------------
def _shape(tools, rename):
    """``tools`` with each dict's ``parameters`` under the harness's key (junk items as they are)."""
    return [{rename.get(k, k): v for k, v in t.items()} if isinstance(t, dict) else t for t in tools]


def run_langchain(tools):
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import HumanMessage

    from camdf.adapters.langchain import CamdfToolSelector

    request = ModelRequest(model=GenericFakeChatModel(messages=iter([])), messages=[HumanMessage(TASK)], tools=tools)
    out = CamdfToolSelector(FirstTool()).wrap_model_call(request, lambda r: r)
    return _names(out.tools)


def run_openai_agents(tools):
    from agents import RunContextWrapper
    from agents.mcp import ToolFilterContext

    from camdf.adapters.openai_agents import CamdfToolFilter

    flt = CamdfToolFilter(FirstTool())
    flt.attach(_Server("shop", tools))

    async def go():
        run = RunContextWrapper(context=None)
        ctx = ToolFilterContext(run_context=run, agent=SimpleNamespace(name="a"), server_name="shop")
        return [n for n in _names(tools) if await flt(ctx, SimpleNamespace(name=n))]
    return asyncio.run(asyncio.wait_for(go(), BOUND))


def run_responses(tools):
    from camdf.adapters.openai_responses import ClientToolSearch

    tools = [{"type": "function", **t} if isinstance(t, dict) else t for t in tools]
    search = ClientToolSearch(FirstTool())
    search.prepare(tools)
    out = search.output({"type": "tool_search_call", "execution": "client", "call_id": "c1",
                         "arguments": {"query": TASK}}, tools)
    return [t["name"] for t in out["tools"]]


def run_anthropic(tools):
    from camdf.adapters.anthropic import ToolSearch

    tools = _shape(tools, {"parameters": "input_schema"})
    search = ToolSearch(FirstTool())
    search.prepare(tools, TASK)
    out = search.result({"type": "tool_use", "id": "t1", "name": search.name, "input": {"query": TASK}}, tools, TASK)
    return [b["tool_name"] for b in out["content"] if b["type"] == "tool_reference"]


RAW_UPSTREAM = textwrap.dedent('''
    """An MCP upstream written by hand (stdio, one JSON-RPC message a line): its tools/list answers argv[1] as it is."""
    import json, sys
    tools = open(sys.argv[1], encoding="utf-8").read()
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = json.dumps({"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                 "serverInfo": {"name": "raw", "version": "1"}})
        else:
            result = '{"tools": ' + tools + '}' if msg["method"] == "tools/list" else "{}"
        sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": %s}\\n' % (json.dumps(msg["id"]), result))
        sys.stdout.flush()
''')


def run_mcp_proxy(tools, tmp_path):
    from camdf.adapters.mcp import ToolProxy

    script, listing = tmp_path / "raw_upstream.py", tmp_path / "tools.json"
    script.write_text(RAW_UPSTREAM)
    listing.write_text(json.dumps(_shape(tools, {"parameters": "inputSchema"})))  # NaN as JSON's NaN, as sent
    proxy = ToolProxy([f"{sys.executable} {script} {listing}"], ToolChooser(FirstTool()), call_timeout=BOUND)

    async def go():
        async with AsyncExitStack() as stack:
            await proxy.connect(stack)
            proxy.decide(TASK)
            listed = await proxy.list_tools(None, None)
            return [t.name for t in listed.tools if t.name != "select_tools"]
    return anyio.run(go)


class _Server:
    """An Agents SDK MCP server as the filter reads it: its name, and a session that lists ``tools`` as given."""

    def __init__(self, name, tools, gate=None, fail=None):
        self.name, self._tools, self.gate, self.fail, self.listed = name, tools, gate, fail, 0
        self.session = self

    async def list_tools(self, params=None):
        self.listed += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return SimpleNamespace(tools=self._tools, next_cursor=None)


ADAPTERS = {"langchain": run_langchain, "openai_agents": run_openai_agents, "openai_responses": run_responses,
            "anthropic": run_anthropic, "mcp_proxy": run_mcp_proxy}
#: Cases no adapter may take as they are: a tool the model could not call (a name that is not one, a schema that is
#: not an object's) or two it could not tell apart; a dict with a bad name is not a provider's built-in.
NEVER_TAKEN = {"empty-name", "blank-name", "int-name", "null-name", "duplicate-name", "schema-string", "schema-list",
               "schema-not-object"}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("case, tools", CASES, ids=[c for c, _ in CASES])
def test_a_hostile_tool_list_is_refused_in_one_line_or_fails_open_once(adapter, case, tools, tmp_path):
    from camdf.adapters.mcp_upstream import UpstreamError

    run = ADAPTERS[adapter]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exposed = run(tools, tmp_path) if adapter == "mcp_proxy" else run(tools)
        except (ValueError, UpstreamError) as err:  # refused: one line naming the tool
            text = str(err)
            assert "\n" not in text and "Traceback" not in text, text
            named = [f"tools[{AT}]"] + ([GOOD[0]["name"], "tools[0]"] if case == "duplicate-name" else [])
            assert any(n in text for n in named), text
            return
    fail_open = [w for w in caught if issubclass(w.category, FailOpenWarning)]
    assert len(fail_open) <= 1, [str(w.message) for w in fail_open]
    if fail_open:  # every tool (the ones a harness can name) is kept
        assert {n for n in _names(tools) if n.strip()} <= set(exposed), exposed
    else:  # a list the adapter takes: the policy's decision, the first named tool
        assert case not in NEVER_TAKEN, exposed
        assert exposed and exposed[0] == GOOD[0]["name"], exposed


# -- the Agents SDK filter under cancellation: one decision per run and server, never a wait on nobody ---------------
def _agents_filter(server):
    from agents import Agent, RunContextWrapper
    from agents.mcp import ToolFilterContext

    from camdf.adapters.openai_agents import CamdfToolFilter

    flt = CamdfToolFilter(FirstTool())
    flt.attach(server)
    ctx = ToolFilterContext(run_context=RunContextWrapper(context=None), agent=Agent(name="shop"),
                            server_name=server.name)
    return flt, ctx


def test_a_cancelled_tool_check_leaves_the_shared_decision_to_the_next_check():
    async def go():
        server = _Server("shop", GOOD, gate=asyncio.Event())
        flt, ctx = _agents_filter(server)
        first = asyncio.ensure_future(flt(ctx, SimpleNamespace(name="get_order")))
        while not server.listed:  # the decision is under way, waiting on the server's listing
            await asyncio.sleep(0.01)
        first.cancel()  # as the SDK cancels a listing, or the caller's task is cancelled
        with pytest.raises(asyncio.CancelledError):
            await first
        server.gate.set()
        answers = [await asyncio.wait_for(flt(ctx, SimpleNamespace(name=t["name"])), BOUND) for t in GOOD]
        assert answers == [True, False, False, False]  # the policy's decision, made once and shared
        assert flt.decisions == 1 and server.listed == 1
    asyncio.run(go())


def test_a_cancelled_decision_is_made_again_by_the_next_check():
    class Cancelling(_Server):
        async def list_tools(self, params=None):
            if not self.listed:  # the first listing is cancelled itself (its session closes under it)
                self.listed += 1
                raise asyncio.CancelledError
            return await super().list_tools(params)

    async def go():
        server = Cancelling("shop", GOOD)
        flt, ctx = _agents_filter(server)
        checks = [flt(ctx, SimpleNamespace(name=t["name"])) for t in GOOD]
        answers = await asyncio.wait_for(asyncio.gather(*checks, return_exceptions=True), BOUND)
        answers += [await asyncio.wait_for(flt(ctx, SimpleNamespace(name="get_order")), BOUND)]
        assert answers == [True, False, False, False, True], answers
        assert server.listed == 2  # the cancelled decision, then one more
    asyncio.run(go())


def test_a_decision_that_fails_enables_every_tool_with_one_warning():
    async def go():
        server = _Server("shop", GOOD, gate=asyncio.Event(), fail=ConnectionResetError("the server went away"))
        flt, ctx = _agents_filter(server)
        checks = asyncio.gather(*(flt(ctx, SimpleNamespace(name=t["name"])) for t in GOOD))
        await asyncio.sleep(0.05)
        server.gate.set()
        return await asyncio.wait_for(checks, BOUND), server.listed

    with pytest.warns(FailOpenWarning, match="ConnectionResetError") as caught:
        answers, listed = asyncio.run(go())
    assert answers == [True] * len(GOOD) and listed == 1
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1


def test_a_tool_list_that_never_comes_fails_open_within_its_bound(monkeypatch):
    """An MCP server whose listing never answers: the run's checks all waited on it (the audit: > 25 s, bounded only
    by the SDK's own session timeout, which a caller can switch off); now every tool, one warning, at the bound."""
    import camdf.adapters.openai_agents as adapter

    monkeypatch.setattr(adapter, "TOOL_LIST", 0.3)

    async def go():
        server = _Server("shop", GOOD, gate=asyncio.Event())  # never set: the listing never answers
        flt, ctx = _agents_filter(server)
        checks = asyncio.gather(*(flt(ctx, SimpleNamespace(name=t["name"])) for t in GOOD))
        return await asyncio.wait_for(checks, BOUND)

    with pytest.warns(FailOpenWarning, match="tool list: no answer within 0.3 s") as caught:
        answers = asyncio.run(go())
    assert answers == [True] * len(GOOD)
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1


# -- `camdf mcp-proxy` in front of a hostile upstream: one line naming it, exit 2, no traceback ----------------------
EMPTY_NAME = textwrap.dedent('''
    """A real MCP server (the SDK's lowlevel Server over stdio) whose fourth tool has an empty name."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    TOOLS = [types.Tool(name=n, description="a tool", input_schema={"type": "object"}) for n in ("a", "b", "c", "")]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=TOOLS)

    async def main():
        server = Server("empty-name", on_list_tools=list_tools)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')
GARBAGE = textwrap.dedent('''
    import sys
    sys.stdout.write("this is not json\\n{garbage\\n")
    sys.stdout.flush()
    sys.stdin.read()
''')


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_hostile_upstream_is_one_line_naming_it_and_exit_2(tmp_path):
    (tmp_path / "empty_name.py").write_text(EMPTY_NAME)
    (tmp_path / "garbage.py").write_text(GARBAGE)
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    cases = {  # upstream: what the one line must say
        f"{sys.executable} {tmp_path / 'empty_name.py'}": r"empty_name\.py`: lists tools\[3\]: expected a tool name \(a non-empty string\), got ''$",
        f"{sys.executable} {tmp_path / 'garbage.py'}": r"garbage\.py`: writes what is not JSON-RPC on its stdout .*'this is not json'",
        url: rf"upstream `{url}`: cannot reach {url}: connection refused$",
    }
    procs = {up: subprocess.Popen([sys.executable, "-m", "camdf.cli", "mcp-proxy", "--upstream", up,
                                   "--call-timeout", "30"],  # the package's default policy
                                  cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
             for up in cases}
    for up, says in cases.items():
        _, err = procs[up].communicate(timeout=BOUND)
        assert procs[up].returncode == 2, err
        lines = [ln for ln in err.splitlines() if ln.startswith("camdf mcp-proxy:")]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert re.search(says, lines[0]), lines[0]
