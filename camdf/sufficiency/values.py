"""Values the agent can know: normalisation, extraction from text, flattening of tool outputs.

A *surface* is a value as the closure stores it: a string after the rules below,
case kept (so that a domain can tell an upper-case reservation id from an
ordinary word); a *key* is the surface case-folded, and two values are the same
knowledge when their keys are equal.

Normalisation rules (applied to every value: task text tokens, tool outputs,
gold arguments and strings to communicate):

1. Whitespace: leading and trailing whitespace is dropped and internal runs of
   whitespace become one space.
2. ``#`` prefix: a leading ``#`` is dropped, so ``#W2378156`` and ``W2378156``
   are the same order id (tau2's texts write both).
3. Case: keys are case-folded; ``Mastercard`` and ``mastercard`` are the same.
4. Numbers: a number written with a currency sign, a sign, thousands commas or a
   decimal point is rewritten in one canonical form, its magnitude without
   trailing zeros (``$1,093.50`` -> ``1093.5``, ``-17.99`` -> ``17.99``,
   ``60.0`` -> ``60``). The magnitude is kept because a price difference of
   -17.99 is communicated as "17.99". A plain run of digits is kept verbatim:
   it is an identifier or a code (zip codes keep their leading zeros).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Iterable, Iterator

_WS = re.compile(r"\s+")
_NUMBER = re.compile(r"^[-+]?\$?[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$|^[-+]?\$?[-+]?\.\d+$")
_PLAIN_DIGITS = re.compile(r"^\d+$")
# Tokens of free text: words that may carry ids' inner punctuation (emails, ids, dates).
_TOKEN = re.compile(r"[#$]?[\w][\w@.+\-/:']*")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])[-$]?\$?\d[\d,]*(?:\.\d+)?(?![\w])")
_TRAILING = ".,;:!?)'\"-/"


def canonical_number(text: str) -> str | None:
    """The canonical form of a number written as text (rule 4), or None if it is not one."""
    if not _NUMBER.match(text):
        return None
    if _PLAIN_DIGITS.match(text):
        return text
    try:
        value = abs(Decimal(text.replace("$", "").replace(",", "")))
    except InvalidOperation:
        return None
    out = format(value.normalize(), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def surface(value: Any) -> str:
    """A value's surface form (rules 1, 2 and 4; case kept)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return canonical_number(repr(value) if isinstance(value, float) else str(value)) or str(value)
    return _surface_text(str(value))


@lru_cache(maxsize=1 << 20)
def _surface_text(value: str) -> str:
    text = _WS.sub(" ", value).strip()
    if text.startswith("#"):
        text = text[1:].strip()
    number = canonical_number(text)
    return number if number is not None else text


def key(value: Any) -> str:
    """A value's key: its surface, case-folded (rule 3)."""
    return surface(value).casefold()


def is_number(s: str) -> bool:
    """Whether a surface is a canonical number (plain digits included)."""
    return canonical_number(s) == s


def text_surfaces(text: str) -> set[str]:
    """Surfaces of the tokens of a free text: words, ids, emails, dates and numbers."""
    out: set[str] = set()
    for raw in _TOKEN.findall(text):
        tok = raw.rstrip(_TRAILING)
        if tok:
            out.add(surface(tok))
    for raw in _NUMBER_IN_TEXT.findall(text):
        out.add(surface(raw))
    out.discard("")
    return out


def jsonable(obj: Any) -> Any:
    """A tool's return value as plain JSON (pydantic models dumped, JSON strings parsed)."""
    if hasattr(obj, "model_dump"):
        return jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, str):
        stripped = obj.strip()
        if stripped[:1] in "[{":
            try:
                return jsonable(json.loads(stripped))
            except ValueError:
                return obj
    return obj


def _records(items: Iterable[Any]) -> list[dict]:
    return [v for v in items if isinstance(v, dict)]


def flatten(obj: Any) -> Iterator[str]:
    """Every surface a tool output (as plain JSON, see :func:`jsonable`) makes known.

    Besides every string and number leaf and every dict key, a collection (a
    list, or a dict whose values are all records) makes known what an agent
    reads off it without a tool: its size, and, for each
    boolean field of its records, how many records have it true ("10 t-shirt
    options are available"); a record with ``first_name`` and ``last_name``
    makes known the full name ``First Last``.
    """
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                yield surface(k)
                stack.append(v)
            if isinstance(node.get("first_name"), str) and isinstance(node.get("last_name"), str):
                yield surface(f"{node['first_name']} {node['last_name']}")
            children = list(node.values())
            # A dict is a collection when it maps keys to records (variants, payment methods).
            if not children or len(_records(children)) < len(children):
                continue
        elif isinstance(node, list):
            stack.extend(node)
            children = node
        else:
            if node is None or isinstance(node, bool):
                continue
            s = surface(node)
            if s:
                yield s
            continue
        yield str(len(children))
        records = _records(children)
        flags = {k for r in records for k, v in r.items() if isinstance(v, bool)}
        for flag in sorted(flags):
            yield str(sum(1 for r in records if r.get(flag) is True))


def number_leaves(obj: Any) -> list[str]:
    """Canonical forms of the number leaves of a plain JSON value (prices, amounts, balances), repeats kept.

    Identifiers and codes are strings in the tool outputs, so number leaves are
    the amounts and counts; two payments of 621 are two leaves.
    """
    out, stack = [], [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            out.append(surface(node))
    return sorted(out)


def word_pattern(target_key: str) -> re.Pattern:
    """Regex finding a key as a whole word (or phrase) inside a case-folded text."""
    return re.compile(r"(?<![\w])" + re.escape(target_key) + r"(?![\w])")
