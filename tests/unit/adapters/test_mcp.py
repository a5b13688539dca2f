"""MCP: a real upstream server (the SDK, stdio) with 20 tools, `camdf mcp-proxy` in front of it, a real
ClientSession."""

import json
import re
import subprocess
import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from ...conftest import FIXTURES, ROOT
from .conftest import CATALOG, LAM, QUERY

UPSTREAM = FIXTURES / "mcp_upstream.py"


@pytest.fixture(scope="module")
def upstream_cmd(tmp_path_factory):
    catalog = tmp_path_factory.mktemp("mcp") / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    return f"{sys.executable} {UPSTREAM} {catalog}"


def _proxy(*args):
    return StdioServerParameters(command=sys.executable, args=["-m", "camdf.cli", "mcp-proxy", *args],
                                 env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))


def _text(result):
    return result.content[0].text


async def _session_run(params, body):
    changed = []

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.append(message)

    with anyio.fail_after(90):  # no step may hang
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                await body(session, changed)


def test_the_proxy_lists_the_selection_forwards_refuses_and_survives_a_crash(policy_dir, expected, upstream_cmd):
    withheld = next(t["name"] for t in CATALOG if t["name"] not in expected)

    async def body(session, changed):
        names = lambda res: sorted(t.name for t in res.tools)  # noqa: E731
        assert names(await session.list_tools()) == ["crash", "select_tools"]  # before the task
        answer = _text(await session.call_tool("select_tools", {"task": QUERY}))
        assert answer.startswith(f"{len(expected) + 1} of {len(CATALOG) + 1} tools exposed")
        with anyio.fail_after(10):
            while not changed:
                await anyio.sleep(0.05)
        assert names(await session.list_tools()) == sorted([*expected, "crash", "select_tools"])
        assert _text(await session.call_tool(expected[0], {"id": "7"})) == f'{expected[0]}:{{"id": "7"}}'
        with pytest.raises(MCPError, match=f"tool '{withheld}' is withheld"):
            await session.call_tool(withheld, {"id": "7"})
        with pytest.raises(MCPError, match="upstream .* failed on 'crash'"):
            await session.call_tool("crash", {})
        with pytest.raises(MCPError, match="upstream"):  # the next call: an error too, not a hang
            await session.call_tool(expected[0], {"id": "8"})

    anyio.run(_session_run, _proxy("--upstream", upstream_cmd, "--policy", str(policy_dir), "--lam", str(LAM),
                                   "--always-include", "crash", "--call-timeout", "20"), body)


def test_forward_mode_records_a_miss_instead_of_refusing(policy_dir, expected, upstream_cmd):
    withheld = next(t["name"] for t in CATALOG if t["name"] not in expected)

    async def body(session, changed):
        await session.call_tool("select_tools", {"task": QUERY})
        assert _text(await session.call_tool(withheld, {})) == f"{withheld}:{{}}"

    anyio.run(_session_run, _proxy("--upstream", upstream_cmd, "--policy", str(policy_dir), "--lam", str(LAM),
                                   "--on-withheld", "forward"), body)


@pytest.mark.parametrize("upstream, policy, says", [
    (f"{sys.executable} -c 'import sys; sys.exit(3)'", None, "upstream `.*`: cannot start or initialise"),
    (None, "/nonexistent/policy", "policy: cannot load '/nonexistent/policy'"),
])
def test_a_bad_upstream_or_policy_is_one_line_and_exit_2(policy_dir, upstream_cmd, upstream, policy, says):
    args = ["--upstream", upstream or upstream_cmd, "--policy", policy or str(policy_dir)]
    done = subprocess.run([sys.executable, "-m", "camdf.cli", "mcp-proxy", *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("camdf mcp-proxy:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.search(says, lines[0]), lines[0]


def test_a_streamable_http_upstream_beside_a_stdio_one(policy_dir, upstream_cmd):
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(FIXTURES / "mcp_http_upstream.py"), str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)

        async def body(session, changed):
            answer = _text(await session.call_tool("select_tools", {"task": "book a flight"}))
            assert f"of {len(CATALOG) + 3} tools exposed" in answer  # both upstreams' tools (and crash) are candidates
            assert _text(await session.call_tool("book_flight", {"origin": "A", "destination": "B"})) == "A-B: booked"

        anyio.run(_session_run, _proxy("--upstream", upstream_cmd, "--upstream", f"http://127.0.0.1:{port}/mcp",
                                       "--policy", str(policy_dir), "--lam", "0.01", "--on-withheld", "forward"), body)
    finally:
        server.kill()
        server.wait()


class Broken:
    method = "broken"

    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_a_policy_that_fails_deciding_lists_every_tool(upstream_cmd, capfd):
    """The proxy in this process (its Server over the SDK's memory streams), the real upstream over stdio."""
    from contextlib import AsyncExitStack

    from mcp.server.lowlevel import NotificationOptions
    from mcp.shared.memory import create_client_server_memory_streams

    from camdf.adapters.mcp import ToolProxy
    from camdf.runtime.toolset import ToolChooser

    proxy = ToolProxy([upstream_cmd], ToolChooser(Broken()))

    async def go():
        with anyio.fail_after(60):
            await run()

    async def run():
        async with AsyncExitStack() as stack:
            await proxy.connect(stack)
            server = proxy.server()
            options = server.create_initialization_options(NotificationOptions(tools_changed=True))
            async with create_client_server_memory_streams() as ((c_read, c_write), (s_read, s_write)):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.run, s_read, s_write, options)
                    async with ClientSession(c_read, c_write) as session:
                        await session.initialize()
                        answer = _text(await session.call_tool("select_tools", {"task": QUERY}))
                        assert answer.startswith(f"{len(CATALOG) + 1} of {len(CATALOG) + 1} tools exposed")
                        assert "the policy failed, so every tool is exposed: RuntimeError: policy exploded" in answer
                        assert len((await session.list_tools()).tools) == len(CATALOG) + 2
                    tg.cancel_scope.cancel()

    anyio.run(go)
    assert "camdf mcp-proxy: camdf: the policy failed (RuntimeError: policy exploded)" in capfd.readouterr().err


def test_a_deferring_policy_preloads_and_search_tools_exposes_what_it_deferred(upstream_cmd, tmp_path):
    from camdf.runtime import StopPolicy
    from camdf.runtime.export import export_policy
    from camdf.runtime.toolset import search_deferred

    from ..core.test_theory import _family

    policy = StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 3}).fit(
        _family(60, True), costs={"x": 6.0})
    folder = export_policy(policy, tmp_path / "fallback")
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    found = search_deferred("send the invoice and a coupon", CATALOG, sel.deferred, 2)
    assert sel.exposed and found

    async def body(session, changed):
        names = lambda res: sorted(t.name for t in res.tools)  # noqa: E731
        answer = _text(await session.call_tool("select_tools", {"task": QUERY}))
        # The upstream's 20 tools and its `crash`: the policy preloads what it preloads over the 20 alone.
        assert re.search(r"; \d+ more can be found with search_tools(; note: .*)?$", answer), answer
        assert names(await session.list_tools()) == sorted([*sel.exposed, "search_tools", "select_tools"])
        with pytest.raises(MCPError, match=f"tool '{found[0]}' is withheld"):
            await session.call_tool(found[0], {"id": "7"})
        said = _text(await session.call_tool("search_tools", {"query": "send the invoice and a coupon"}))
        assert said.startswith("found and exposed: ")  # the search's order is the ranker's over the upstream's tools
        assert set(said.removeprefix("found and exposed: ").split(", ")) == set(found)
        assert names(await session.list_tools()) == sorted([*sel.exposed, *found, "search_tools", "select_tools"])
        assert _text(await session.call_tool(found[0], {"id": "7"})) == f'{found[0]}:{{"id": "7"}}'

    anyio.run(_session_run, _proxy("--upstream", upstream_cmd, "--policy", str(folder), "--lam", str(LAM),
                                   "--search-k", "2"), body)


ENV_UPSTREAM = f"{sys.executable} {FIXTURES / 'mcp_env_upstream.py'}"


def test_a_stdio_upstream_gets_the_proxys_environment_by_default(monkeypatch):
    """An upstream's API key lives in the environment: the SDK alone would give the child only PATH, HOME..."""
    from contextlib import AsyncExitStack

    from camdf.adapters.mcp import ToolProxy
    from camdf.runtime.toolset import ToolChooser

    monkeypatch.setenv("CAMDF_TEST_SECRET", "s3cret")
    monkeypatch.setenv("CAMDF_TEST_OTHER", "other")

    async def read(env):
        proxy = ToolProxy([ENV_UPSTREAM], ToolChooser(Broken()), env=env)
        with anyio.fail_after(60):
            async with AsyncExitStack() as stack:
                await proxy.connect(stack)
                session = proxy.upstreams[0].session
                return [_text(await session.call_tool("read_env", {"name": n}))
                        for n in ("CAMDF_TEST_SECRET", "CAMDF_TEST_OTHER", "PATH")]

    assert anyio.run(read, None)[:2] == ["s3cret", "other"]
    secret, other, path = anyio.run(read, ["CAMDF_TEST_SECRET"])
    assert (secret, other) == ("s3cret", "<unset>") and path != "<unset>"  # the SDK's safe defaults still pass
    for bad, says in ((["CAMDF_TEST_MISSING"], r"^--env CAMDF_TEST_MISSING: not set in camdf mcp-proxy's environment"),
                      (["A=B"], r"^--env: expected a variable name \(KEY, not KEY=VALUE\), got 'A=B'"),
                      ("CAMDF_TEST_SECRET", r"^--env: expected a list of variable names, got a string")):
        with pytest.raises(ValueError, match=says):
            ToolProxy([ENV_UPSTREAM], ToolChooser(Broken()), env=bad)


def test_env_restricts_what_the_command_passes_on(policy_dir):
    """`camdf mcp-proxy --env KEY`: the upstream sees KEY, not the proxy's other variables."""
    params = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT),
        args=["-m", "camdf.cli", "mcp-proxy", "--upstream", ENV_UPSTREAM, "--policy", str(policy_dir),
              "--always-include", "read_env", "--env", "CAMDF_TEST_SECRET", "--env", "PYTHONPATH"],
        env={"PYTHONPATH": str(ROOT), "CAMDF_TEST_SECRET": "s3cret", "CAMDF_TEST_OTHER": "other"})

    async def body(session, changed):
        seen = [_text(await session.call_tool("read_env", {"name": n})) for n in ("CAMDF_TEST_SECRET",
                                                                                   "CAMDF_TEST_OTHER")]
        assert seen == ["s3cret", "<unset>"]

    anyio.run(_session_run, params, body)
