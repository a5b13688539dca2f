"""A harness builder's own catalog and logged tasks, read and checked for ``camdf fit``.

The tools come as an MCP ``tools/list`` result (``{"tools": [...]}`` with ``inputSchema``, also inside a
JSON-RPC response's ``result``), a JSON list of OpenAI function tools or MCP tool descriptions, or (the
Python API) LangChain tools, converted with ``langchain_core``'s ``convert_to_openai_tool``. The tasks are
a JSONL file, one object per line: ``{"query": "...", "tools_used": ["name", ...]}`` (``tools`` is
accepted for ``tools_used``; an optional ``group``, e.g. a user or session id, keeps a group's tasks on
one side of every inner fold; other keys are ignored). Everything wrong is a ValueError of one line
naming the file and line (or the tool's index), what is wrong and what is expected.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from camdf.common.waits import read_regular
from camdf.runtime.requests import shown, tool_name, tool_view

#: Bytes of one file ``camdf fit`` reads (a catalog or a log of tasks).
MAX_FILE_BYTES = 1 << 30

#: The fewest logged tasks an inner cross-validation can compare policies on.
MIN_TASKS = 10


@dataclass(frozen=True)
class LoggedTask:
    """One logged task: its query, the tools it used (G_x) and its group (None: a group of its own)."""

    query: str
    tools_used: tuple[str, ...]
    group: str | None = None
    where: str = ""


def _langchain(tool: Any, i: int) -> dict:
    """A LangChain tool (anything with ``name`` that is not a dict) as an OpenAI function tool."""
    try:
        from langchain_core.utils.function_calling import convert_to_openai_tool
    except ImportError:
        raise ValueError(f"tools[{i}]: a {type(tool).__name__} is neither a tool dict nor convertible "
                         "(LangChain tools need langchain_core installed)") from None
    try:
        return convert_to_openai_tool(tool)
    except Exception as err:  # noqa: BLE001  the boundary: whatever LangChain raises, this tool is what is wrong
        raise ValueError(f"tools[{i}]: langchain_core cannot convert it to an OpenAI tool: {err}") from None


def tool_views(tools: Any, where: str = "tools") -> list[dict]:
    """Plain ``{name, description, parameters}`` views of a catalog, checked.

    Parameters
    ----------
    tools : list or dict
        OpenAI function tools, MCP tool descriptions or LangChain tools, or ``{"tools": [...]}`` (an MCP
        ``tools/list`` result, also as a JSON-RPC response's ``result``).
    where : str
        Named in errors (the file).
    """
    if isinstance(tools, dict):
        body = tools.get("result", tools) if "tools" not in tools else tools
        if not isinstance(body, dict) or "tools" not in body:
            raise ValueError(f"{where}: expected an MCP tools/list result ({{\"tools\": [...]}}) or a list of tools")
        tools = body["tools"]
    if not isinstance(tools, (list, tuple)) or not tools:
        raise ValueError(f"{where}: expected a non-empty list of tools, got {shown(tools)}")
    views, seen = [], set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) and hasattr(tool, "name"):
            tool = _langchain(tool, i)
        try:
            name = tool_name(tool, i)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        if name in seen:
            raise ValueError(f"{where}: tools[{i}].name: duplicate tool name {shown(name)}")
        seen.add(name)
        views.append(tool_view(tool))
    return views


def read_tools(path: str | os.PathLike) -> list[dict]:
    """The catalog of a JSON file (see :func:`tool_views`); ValueError naming the file."""
    return tool_views(_json_file(Path(path)), str(path))


def _json_file(path: Path) -> Any:
    from camdf.runtime.jsonio import parse_json

    return parse_json(_bytes(path), str(path))


def _bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES` (ValueError naming it otherwise)."""
    return read_regular(path, MAX_FILE_BYTES, "a regular JSON or JSON-lines file")


def _task(value: Any, where: str, known: set[str]) -> LoggedTask:
    """One parsed line as a :class:`LoggedTask`; ValueError naming ``where`` (``file:line``) and the field."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object {{\"query\": ..., \"tools_used\": [...]}}, "
                         f"got {type(value).__name__}")
    if "tools_used" in value and "tools" in value:
        raise ValueError(f"{where}: tools: give tools_used or tools, not both")
    query = value.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"{where}: query: expected the task's text, a non-empty string, got {shown(query)}")
    key = "tools" if "tools" in value else "tools_used"
    used = value.get(key)
    if not isinstance(used, list) or not all(isinstance(n, str) and n for n in used):
        raise ValueError(f"{where}: {key}: expected a list of tool names, got {shown(used)}")
    for name in used:
        if name not in known:
            raise ValueError(f"{where}: {key}: unknown tool {shown(name)} (not in the tools file)")
    group = value.get("group")
    if group is not None and not isinstance(group, (str, int)):
        raise ValueError(f"{where}: group: expected a string or an integer, got {shown(group)}")
    return LoggedTask(query, tuple(dict.fromkeys(used)), None if group is None else str(group), where)


def check_tasks(tasks: Sequence[Any], names: Sequence[str], where: str = "tasks",
                minimum: int = MIN_TASKS) -> list[LoggedTask]:
    """Logged tasks given as dicts (or :class:`LoggedTask`), checked against the catalog's ``names``; at least
    ``minimum`` of them (camdf fit's default: enough to compare policies out of fold)."""
    known = set(names)
    out = [t if isinstance(t, LoggedTask) else _task(t, f"{where}[{k}]", known) for k, t in enumerate(tasks)]
    if len(out) < minimum:
        who = "camdf fit needs" if minimum == MIN_TASKS else "needs"
        why = " to compare policies out of fold" if minimum == MIN_TASKS else ""
        raise ValueError(f"{where}: {len(out)} tasks; {who} at least {minimum} logged tasks{why}")
    return out


def read_tasks(path: str | os.PathLike, names: Sequence[str], minimum: int = MIN_TASKS) -> list[LoggedTask]:
    """The logged tasks of a JSONL file; ValueError naming ``file:line`` for an empty, garbled or wrong line."""
    path = Path(path)
    data = _bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8") from None
    known, out = set(names), []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline ends the last line; it opens no empty one
    for k, line in enumerate(lines, start=1):
        where = f"{path}:{k}"
        if not line.strip():
            raise ValueError(f"{where}: empty line (expected one JSON object per line)")
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as err:
            raise ValueError(f"{where}: not JSON ({getattr(err, 'msg', 'nested too deeply')}); expected one "
                             "object per line") from None
        except ValueError:  # an integer literal beyond the interpreter's digit limit
            raise ValueError(f"{where}: not JSON (a number too long); expected one object per line") from None
        out.append(_task(value, where, known))
    return check_tasks(out, names, str(path), minimum)
