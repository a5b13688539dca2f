"""The MCP proxy in both protocol eras, each with the real SDK client of that era (mcp 2.3.0 speaks both: its
``Client`` negotiates 2026-07-28 by ``server/discover``, and ``mode="legacy"`` is its byte-identical pre-2026
handshake): a 2026-07-28 client gets one fixed ``tools/list`` whatever it or another connection did; a handshake
client still gets the stateful ``select_tools`` mode. The upstream is a real MCP server over stdio."""

import json
import sys
import warnings
from contextlib import AsyncExitStack

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from camdf.adapters.mcp import ALWAYS_LOAD, CALL_TOOL, SEARCH_TOOL, ToolProxy
from camdf.runtime.search import search_tools
from camdf.runtime.toolset import ToolChooser

from ...conftest import FIXTURES, ROOT
from .conftest import CATALOG, LAM, QUERY

UPSTREAM = FIXTURES / "mcp_upstream.py"
PRELOAD = ["get_order", "get_user"]
NEED = "send the customer an invoice and a coupon"
#: The upstream's extra tool (tests/fixtures/mcp_upstream.py).
CRASH = {"name": "crash", "description": "End the server process", "parameters": {"type": "object"}}


@pytest.fixture(scope="module")
def upstream_cmd(tmp_path_factory):
    catalog = tmp_path_factory.mktemp("mcp2026") / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    return f"{sys.executable} {UPSTREAM} {catalog}"


def _listing(result):
    return [(t.name, t.meta) for t in result.tools]


def _in_process(proxy, body):
    """Connect the proxy's upstreams, then run ``body(server)`` (each client connects to ``server`` itself)."""
    async def go():
        with anyio.fail_after(90):
            async with AsyncExitStack() as stack:
                await proxy.connect(stack)
                await body(proxy.server())

    anyio.run(go)


def test_a_2026_client_lists_the_same_tools_on_two_connections_before_and_after_search_and_call(
        policy_dir, upstream_cmd):
    chooser = ToolChooser(str(policy_dir), lam=LAM)
    proxy = ToolProxy([upstream_cmd], chooser, preload=PRELOAD)
    expect = search_tools(ToolChooser(str(policy_dir), lam=LAM), CATALOG + [CRASH], NEED, PRELOAD)
    assert expect.names and not set(expect.names) & set(PRELOAD)

    async def body(server):
        async with Client(server, cache=None) as one, Client(server, cache=None) as two:
            assert one.protocol_version == two.protocol_version == "2026-07-28"
            first = _listing(await one.list_tools())
            assert [n for n, _ in first] == [SEARCH_TOOL, CALL_TOOL, *sorted(PRELOAD)]
            assert all(meta == ALWAYS_LOAD for _, meta in first)
            found = await one.call_tool(SEARCH_TOOL, {"query": NEED})
            assert [t["name"] for t in found.structured_content["tools"]] == list(expect.names)
            schema = found.structured_content["tools"][0]["inputSchema"]
            assert schema == next(t["parameters"] for t in CATALOG if t["name"] == expect.names[0])
            called = await one.call_tool(CALL_TOOL, {"name": expect.names[0], "arguments": {"id": "7"}})
            assert called.content[0].text == f'{expect.names[0]}:{{"id": "7"}}'
            direct = await two.call_tool(PRELOAD[0], {"id": "8"})
            assert direct.content[0].text == f'{PRELOAD[0]}:{{"id": "8"}}'
            assert _listing(await one.list_tools()) == first  # after a search and a call on this connection
            assert _listing(await two.list_tools()) == first  # and on another one
            unknown = await one.call_tool(CALL_TOOL, {"name": "no_such_tool", "arguments": {}})
            assert unknown.is_error and "unknown tool 'no_such_tool'" in unknown.content[0].text
        assert proxy.task is None  # nothing was kept between calls

    _in_process(proxy, body)


def test_a_handshake_client_of_the_same_process_still_gets_the_stateful_mode(policy_dir, upstream_cmd):
    proxy = ToolProxy([upstream_cmd], ToolChooser(str(policy_dir), lam=LAM), preload=PRELOAD)

    async def body(server):
        async with Client(server, mode="legacy", cache=None) as old:
            assert old.protocol_version == "2025-11-25"
            names = lambda res: sorted(t.name for t in res.tools)  # noqa: E731
            assert names(await old.list_tools()) == sorted(["select_tools", *PRELOAD])
            await old.call_tool("select_tools", {"task": QUERY})
            chosen = ToolChooser(str(policy_dir), lam=LAM).choose(CATALOG + [CRASH], QUERY).names
            assert set(chosen) - set(PRELOAD)  # the task changed the list
            assert names(await old.list_tools()) == sorted({"select_tools", *PRELOAD, *chosen})

    _in_process(proxy, body)


class Broken:
    method = "broken"

    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_a_broken_policy_makes_the_search_return_every_searchable_tool_and_say_why(upstream_cmd, capfd):
    proxy = ToolProxy([upstream_cmd], ToolChooser(Broken()), preload=PRELOAD)

    async def body(server):
        async with Client(server, cache=None) as client:
            found = await client.call_tool(SEARCH_TOOL, {"query": NEED})
            names = [t["name"] for t in found.structured_content["tools"]]
            assert sorted(names) == sorted({t["name"] for t in CATALOG} - set(PRELOAD) | {"crash"})
            assert "the policy failed, so every tool is returned: RuntimeError: policy exploded" in (
                found.structured_content["note"])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is caught and printed by the proxy, never raised
        _in_process(proxy, body)
    err = capfd.readouterr().err
    assert err.count("camdf: the policy failed (RuntimeError: policy exploded)") == 1, err


def test_camdf_mcp_proxy_over_stdio_answers_a_2026_client_with_the_preload(policy_dir, upstream_cmd):
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "camdf.cli", "mcp-proxy", "--upstream", upstream_cmd, "--policy", str(policy_dir), "--lam", str(LAM),
        "--preload", ",".join(PRELOAD), "--search-max", "2"], env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def go():
        with anyio.fail_after(90):
            async with Client(params, cache=None) as client:
                assert client.protocol_version == "2026-07-28"
                listed = await client.list_tools()
                assert [t.name for t in listed.tools] == [SEARCH_TOOL, CALL_TOOL, *sorted(PRELOAD)]
                found = await client.call_tool(SEARCH_TOOL, {"query": NEED})
                assert 1 <= len(found.structured_content["tools"]) <= 2

    anyio.run(go)


def test_a_preload_no_upstream_offers_is_refused_at_start(policy_dir, upstream_cmd):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "camdf.cli", "mcp-proxy", "--upstream", upstream_cmd, "--policy",
                           str(policy_dir), "--preload", "get_order,nope_tool"], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "camdf mcp-proxy: --preload: no upstream offers 'nope_tool'" in done.stderr
