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

from camdf.common.jsonguard import MAX_DEPTH, check_depth as _check_depth, line_col as _line_col

_LONG_INT = re.compile(r"(?<![\w.\"])-?\d{%d,}" % (sys.get_int_max_str_digits() + 1))


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
