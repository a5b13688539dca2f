"""The MCP proxy's upstream side: starting or reaching each upstream server, listing its tools, forwarding calls.

An upstream is a command line (run over stdio, with the proxy's environment or the variables ``--env`` names,
besides the SDK's safe defaults) or an ``http(s)://`` URL (streamable HTTP). Every failure names the upstream:
one that cannot start or does not answer is an :class:`UpstreamError` at start; a call that times out or finds
the upstream dead is an MCP error, never a hang. The proxy itself is :mod:`camdf.adapters.mcp`.
"""

from __future__ import annotations

import os
import shlex
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Sequence

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED


class UpstreamError(RuntimeError):
    """An upstream server could not be started, reached or listed."""


@dataclass
class Upstream:
    """One upstream server: its command line or URL, its session once connected, and its tools."""

    spec: str
    session: ClientSession | None = None
    tools: list[types.Tool] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"upstream `{self.spec}`"


async def open_upstream(up: Upstream, stack: AsyncExitStack, env: dict[str, str], call_timeout: float) -> None:
    """Start (or reach) one upstream, initialise a session with it and list its tools (on ``stack``).

    Raises UpstreamError naming it: it cannot start, does not answer within ``call_timeout``, or fails to list."""
    try:
        if up.spec.startswith(("http://", "https://")):
            from mcp.client.streamable_http import streamable_http_client

            read, write = await stack.enter_async_context(streamable_http_client(up.spec))
        else:
            argv = shlex.split(up.spec)
            if not argv:
                raise UpstreamError("--upstream: an empty command")
            # The SDK gives a child only its safe defaults unless `env` is set: an upstream's API keys live
            # in the environment, so it gets the proxy's (or the variables named by --env).
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
        up.session = await stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(call_timeout):
            await up.session.initialize()
            up.tools = await list_all(up.session)
    except UpstreamError:
        raise
    except TimeoutError:
        raise UpstreamError(f"{up.label}: no answer within {call_timeout:g} s") from None
    except Exception as err:  # noqa: BLE001  the boundary: any failure to start names the upstream
        raise UpstreamError(f"{up.label}: cannot start or initialise: {type(err).__name__}: {err}") from None


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
        with anyio.fail_after(call_timeout):
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
