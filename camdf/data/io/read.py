"""Read a domain folder (``catalog.json`` + ``tasks.jsonl``): files as bytes, bytes as JSON, JSON as a Domain.

Hostile bytes are refused here as problems (:mod:`camdf.data.io.validate` checks the parsed contents):
a file that is missing, unreadable, a folder, a broken link or not a regular file; bytes that are not
UTF-8 or a byte-order mark; nesting deeper than :data:`MAX_DEPTH`; a number literal longer than
:data:`MAX_NUMBER_CHARS`; a file larger than :data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import bisect
import codecs
import json
import json.scanner
import os
import stat
from collections import Counter
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from camdf.common.jsonguard import MAX_DEPTH, MAX_NUMBER_CHARS
from camdf.common.waits import NotRegular, read_regular
from camdf.data.io.validate import (
    _SURROGATE_ESCAPE, _SURROGATE_EXPECTED, CATALOG, TASKS, DomainFormatError, _catalog_contents, _json_type,
    _lone_surrogate, _name, task_from_json,
)
from camdf.data.model import DEFAULT_ACQUIRABLE_KINDS, TOOL_KINDS, Domain, Task, Tool

# Limits of the task format (docs/task-format.md, "Limits"); MAX_DEPTH and MAX_NUMBER_CHARS are the
# untrusted-JSON guard's (camdf.common.jsonguard), shared with the runtime's request reader.
MAX_FILE_BYTES = 2**30  # size of catalog.json and of tasks.jsonl
NL = b"\n"


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


def read_regular_file(path: Path, name: str, expected: str, problems: list[str],
                      limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``path`` (a regular file of at most ``limit`` bytes: a pipe or a device is never waited on,
    :func:`camdf.common.waits.read_regular`), or None with the reason appended to ``problems`` as ``name:1: ...``."""
    try:
        return read_regular(path, limit, expected, name)
    except NotRegular as err:
        problems.append(str(err))
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
    data = read_regular_file(path, name, "a JSON object with a `tools` list", problems)
    if data is None:
        return "", "", [], set()
    found: list[str] = []  # a first pass without line numbers; a catalog with problems is read again with them
    out = _catalog_contents(_parse_catalog(data, name, found, lines=False), path, name, found)
    if not found:
        return out
    return _catalog_contents(_parse_catalog(data, name, problems), path, name, problems)


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
    data = read_regular_file(path, name, "one JSON task object per line", problems)
    if data is None:
        return []
    tasks: list[Task] = []
    seen: dict[str, int] = {}
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
        task = task_from_json(raw, line, where, lineno, seen, declared, acquirable, problems, dropped)
        if task is not None:
            tasks.append(task)
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
    bad_kinds = [k for k in acquirable_kinds if k not in TOOL_KINDS]
    if bad_kinds:
        raise ValueError(f"acquirable_kinds: unknown kind(s) {bad_kinds}, expected a subset of {list(TOOL_KINDS)}")
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
    domain = Domain(name=dname, source=source, tools=tools, tasks=tasks, acquirable_kinds=acquirable_kinds,
                    never_acquirable=never_acquirable, dropped_required=dict(sorted(dropped.items())))
    return domain
