"""The limits on untrusted JSON and the depth check both readers of it apply (domain files and run-time requests).

Two places read JSON that nobody vouches for: the task-format reader
(:mod:`camdf.data.io`: ``catalog.json``, ``tasks.jsonl``) and the runtime's request
reader (:mod:`camdf.runtime.jsonio`: the CLI's request, a served model's body). They
share one set of limits, so a tool schema the data stage accepts is never refused when
a request carries it. :func:`check_depth` is the runtime's streaming check; the data
reader checks a whole file per line with numpy and reports every line, with the same
limit. Nothing here recurses, so no input can exhaust the stack.
"""

from __future__ import annotations

import re

#: Deepest nesting of arrays and objects accepted, the outer one included (tool schemas nest a handful of
#: levels). The task-format reader has always allowed 100, so it is the one limit: a lower one would refuse
#: domain folders that validate today, and a request wraps the same tool schemas in a level or two more.
MAX_DEPTH = 100
#: Characters of one number literal (sign, digits, point, exponent) in a domain file. Requests keep the
#: interpreter's own limit on integer digits (:func:`sys.get_int_max_str_digits`), refused with its count.
MAX_NUMBER_CHARS = 100

_BRACKETS = re.compile(rb'[\[\]{}"\\]')


def line_col(text: bytes | str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos`` in ``text`` (bytes or str)."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    line = text.count(newline, 0, pos) + 1
    return line, pos - (text.rfind(newline, 0, pos) + 1) + 1


def check_depth(data: bytes, where: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse nesting deeper than ``max_depth`` (brackets inside strings do not count).

    Parameters
    ----------
    data : bytes
        One JSON document.
    where : str
        What the document is, for the message (``request``, a file name).
    max_depth : int
        Deepest nesting accepted, the outer object or array included.

    Raises
    ------
    ValueError
        ``<where>: line L column C: nested deeper than <max_depth> levels`` at the first bracket too deep.
    """
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
            if depth > max_depth:
                line, col = line_col(data, m.start())
                raise ValueError(f"{where}: line {line} column {col}: nested deeper than {max_depth} levels")
        elif c in (b"]", b"}"):
            depth -= 1
