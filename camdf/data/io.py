"""Read, validate and write a domain folder (``catalog.json`` + ``tasks.jsonl``).

The reader refuses a malformed folder as a whole: it collects every problem as
``file:line: what is wrong (what is expected)`` and raises :class:`DomainFormatError`
listing them all, one per line. Hostile input is refused the same way, never with a
traceback: a file that is missing, unreadable, a folder, a broken link or not a regular
file; bytes that are not UTF-8 or a byte-order mark; nesting deeper than
:data:`MAX_DEPTH`; a number literal longer than :data:`MAX_NUMBER_CHARS`; a lone
surrogate escape (text that cannot be written back as UTF-8); a file larger than
:data:`MAX_FILE_BYTES`. Values quoted in a message are clipped to
:data:`MAX_SHOWN_CHARS`, so a message stays one short line whatever the input.

The writer is atomic: it fills a temporary sibling folder and swaps it in, so a
failed write leaves the previous folder (or nothing) behind, never half a folder.
It writes only a folder with a plain name (:func:`check_domain_name`) and removes
the temporaries a killed earlier write of the same name left beside it.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import json
import json.scanner
import math
import os
import re
import shutil
import stat
import tempfile
from collections import Counter
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from camdf.common.jsonguard import MAX_DEPTH, MAX_NUMBER_CHARS
from camdf.data.model import DEFAULT_ACQUIRABLE_KINDS, KINDS, Domain, Task, Tool

CATALOG = "catalog.json"
TASKS = "tasks.jsonl"
TOOL_FIELDS = {"name", "description", "parameters", "kind", "cost"}
TASK_FIELDS = {"id", "text", "required", "candidates", "alternatives", "split", "group", "meta"}
CATALOG_FIELDS = {"domain", "source", "tools"}
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")

# Limits of the task format (docs/task-format.md, "Limits"); MAX_DEPTH and MAX_NUMBER_CHARS are the
# untrusted-JSON guard's (camdf.common.jsonguard), shared with the runtime's request reader.
MAX_FILE_BYTES = 2**30  # size of catalog.json and of tasks.jsonl
MAX_SHOWN_CHARS = 60  # of a value quoted in a message
MAX_LISTED = 200  # problems listed by a refusal; the rest are counted
NL = b"\n"

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")  # only an escape can put a surrogate in decoded text
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

try:  # a live writer locks its temporary folder, so another writer never removes it as stale
    import fcntl
except ImportError:  # pragma: no cover (not POSIX: no locks, every temporary counts as stale)
    fcntl = None


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


class _NumberTooLong(ValueError):
    def __init__(self, literal: str):
        self.size = len(literal)
        super().__init__(f"number literal of {self.size} characters")


def _number(convert):
    def parse(literal: str):
        if len(literal) > MAX_NUMBER_CHARS:  # before int(): a 5,000-digit integer is refused here, not by Python
            raise _NumberTooLong(literal)
        return convert(literal)
    return parse


_parse_int, _parse_float = _number(int), _number(float)
_TASK_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float)


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


class _LineDict(dict):
    """A JSON object that remembers the line it starts on."""

    line: int = 1


_FAST_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, object_hook=_LineDict)


def _loads_with_lines(text: str, lines: bool = True) -> Any:
    """``json.loads`` whose objects are :class:`_LineDict` carrying their start line.

    With ``lines=False`` the objects are :class:`_LineDict` at line 1, parsed by the C scanner
    (several times faster): the first pass over a catalog, repeated with lines only when it
    finds a problem to report."""
    if not lines:
        return _FAST_DECODER.decode(text)
    newlines = list(accumulate(len(part) + 1 for part in text.split("\n")))[:-1]  # offsets just past each newline
    decoder = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float)
    parse_object = decoder.parse_object
    def parse_with_line(s_and_end, *args):
        _, start = s_and_end
        obj, end = parse_object(s_and_end, *args)
        out = _LineDict(obj)
        out.line = bisect.bisect_right(newlines, start) + 1
        return out, end

    decoder.parse_object = parse_with_line
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(text)


def _structure_problems(data: bytes, limit: int = 20) -> list[tuple[int, str]]:
    """(byte offset, what is wrong) for nesting deeper than :data:`MAX_DEPTH` and numbers longer than allowed.

    One vectorised pass over the bytes, outside JSON strings, before any parser recurses
    into them: escaped backslashes and quotes are blanked (same length, so offsets hold),
    a byte is inside a string when an odd number of quotes precede it, and the depth at
    a byte is the running sum of ``{[`` minus ``}]`` outside strings. Only the first
    over-deep place is reported (the rest of that structure is one problem).
    """
    a = np.frombuffer(data.replace(b"\\\\", b"__").replace(b'\\"', b"__"), dtype=np.uint8)
    outside = (np.cumsum(a == 34, dtype=np.int32) & 1) == 0
    opens = ((a == 123) | (a == 91)) & outside
    closes = ((a == 125) | (a == 93)) & outside
    out: list[tuple[int, str]] = []
    if int(opens.sum()) > MAX_DEPTH:
        over = np.flatnonzero(np.cumsum(opens.view(np.int8) - closes.view(np.int8), dtype=np.int32) > MAX_DEPTH)
        if len(over):
            out.append((int(over[0]), f"nesting deeper than {MAX_DEPTH} levels"))
    del opens, closes
    numeric = (((a >= 48) & (a <= 57)) | (a == 45) | (a == 43) | (a == 46) | (a == 101) | (a == 69)) & outside
    edges = np.diff(numeric.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    for i in np.flatnonzero(ends - starts > MAX_NUMBER_CHARS)[:limit]:
        out.append((int(starts[i]), f"number of {int(ends[i] - starts[i])} characters"))
    return sorted(out)[:limit]


_STRUCTURE_EXPECTED = {
    "nesting": f"expected at most {MAX_DEPTH} nested objects and arrays",
    "number": f"expected at most {MAX_NUMBER_CHARS} characters per number",
}


def _structure_message(message: str, column: int) -> str:
    return f"{message} at column {column} ({_STRUCTURE_EXPECTED[message.split()[0]]})"


def _read_file(path: Path, name: str, expected: str, problems: list[str]) -> bytes | None:
    """The bytes of ``path``, or None with the reason appended to ``problems`` as ``name:1: ...``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            problems.append(f"{name}:1: broken symbolic link to `{_name(os.readlink(path))}` (expected {expected})")
        else:
            problems.append(f"{name}:1: missing file (expected {expected})")
        return None
    except OSError as err:  # unreadable parent, a link loop, a path through a file
        problems.append(f"{name}:1: cannot read: {err.strerror} (expected {expected})")
        return None
    if stat.S_ISDIR(st.st_mode):
        problems.append(f"{name}:1: a folder, not a file (expected {expected})")
    elif not stat.S_ISREG(st.st_mode):  # a pipe or device would block or never end
        problems.append(f"{name}:1: not a regular file (expected {expected})")
    elif st.st_size > MAX_FILE_BYTES:
        problems.append(f"{name}:1: file of {st.st_size:,} bytes (expected at most {MAX_FILE_BYTES:,} bytes)")
    else:
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError as err:
            problems.append(f"{name}:1: cannot read: {err.strerror} (expected a file the reader may open)")
    return None


def _bom(data: bytes, name: str, problems: list[str]) -> bytes:
    if data.startswith(codecs.BOM_UTF8):
        problems.append(f"{name}:1: starts with a byte-order mark (expected UTF-8 without a BOM; save it without one)")
        return data[len(codecs.BOM_UTF8):]
    return data


def _line_of(data: bytes, offset: int) -> int:
    return data.count(NL, 0, offset) + 1


def _not_utf8(data: bytes, err: UnicodeDecodeError, where: str, line_start: int = 0) -> str:
    col = err.start - line_start + 1
    return f"{where}: not UTF-8: byte 0x{data[err.start]:02x} at column {col} (expected UTF-8 text)"


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


def _parse_catalog(data: bytes, name: str, problems: list[str], lines: bool = True) -> Any:
    """The catalog's JSON document (objects as :class:`_LineDict`, at their lines when ``lines``),
    or None with the problems appended."""
    data = _bom(data, name, problems)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        problems.append(_not_utf8(data, err, f"{name}:{_line_of(data, err.start)}", data.rfind(NL, 0, err.start) + 1))
        return None
    if not text.strip():
        problems.append(f"{name}:1: empty file (expected a JSON object with a `tools` list)")
        return None
    found = _structure_problems(data)
    for offset, message in found:
        column = offset - data.rfind(NL, 0, offset)
        problems.append(f"{name}:{_line_of(data, offset)}: {_structure_message(message, column)}")
    if found:
        return None
    try:
        doc = _loads_with_lines(text, lines)
    except json.JSONDecodeError as err:
        problems.append(f"{name}:{err.lineno}: invalid JSON: {err.msg} (column {err.colno})")
        return None
    except (_NumberTooLong, RecursionError) as err:  # not reached after the scan; kept as the last guard
        problems.append(f"{name}:1: {err} (expected at most {MAX_DEPTH} levels and {MAX_NUMBER_CHARS}-character numbers)")
        return None
    if _SURROGATE_ESCAPE.search(text):
        for key, value in (doc.items() if isinstance(doc, dict) else ()):
            items = enumerate(value) if key == "tools" and isinstance(value, list) else [(None, value)]
            for i, item in items:
                path = _lone_surrogate(item, key if i is None else f"tools[{i}]")
                if path is not None:
                    line = item.line if isinstance(item, _LineDict) else doc.line
                    problems.append(f"{name}:{line}: field `{path}` holds a lone surrogate ({_SURROGATE_EXPECTED})")
    return doc


def _read_catalog(path: Path, problems: list[str]) -> tuple[str, str, list[Tool], set[str]]:
    name = f"{path.parent.name}/{CATALOG}"
    data = _read_file(path, name, "a JSON object with a `tools` list", problems)
    if data is None:
        return "", "", [], set()
    found: list[str] = []  # a first pass without line numbers; a catalog with problems is read again with them
    out = _catalog_contents(_parse_catalog(data, name, found, lines=False), path, name, found)
    if not found:
        return out
    return _catalog_contents(_parse_catalog(data, name, problems), path, name, problems)


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
        if not isinstance(kind, str) or kind not in KINDS:
            problems.append(f"{where}: {label}: field `kind` must be one of {', '.join(KINDS)}, got {_show(kind)}")
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


def _task_lines(data: bytes, name: str, problems: list[str]) -> list[str | None]:
    """The lines of ``tasks.jsonl`` as text; a line that is not UTF-8 is reported and is None."""
    data = _bom(data, name, problems)
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        pass
    lines: list[str | None] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            problems.append(_not_utf8(raw, err, f"{name}:{lineno}"))
            lines.append(None)
    return lines


def _parse_task(line: str, where: str, problems: list[str]) -> Any:
    """One task line's JSON value, or None with the problem appended."""
    if line.count("{") + line.count("[") > MAX_DEPTH:  # cheap test first: only such a line can nest too deep
        found = _structure_problems(line.encode("utf-8"))
        if found:
            problems += [f"{where}: {_structure_message(m, _column(line, off))}" for off, m in found]
            return None
    try:
        return _TASK_DECODER.decode(line)
    except json.JSONDecodeError as err:
        problems.append(f"{where}: invalid JSON: {err.msg} (column {err.colno})")
    except _NumberTooLong as err:
        found = _structure_problems(line.encode("utf-8"))
        problems += [f"{where}: {_structure_message(m, _column(line, off))}" for off, m in found] or [
            f"{where}: {err} (expected at most {MAX_NUMBER_CHARS} characters per number)"]
    except RecursionError:  # not reached after the depth test; kept as the last guard
        problems.append(f"{where}: nesting too deep (expected at most {MAX_DEPTH} nested objects and arrays)")
    return None


def _column(line: str, byte_offset: int) -> int:
    """1-based character column of ``byte_offset`` in ``line``'s UTF-8 bytes."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1


def _read_tasks(
    path: Path, declared: set[str], acquirable: set[str], problems: list[str], dropped: Counter
) -> list[Task]:
    name = f"{path.parent.name}/{TASKS}"
    data = _read_file(path, name, "one JSON task object per line", problems)
    if data is None:
        return []
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    check_names = bool(declared)
    n_lines_before = len(problems)
    for lineno, line in enumerate(_task_lines(data, name, problems), start=1):
        if line is None or not line.strip():
            continue
        where = f"{name}:{lineno}"
        raw = _parse_task(line, where, problems)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            problems.append(f"{where}: expected a JSON object, got {_json_type(raw)}")
            continue
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
            for field_name, names in (
                ("required", required),
                ("candidates", candidates or []),
                *((f"alternatives[{k}]", alt) for k, alt in enumerate(alternatives)),
            ):
                if declared.issuperset(names):  # the usual case, tested in C; the loop only names the unknown
                    continue
                for tool in names:
                    if tool not in declared:
                        problems.append(f"{where}: {label}: unknown tool `{_name(tool)}` in `{field_name}` "
                                        "(not in catalog)")
            if candidates is not None:
                offered = set(candidates)
                for tool in () if offered.issuperset(required) else required:
                    if tool in declared and tool not in offered:
                        problems.append(f"{where}: {label}: required tool `{_name(tool)}` is not in `candidates`")
        if len(problems) > n_before:
            continue
        kept = tuple(t for t in required if t in acquirable)
        if len(kept) < len(required):
            dropped.update(t for t in required if t not in acquirable)
        tasks.append(
            Task(
                id=tid,
                text=text,
                required=kept,
                candidates=None if candidates is None else tuple(candidates),
                alternatives=tuple(tuple(t for t in alt if t in acquirable) for alt in alternatives),
                split=split,
                meta=meta,
                group=group,
            )
        )
    if not seen and len(problems) == n_lines_before:
        problems.append(f"{name}:1: no tasks (expected one JSON task object per line)")
    return tasks


def read_domain(
    folder: str | os.PathLike,
    acquirable_kinds: Iterable[str] = DEFAULT_ACQUIRABLE_KINDS,
    never_acquirable: Iterable[str] = (),
) -> Domain:
    """Read and validate a domain folder.

    Parameters
    ----------
    folder : path
        Folder holding ``catalog.json`` and ``tasks.jsonl``.
    acquirable_kinds : iterable of str
        Tool kinds that are acquirable (default ``read`` and ``generic``).
    never_acquirable : iterable of str
        Tool names never acquirable whatever their kind.

    Returns
    -------
    Domain
        With ``dropped_required`` counting required names that were not acquirable.

    Raises
    ------
    DomainFormatError
        Listing every problem as ``file:line: what is wrong (what is expected)``; the
        input limits (:data:`MAX_DEPTH`, :data:`MAX_NUMBER_CHARS`, :data:`MAX_FILE_BYTES`)
        are problems too. Reading is linear in the size of the files.
    """
    folder = Path(folder)
    acquirable_kinds = tuple(acquirable_kinds)
    never_acquirable = tuple(never_acquirable)
    problems: list[str] = []
    bad_kinds = [k for k in acquirable_kinds if k not in KINDS]
    if bad_kinds:
        raise ValueError(f"acquirable_kinds: unknown kind(s) {bad_kinds}, expected a subset of {list(KINDS)}")
    try:
        is_dir = stat.S_ISDIR(os.stat(folder).st_mode)
    except OSError as err:
        reason = "no such folder" if isinstance(err, FileNotFoundError) else f"cannot read: {err.strerror}"
        raise DomainFormatError([f"{folder}: not a folder, {reason} (expected a folder with {CATALOG} and {TASKS})"])
    if not is_dir:
        raise DomainFormatError([f"{folder}: not a folder (expected a folder with {CATALOG} and {TASKS})"])
    dname, source, tools, declared = _read_catalog(folder / CATALOG, problems)
    for name in never_acquirable:
        if declared and name not in declared:
            problems.append(f"never_acquirable: unknown tool `{_name(name)}` (not in catalog)")
    acquirable = {t.name for t in tools if t.kind in acquirable_kinds and t.name not in never_acquirable}
    dropped: Counter = Counter()
    tasks = _read_tasks(folder / TASKS, declared, acquirable, problems, dropped)
    if problems:
        raise DomainFormatError(problems)
    domain = Domain(
        name=dname,
        source=source,
        tools=tools,
        tasks=tasks,
        acquirable_kinds=acquirable_kinds,
        never_acquirable=never_acquirable,
        dropped_required=dict(sorted(dropped.items())),
    )
    return domain


def check_domain_name(name: Any) -> str:
    """``name`` if it is a plain name, safe as one folder under the data folder; else ValueError.

    A plain name is letters, digits, ``_`` and ``-``, starting with a letter or digit:
    never empty, ``.``, ``..``, a path (``a/b``, ``../x``) or a hidden name.
    """
    if not isinstance(name, str) or not DOMAIN_NAME.fullmatch(name):
        raise ValueError(f"domain.name: expected a plain name (letters, digits, `_`, `-`), got {name!r}")
    return name


def _remove(path: Path) -> None:
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _lock(path: Path, block: bool) -> int | None:
    """An open descriptor of folder ``path`` holding an exclusive lock on it; None if a live writer holds it.

    Where locks are not available (no ``fcntl``, a file system without them) the
    descriptor is returned unlocked.
    """
    fd = os.open(path, os.O_RDONLY)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError:
            pass
    return fd


def _target(folder: str | os.PathLike) -> tuple[Path, str]:
    """``folder`` as a Path and its checked name; the folder must be directly inside its parent."""
    folder = Path(folder)
    name = check_domain_name(folder.name)
    if Path(os.path.abspath(folder)).parent != Path(os.path.abspath(folder.parent)):
        raise ValueError(f"{folder}: a domain folder must be directly inside {folder.parent}")
    return folder, name


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove what earlier writes of ``folder`` left beside it when they were killed; return what was removed.

    They are ``.<name>.<random>`` (the writer's temporary folder) and ``.<name>.old-<pid>``
    (the previous folder, swapped out). Only hidden folders of the parent with exactly
    that prefix are touched (a plain name has no ``.``, so no other domain's folders
    have it), and a temporary folder a running writer holds locked is kept.
    """
    folder, name = _target(folder)
    parent, prefix = folder.parent, f".{name}."
    if not parent.is_dir():
        return []
    removed = []
    for entry in sorted(parent.iterdir()):
        if not entry.name.startswith(prefix) or not entry.is_dir():
            continue
        if entry.name.startswith(f"{prefix}old-") or entry.is_symlink():
            _remove(entry)
            removed.append(entry)
            continue
        try:
            fd = _lock(entry, block=False)
        except OSError:  # gone meanwhile
            continue
        if fd is not None:
            try:
                shutil.rmtree(entry, ignore_errors=True)
            finally:
                os.close(fd)
            removed.append(entry)
    return removed


def _new_temporary(parent: Path, name: str) -> tuple[Path, int]:
    """A new ``.<name>.<random>`` folder in ``parent`` and a descriptor locking it."""
    for _ in range(10):
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
        fd = _lock(tmp, block=True)
        try:  # another writer may have taken it for stale between mkdtemp and the lock
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return tmp, fd
        except FileNotFoundError:
            pass
        os.close(fd)
    raise OSError(f"could not keep a temporary folder for {name} in {parent}")


def write_domain(
    domain: Domain, folder: str | os.PathLike, extra_files: dict[str, Any] | None = None, validate: bool = True
) -> Path:
    """Write ``domain`` to ``folder`` atomically (temporary sibling, then swap).

    Parameters
    ----------
    domain : Domain
    folder : path
        Target folder; replaced whole if it exists. Its name must be a plain name
        (:func:`check_domain_name`), checked before anything is written or removed.
    extra_files : dict of str to (str or callable), optional
        More text files to write beside the two data files (e.g. ``report.md``). A callable
        is called with the sha256 (hex) of each data file as written (``{"catalog.json": ...,
        "tasks.jsonl": ...}``) and returns the text (a manifest that hashes them).
    validate : bool
        Read the written files back through the validator before swapping them in,
        so a converter bug raises here and leaves the old folder untouched.

    Returns
    -------
    Path
        The folder written.

    Notes
    -----
    The temporary folder is ``.<name>.<random>`` beside ``folder`` and the replaced
    folder is moved to ``.<name>.old-<pid>`` for the swap. Those a killed earlier
    write left behind are removed first (:func:`remove_stale_temporaries`).
    """
    folder, name = _target(folder)
    parent = folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)
    tmp, lock = _new_temporary(parent, name)
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        with (tmp / CATALOG).open("w", encoding="utf-8") as fh:
            json.dump(domain.catalog_json(), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        with (tmp / TASKS).open("w", encoding="utf-8") as fh:
            for task in domain.tasks:
                fh.write(json.dumps(task.to_json(), ensure_ascii=False, sort_keys=False) + "\n")
        hashes = {f: hashlib.sha256((tmp / f).read_bytes()).hexdigest() for f in (CATALOG, TASKS)}
        for fname, text in (extra_files or {}).items():
            (tmp / fname).write_text(text(hashes) if callable(text) else text, encoding="utf-8")
        if validate:
            read_domain(tmp, domain.acquirable_kinds, domain.never_acquirable)
        old = None
        if folder.exists() or folder.is_symlink():
            old = parent / f".{name}.old-{os.getpid()}"
            _remove(old)
            os.replace(folder, old)
        try:
            os.replace(tmp, folder)
        except BaseException:
            if old is not None and not folder.exists():
                os.replace(old, folder)  # put the previous folder back
            raise
        if old is not None:
            _remove(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(lock)
    return folder
