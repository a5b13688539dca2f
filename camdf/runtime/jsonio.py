"""Reading one JSON document from an untrusted source (the CLI's request, a served model's body).

Everything wrong is a ValueError naming the place (``<where>: line L column C: ...``):
bytes that are not UTF-8, nesting deeper than :data:`MAX_DEPTH`, an integer beyond
Python's digit limit, or invalid JSON. Nothing here recurses, so no input can exhaust
the stack.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

#: Deepest nesting of arrays and objects accepted (tool schemas nest a handful of levels).
MAX_DEPTH = 64
_BRACKETS = re.compile(rb'[\[\]{}"\\]')
_LONG_INT = re.compile(r"(?<![\w.\"])-?\d{%d,}" % (sys.get_int_max_str_digits() + 1))


def _line_col(text: bytes | str, pos: int) -> tuple[int, int]:
    newline = b"\n" if isinstance(text, bytes) else "\n"
    line = text.count(newline, 0, pos) + 1
    return line, pos - (text.rfind(newline, 0, pos) + 1) + 1


def _check_depth(data: bytes, where: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH (brackets inside strings do not count)."""
    depth, in_string, escaped = 0, False, False
    for m in _BRACKETS.finditer(data):
        c = m.group()
        if in_string:
            if escaped:
                escaped = False
            elif c == b"\\":
                # an escape consumes the next character: skip it when it is one the pattern matches
                escaped = data[m.end():m.end() + 1] in (b'"', b"\\", b"[", b"]", b"{", b"}")
            elif c == b'"':
                in_string = False
            continue
        if c == b'"':
            in_string = True
        elif c in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                line, col = _line_col(data, m.start())
                raise ValueError(f"{where}: line {line} column {col}: nested deeper than {MAX_DEPTH} levels")
        elif c in (b"]", b"}"):
            depth -= 1


def parse_json(data: bytes, where: str) -> Any:
    """The JSON value of ``data`` (UTF-8 bytes); raises ValueError naming ``where`` and the line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line, col = _line_col(data, err.start)
        raise ValueError(f"{where}: line {line} column {col}: not UTF-8 (byte 0x{data[err.start]:02x})") from None
    _check_depth(data, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: line {err.lineno} column {err.colno}: invalid JSON: {err.msg}") from None
    except ValueError:  # an integer literal longer than the interpreter's digit limit
        m = _LONG_INT.search(text)
        line, col = _line_col(text, m.start()) if m else (1, 1)
        raise ValueError(f"{where}: line {line} column {col}: an integer of more than "
                         f"{sys.get_int_max_str_digits()} digits") from None
    except RecursionError:  # not reached below MAX_DEPTH; kept so that no input escapes as a crash
        raise ValueError(f"{where}: nested too deeply") from None
