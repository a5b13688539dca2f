"""Validate the task format's contents: the catalog's tools and each task, every problem as ``file:line: ...``.

The checks a parsed ``catalog.json`` and each parsed line of ``tasks.jsonl`` pass before they become
:class:`~camdf.data.model.Tool` and :class:`~camdf.data.model.Task` objects (:mod:`camdf.data.io.read`
reads the bytes and parses the JSON), the refusal :class:`DomainFormatError` that lists them, and the
plain domain name (:func:`check_domain_name`) a folder is written under.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from camdf.data.model import TOOL_KINDS, Task, Tool

CATALOG = "catalog.json"
TASKS = "tasks.jsonl"
TOOL_FIELDS = {"name", "description", "parameters", "kind", "cost"}
TASK_FIELDS = {"id", "text", "required", "candidates", "alternatives", "split", "group", "meta"}
CATALOG_FIELDS = {"domain", "source", "tools"}
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")

MAX_SHOWN_CHARS = 60  # of a value quoted in a message
MAX_LISTED = 200  # problems listed by a refusal; the rest are counted

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")  # only an escape can put a surrogate in decoded text
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class DomainFormatError(ValueError):
    """A domain folder that does not follow the task format; ``problems`` lists each one."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} problem(s):\n" + "\n".join(self.listed()))

    def listed(self, limit: int = MAX_LISTED) -> list[str]:
        """The first ``limit`` problems, one line each, and a last line counting the others."""
        shown = self.problems[:limit]
        if len(self.problems) > limit:
            shown.append(f"... and {len(self.problems) - limit} more problem(s) not listed (fix the ones above first)")
        return shown


def _show(value: Any) -> str:
    """``repr(value)`` clipped to :data:`MAX_SHOWN_CHARS` (it escapes control characters and surrogates);
    None (a field missing or null) and the booleans in JSON's words."""
    if value is None or isinstance(value, bool):
        return {None: "nothing (missing or null)", True: "true", False: "false"}[value]
    if isinstance(value, (list, dict)) and len(value) > MAX_SHOWN_CHARS:
        value = value[:MAX_SHOWN_CHARS] if isinstance(value, list) else dict(list(value.items())[:MAX_SHOWN_CHARS])
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def _name(value: Any) -> str:
    """A name quoted between backticks in a message: clipped, control characters and surrogates escaped."""
    text = str(value)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (object, array, string, number, true/false, null)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    for kind, name in ((dict, "an object"), (list, "an array"), (str, "a string"), ((int, float), "a number")):
        if isinstance(value, kind):
            return name
    return "null"


def _lone_surrogate(value: Any, path: str = "") -> str | None:
    """Path (``meta.notes[2]``) of the first string or key in ``value`` holding a lone surrogate, else None."""
    if isinstance(value, str):
        return path if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{_name(key)}" if path else _name(key)
            if _SURROGATE.search(key):
                return sub
            found = _lone_surrogate(item, sub)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


_SURROGATE_EXPECTED = "expected valid Unicode text: a \\ud800-\\udfff escape only as half of a pair"


_STR = {str}


def _is_name_list(value: Any) -> bool:
    return isinstance(value, list) and set(map(type, value)) <= _STR  # JSON strings are exactly str


def _check_fields(obj: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for key in sorted(set(obj) - allowed):
        problems.append(f"{where}: unknown field `{_name(key)}` (expected one of {', '.join(sorted(allowed))})")


def _catalog_contents(doc: Any, path: Path, name: str, problems: list[str]) -> tuple[str, str, list[Tool], set[str]]:
    if doc is None:
        return "", "", [], set()
    if not isinstance(doc, dict):
        problems.append(f"{name}:1: expected a JSON object with a `tools` list, got {_json_type(doc)}")
        return "", "", [], set()
    _check_fields(doc, CATALOG_FIELDS, f"{name}:{doc.line}", problems)
    domain = doc.get("domain", path.parent.name)
    source = doc.get("source", "")
    for key, value in (("domain", domain), ("source", source)):
        if not isinstance(value, str):
            problems.append(f"{name}:{doc.line}: field `{key}` must be a string, got {_json_type(value)}")
    tools_raw = doc.get("tools")
    if tools_raw is None:
        problems.append(f"{name}:{doc.line}: missing field `tools` (expected a non-empty list of tools)")
        return str(domain), str(source), [], set()
    if not isinstance(tools_raw, list):
        problems.append(f"{name}:{doc.line}: field `tools` must be a list, got {_json_type(tools_raw)}")
        return str(domain), str(source), [], set()
    if not tools_raw:
        problems.append(f"{name}:{doc.line}: empty catalog: `tools` has no entries")
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(tools_raw):
        if not isinstance(raw, dict):
            problems.append(f"{name}:{doc.line}: tools[{i}] must be an object, got {_json_type(raw)}")
            continue
        where = f"{name}:{raw.line}"
        ok = True
        _check_fields(raw, TOOL_FIELDS, where, problems)
        tname = raw.get("name")
        if not isinstance(tname, str) or not tname.strip():
            problems.append(f"{where}: tools[{i}]: field `name` must be a non-empty string, got {_show(tname)}")
            ok = False
        elif _CONTROL.search(tname):
            problems.append(f"{where}: tools[{i}]: field `name` must not hold control characters, got {_show(tname)}")
            ok = False
        elif tname in seen:
            problems.append(f"{where}: duplicate tool name `{_name(tname)}` (first defined at line {seen[tname]})")
            ok = False
        else:
            seen[tname] = raw.line
        label = f"tool `{_name(tname)}`"
        desc = raw.get("description", "")
        if not isinstance(desc, str):
            problems.append(f"{where}: {label}: field `description` must be a string")
            ok = False
        params = raw.get("parameters")
        if params is not None and not isinstance(params, dict):
            problems.append(f"{where}: {label}: field `parameters` must be a JSON schema object")
            ok = False
        kind = raw.get("kind")
        if not isinstance(kind, str) or kind not in TOOL_KINDS:
            problems.append(f"{where}: {label}: field `kind` must be one of {', '.join(TOOL_KINDS)}, got {_show(kind)}")
            ok = False
        cost = raw.get("cost")
        if cost is not None and not _positive_finite(cost):
            problems.append(f"{where}: {label}: field `cost` must be a finite number > 0, got {_show(cost)}")
            ok = False
        if ok:
            tools.append(
                Tool(
                    name=tname,
                    description=desc,
                    parameters=_plain(params),
                    kind=kind,
                    cost=None if cost is None else float(cost),
                )
            )
    # Names of tools that are declared but invalid still count as known, so one bad
    # tool is reported once, not again at every task that requires it.
    return str(domain), str(source), tools, set(seen)


def _positive_finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        value = float(value)  # an integer beyond the float range overflows here
    except OverflowError:
        return False
    return math.isfinite(value) and value > 0


def _plain(value: Any) -> Any:
    """Strip the line-tracking dict subclass so domain objects hold plain JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _check_tool_names(where: str, declared: set[str], required: list, candidates: list | None, alternatives: list,
                      problems: list[str]) -> None:
    """A task's tool names against the catalog's ``declared`` ones: every unknown name, and every required tool
    missing from its ``candidates``, appended as ``where: ...``."""
    for field_name, names in (
        ("required", required),
        ("candidates", candidates or []),
        *((f"alternatives[{k}]", alt) for k, alt in enumerate(alternatives)),
    ):
        if declared.issuperset(names):  # the usual case, tested in C; the loop only names the unknown
            continue
        for tool in names:
            if tool not in declared:
                problems.append(f"{where}: unknown tool `{_name(tool)}` in `{field_name}` (not in catalog)")
    if candidates is not None:
        offered = set(candidates)
        for tool in () if offered.issuperset(required) else required:
            if tool in declared and tool not in offered:
                problems.append(f"{where}: required tool `{_name(tool)}` is not in `candidates`")


def task_from_json(raw: dict, line: str, where: str, lineno: int, seen: dict[str, int], declared: set[str],
                   acquirable: set[str], problems: list[str], dropped: Counter) -> Task | None:
    """One parsed task line as a :class:`Task`, or None with every problem appended as ``where: ...``.

    ``seen`` (task id -> line) gains the task's id; ``declared`` are the catalog's tool names (empty:
    not checked); required tools outside ``acquirable`` are dropped from the task and counted in ``dropped``.
    """
    check_names = bool(declared)
    _check_fields(raw, TASK_FIELDS, where, problems)
    n_before = len(problems)
    tid = raw.get("id")
    if not isinstance(tid, str) or not tid.strip():
        problems.append(f"{where}: field `id` must be a non-empty string, got {_show(tid)}")
    elif _CONTROL.search(tid):
        problems.append(f"{where}: field `id` must not hold control characters, got {_show(tid)}")
    elif tid in seen:
        problems.append(f"{where}: duplicate task id `{_name(tid)}` (first at line {seen[tid]})")
    else:
        seen[tid] = lineno
    label = f"task `{_name(tid)}`" if isinstance(tid, str) else "task"
    if "\\u" in line and _SURROGATE_ESCAPE.search(line):
        bad = _lone_surrogate(raw)
        if bad is not None:
            problems.append(f"{where}: {label}: field `{bad}` holds a lone surrogate ({_SURROGATE_EXPECTED})")
    text = raw.get("text")
    if not isinstance(text, str):
        problems.append(f"{where}: {label}: field `text` must be a string, got {_show(text)}")
    required = raw.get("required")
    if not _is_name_list(required):
        problems.append(f"{where}: {label}: field `required` must be a list of tool names, got {_show(required)}")
        required = []
    elif len(set(required)) != len(required):
        problems.append(f"{where}: {label}: `required` lists a tool twice")
    candidates = raw.get("candidates")
    if candidates is not None and not _is_name_list(candidates):
        problems.append(f"{where}: {label}: field `candidates` must be a list of tool names")
        candidates = None
    alternatives = raw.get("alternatives", [])
    if not isinstance(alternatives, list) or not all(_is_name_list(a) for a in alternatives):
        problems.append(f"{where}: {label}: field `alternatives` must be a list of lists of tool names")
        alternatives = []
    split = raw.get("split")
    if split is not None and (not isinstance(split, str) or not split):
        problems.append(f"{where}: {label}: field `split` must be a non-empty string, got {_show(split)}")
    group = raw.get("group")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        problems.append(f"{where}: {label}: field `group` must be a non-empty string, got {_show(group)}")
    meta = raw.get("meta", {})
    if not isinstance(meta, dict):
        problems.append(f"{where}: {label}: field `meta` must be an object, got {_json_type(meta)}")
    if check_names:
        _check_tool_names(f"{where}: {label}", declared, required, candidates, alternatives, problems)
    if len(problems) > n_before:
        return None
    kept = tuple(t for t in required if t in acquirable)
    if len(kept) < len(required):
        dropped.update(t for t in required if t not in acquirable)
    return Task(
        id=tid,
        text=text,
        required=kept,
        candidates=None if candidates is None else tuple(candidates),
        alternatives=tuple(tuple(t for t in alt if t in acquirable) for alt in alternatives),
        split=split,
        meta=meta,
        group=group,
    )


def check_domain_name(name: Any) -> str:
    """``name`` if it is a plain name, safe as one folder under the data folder; else ValueError.

    A plain name is letters, digits, ``_`` and ``-``, starting with a letter or digit:
    never empty, ``.``, ``..``, a path (``a/b``, ``../x``) or a hidden name.
    """
    if not isinstance(name, str) or not DOMAIN_NAME.fullmatch(name):
        raise ValueError(f"domain.name: expected a plain name (letters, digits, `_`, `-`), got {name!r}")
    return name
