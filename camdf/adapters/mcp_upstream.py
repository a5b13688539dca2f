"""The MCP proxy's upstream side: starting or reaching each upstream server, listing its tools, forwarding calls.

An upstream is a command line (run over stdio, with the proxy's environment or the variables ``--env`` names,
besides the SDK's safe defaults) or an ``http(s)://`` URL (streamable HTTP). Every failure names the upstream:
one that cannot start, cannot be reached, does not answer, writes what is not JSON-RPC on its stdout or lists a
tool with an empty or repeated name is an :class:`UpstreamError` at start (one line, no traceback); a call that
times out or finds the upstream dead is an MCP error, never a hang. The proxy itself is :mod:`camdf.adapters.mcp`.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Sequence

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED
from pydantic import ValidationError

from camdf.common.waits import deadline
from camdf.runtime.tooltext import check_tools, describe_tool

#: What the SDK's stdio transport logs (with a traceback) for each stdout line that is not JSON-RPC; the proxy
#: reports such a line itself, naming the upstream.
_SDK_JUNK_LOG = "Failed to parse JSONRPC message from server"


class UpstreamError(RuntimeError):
    """An upstream server could not be started, reached or listed."""


@dataclass
class Upstream:
    """One upstream server: its command line or URL, its session once connected, and its tools."""

    spec: str
    session: ClientSession | None = None
    tools: list[types.Tool] = field(default_factory=list)
    #: The first stdout line that was not JSON-RPC (what the transport made of it), if there was one.
    junk: Exception | None = None

    @property
    def label(self) -> str:
        return f"upstream `{self.spec}`"


async def open_upstream(up: Upstream, stack: AsyncExitStack, env: dict[str, str], call_timeout: float) -> None:
    """Start (or reach) one upstream, initialise a session with it and list its tools (on ``stack``).

    Raises UpstreamError naming it: it cannot start or be reached, does not answer within ``call_timeout``, writes
    what is not JSON-RPC on its stdout, fails to list, or lists a tool with an empty or a repeated name."""
    _quiet_sdk_junk_log()
    starting = anyio.CancelScope()
    started = False

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            return
        if not started:  # at start: refused (the spec allows only MCP messages on an upstream's stdout)
            up.junk = up.junk or message
            starting.cancel()
        else:  # mid-session: the SDK skips the line; say so once per line, naming the upstream
            print(f"camdf mcp-proxy: {up.label}: {_junk(message)} (skipped)", file=sys.stderr)

    try:
        # The transport's task group raises its failures (a refused connection, say) when it closes: the upstream
        # is opened on a stack of its own, closed here on failure and handed to `stack` once it works.
        async with AsyncExitStack() as own:
            if up.spec.startswith(("http://", "https://")):
                from mcp.client.streamable_http import streamable_http_client

                read, write = await own.enter_async_context(streamable_http_client(up.spec))
            else:
                argv = shlex.split(up.spec)
                if not argv:
                    raise UpstreamError("--upstream: an empty command")
                # The SDK gives a child only its safe defaults unless `env` is set: an upstream's API keys live
                # in the environment, so it gets the proxy's (or the variables named by --env).
                params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
                read, write = await own.enter_async_context(stdio_client(params, errlog=sys.stderr))
            up.session = await own.enter_async_context(ClientSession(read, write, message_handler=on_message))
            with starting, deadline(call_timeout):
                await up.session.initialize()
                tools = await list_all(up.session)
            if up.junk is not None:
                raise UpstreamError(f"{up.label}: {_junk(up.junk)}")
            check_names(up, tools)
            up.tools, started = tools, True
            stack.push_async_exit(own.pop_all())
    except Exception as err:  # noqa: BLE001  the boundary: any failure to start names the upstream
        raise UpstreamError(_start_failure(up, err, call_timeout)) from None


def check_names(up: Upstream, tools: Sequence[types.Tool]) -> None:
    """Raise UpstreamError naming the upstream and the position of a tool the clients could not call: an empty or a
    repeated name, a schema that is not an object's (:func:`camdf.runtime.tooltext.check_tools`, as every adapter)."""
    try:
        check_tools(tools, [describe_tool(tool) for tool in tools])
    except ValueError as err:
        raise UpstreamError(f"{up.label}: lists {err}") from None


def _start_failure(up: Upstream, err: Exception, call_timeout: float) -> str:
    """One line saying why ``up`` did not start: the first failure of a (nested) group, its cause named."""
    leaf = err
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    if isinstance(leaf, UpstreamError):
        return str(leaf)
    if up.junk is not None:
        return f"{up.label}: {_junk(up.junk)}"
    if isinstance(leaf, TimeoutError):
        return f"{up.label}: no answer within {call_timeout:g} s"
    if isinstance(leaf, ValidationError):
        first, more = leaf.errors()[0], leaf.error_count() - 1
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.get("loc", ())).lstrip(".")
        return (f"{up.label}: answers what the MCP schema refuses: {where or 'its message'}: {first.get('msg', '')}"
                + (f" (and {more} more)" if more else ""))
    if up.spec.startswith(("http://", "https://")):
        cause = _cause(leaf, OSError)
        if isinstance(cause, ConnectionRefusedError):
            why = "connection refused"
        elif cause is not None and cause.strerror:
            why = cause.strerror
        else:
            why = _one_line(leaf)
        if "connect" in type(leaf).__name__.lower() or cause is not None:
            return f"{up.label}: cannot reach {up.spec}: {why}"
    return f"{up.label}: cannot start or initialise: {type(leaf).__name__}: {_one_line(leaf)}"


def _cause(err: BaseException, kind: type) -> BaseException | None:
    """The innermost exception of ``kind`` in ``err``'s chain of causes (None when there is none)."""
    found, seen = None, set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, kind):
            found = err
        err = err.__cause__ or err.__context__
    return found


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:300] or type(err).__name__


def _junk(err: Exception) -> str:
    """What a stdout line that was not JSON-RPC held, for one line of stderr: the parser's reason, and the tool
    it stumbled on when the line is a tool list (one nested deeper than the SDK's parser takes, say)."""
    first = err.errors()[0] if isinstance(err, ValidationError) and err.errors() else {}
    line, reason = first.get("input"), " ".join(str(first.get("msg", "")).split())
    if not isinstance(line, str):
        return f"writes what is not JSON-RPC on its stdout ({_one_line(err)[:120]})"
    try:
        tools = json.loads(line)["result"]["tools"]
    except (ValueError, TypeError, KeyError, RecursionError):
        tools = None
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        try:
            types.Tool.model_validate_json(json.dumps(tool))
        except (ValidationError, ValueError, RecursionError) as bad:
            why = bad.errors()[0].get("msg", "") if isinstance(bad, ValidationError) else _one_line(bad)
            return f"lists a tool the SDK cannot read (tools[{i}]): {' '.join(str(why).split())[:160]}"
    return f"writes what is not JSON-RPC on its stdout ({reason or 'unreadable'}): {line[:80]!r}"


class _DropJunkLog(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_JUNK_LOG


def _quiet_sdk_junk_log() -> None:
    """Drop the SDK's traceback for a stdout line that is not JSON-RPC: the proxy's own line names the upstream."""
    logger = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, _DropJunkLog) for f in logger.filters):
        logger.addFilter(_DropJunkLog())


async def list_all(session: ClientSession) -> list[types.Tool]:
    """Every tool a session lists, page by page."""
    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def forward(up: Upstream, name: str, args: dict, call_timeout: float) -> types.CallToolResult:
    """A call forwarded to the upstream that offers ``name``; a timeout or a dead upstream is an MCP error."""
    try:
        with deadline(call_timeout):
            return await up.session.call_tool(name, args)
    except TimeoutError:
        raise MCPError(types.INTERNAL_ERROR, f"{up.label}: no answer to {name!r} within "
                                             f"{call_timeout:g} s") from None
    except MCPError as err:
        if err.error.code != CONNECTION_CLOSED:
            raise  # the upstream's own error, as it sent it
        raise MCPError(types.INTERNAL_ERROR, f"{up.label} failed on {name!r}: it exited or closed the "
                                             "connection") from None
    except Exception as err:  # noqa: BLE001  a dead upstream: a clear error, never a hang
        raise MCPError(types.INTERNAL_ERROR, f"{up.label} failed on {name!r} (exited or unreachable): "
                                             f"{type(err).__name__}: {err}") from None


def environment(names: Sequence[str] | None) -> dict[str, str]:
    """What a stdio upstream gets besides the SDK's defaults: this process's environment, or its variables
    ``names`` (each must be set: ValueError naming it)."""
    if names is None:
        return dict(os.environ)
    if isinstance(names, str):
        raise ValueError("--env: expected a list of variable names, got a string")
    for name in names:
        if not isinstance(name, str) or not name or "=" in name:
            raise ValueError(f"--env: expected a variable name (KEY, not KEY=VALUE), got {name!r}")
        if name not in os.environ:
            raise ValueError(f"--env {name}: not set in camdf mcp-proxy's environment")
    return {name: os.environ[name] for name in names}


def first_of(group: BaseExceptionGroup, kind: type) -> BaseException | None:
    """The first exception of ``kind`` in a (nested) exception group."""
    for err in group.exceptions:
        if isinstance(err, kind):
            return err
        if isinstance(err, BaseExceptionGroup):
            inner = first_of(err, kind)
            if inner is not None:
                return inner
    return None
