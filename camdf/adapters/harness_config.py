"""A fitted preload set written as each harness's own setting (``camdf preload --format``).

Each harness of 2026 defers tools behind a search and loads a list up front; this writes that list where the
harness reads it:

- ``claude-code``: a ``.mcp.json`` entry running ``camdf mcp-proxy`` in front of your servers with
  ``--preload``; the proxy's fixed ``tools/list`` (2026-07-28) is the search meta-tool, the call meta-tool and the
  preload, each marked ``_meta["anthropic/alwaysLoad"]``, and the entry is ``alwaysLoad`` (everything it lists
  is meant to be loaded; the rest of your tools are one ``search_tools`` away);
- ``codex``: the same server as a ``[mcp_servers.<name>]`` table of ``config.toml``;
- ``openai``: the Responses API's ``tools``: a client-executed ``tool_search``, the preload as function tools,
  every other tool with ``defer_loading: true`` (answer the search with
  :class:`camdf.adapters.openai_responses.ClientToolSearch`);
- ``anthropic``: the Messages API's ``tools``: camdf's search tool, the preload, every other tool with
  ``defer_loading: true`` (answer the search with :class:`camdf.adapters.anthropic.ToolSearch`);
- ``langchain``: the split for ``ProviderToolSearchMiddleware(searchable_tools=...)`` (everything but the preload
  searchable);
- ``names`` (comma-separated, for ``--preload``) and ``json`` (the plan and the rule's inputs).

Nothing here imports a harness library.
"""

from __future__ import annotations

import json
from typing import Sequence

from camdf.runtime.preload import PreloadPlan

FORMATS = ("json", "names", "claude-code", "codex", "openai", "anthropic", "langchain")


def _proxy_args(plan: PreloadPlan, upstreams: Sequence[str], policy: str | None, fmt: str) -> list[str]:
    if not upstreams:
        raise ValueError(f"--format {fmt}: give the upstream MCP servers (--upstream CMD_OR_URL, repeatable) the "
                         "camdf server stands in front of")
    args = ["mcp-proxy"]
    for up in upstreams:
        args += ["--upstream", up]
    if policy is not None:
        args += ["--policy", str(policy)]
    if plan.names:
        args += ["--preload", ",".join(plan.names)]
    return args


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string for these characters


def _function(tool: dict, deferred: bool, key: str) -> dict:
    out = {"name": tool["name"], "description": tool.get("description") or "",
           key: tool.get("parameters") or {"type": "object", "properties": {}}}
    return {**out, "defer_loading": True} if deferred else out


def render(fmt: str, plan: PreloadPlan, tools: Sequence[dict], *, upstreams: Sequence[str] = (),
           server: str = "camdf", policy: str | None = None) -> str:
    """The preload as ``fmt`` (one of :data:`FORMATS`); ``tools``: the plain views the plan was fitted on."""
    if fmt not in FORMATS:
        raise ValueError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if not isinstance(server, str) or not server.strip() or any(c in server for c in "\"\\\n[]."):
        raise ValueError(f"--server: expected a plain name (no quotes, dots, brackets), got {server!r}")
    keep = set(plan.names)
    if fmt == "names":
        return ",".join(plan.names)
    if fmt == "json":
        body = plan.summary()
        body["need"] = {n: round(plan.need[n], 4) for n in plan.catalog if plan.need[n] > 0}
        return json.dumps(body, indent=2, ensure_ascii=False)
    if fmt == "claude-code":
        entry = {"type": "stdio", "command": "camdf", "args": _proxy_args(plan, upstreams, policy, fmt),
                 "alwaysLoad": True}
        return json.dumps({"mcpServers": {server: entry}}, indent=2, ensure_ascii=False)
    if fmt == "codex":
        args = ", ".join(_toml_string(a) for a in _proxy_args(plan, upstreams, policy, fmt))
        return f'[mcp_servers.{server}]\ncommand = "camdf"\nargs = [{args}]'
    if fmt == "openai":
        from camdf.adapters.openai_responses import ClientToolSearch

        listed = [{"type": "function", **_function(t, False, "parameters"), "strict": False}
                  for t in tools]  # strict is required by the API; False: the schemas are not strict-mode ones
        return json.dumps(ClientToolSearch(preload=plan.names).prepare(listed), indent=2, ensure_ascii=False)
    if fmt == "anthropic":
        from camdf.adapters.anthropic import ToolSearch

        listed = [_function(t, t["name"] not in keep, "input_schema") for t in tools]
        return json.dumps([ToolSearch().definition(), *listed], indent=2, ensure_ascii=False)
    # langchain
    return json.dumps({"preloaded": list(plan.names), "searchable_tools": list(plan.deferred)}, indent=2,
                      ensure_ascii=False)
