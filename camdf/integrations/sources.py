"""What every converter of a public catalog shares: reading its files, listing its problems, naming its tools.

A converter reads a folder of a public repository's files (committed unchanged under ``data/sources/<name>/``,
or a checkout given as a setting) and builds a :class:`~camdf.data.model.Domain`. Malformed input is refused
as a whole: each converter collects every problem as ``<file>: <row>: what is wrong`` and
:func:`raise_problems` raises them together, before anything is written. This module is not an integration
(the registry finds packages, not modules).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from camdf.data.io.read import read_regular_file

_NON_WORD = re.compile(r"[^a-z0-9]+")
#: Problems shown in one error (the rest counted).
SHOWN = 50
#: OpenAI's limit on a function name: every converter's tool names are at most this long.
MAX_NAME = 64


class SourceError(ValueError):
    """A source folder is missing or malformed: every problem, each naming its file and row."""


def slug(text: str) -> str:
    """``text`` lower-cased to ``[a-z0-9_]`` (runs of anything else one ``_``; ``x`` when nothing is left)."""
    out = _NON_WORD.sub("_", text.lower()).strip("_")
    return out or "x"


def unique_name(base: str, taken: set[str], limit: int = MAX_NAME, strip: bool = False) -> str:
    """``base``, or ``<base>_2``, ``<base>_3``, ... when it is taken: the first free one, added to ``taken``.

    Parameters
    ----------
    base : str
        The name wanted, already at most ``limit`` characters (the caller's cut: it is not cut here).
    taken : set of str
        The names given so far; the result is added to it.
    limit : int
        The longest name: the stem is cut so that ``<stem>_<k>`` fits.
    strip : bool
        Also strip trailing ``_`` from the cut stem (``a_b_`` + ``_2`` -> ``a_b_2``, not ``a_b__2``).
    """
    name, k = base, 2
    while name in taken:
        suffix = f"_{k}"
        stem = base[:limit - len(suffix)]
        name, k = (stem.rstrip("_") if strip else stem) + suffix, k + 1
    taken.add(name)
    return name


def short_name(name: str, key: str, limit: int = MAX_NAME) -> str:
    """``name``, or when longer than ``limit``: cut, plus ``_`` and the first 8 hex digits of ``sha1(key)``.

    ``key`` is the text that identifies the entry in its source (it may be ``name`` itself), so two long
    names sharing their first ``limit - 9`` characters stay apart.
    """
    if len(name) <= limit:
        return name
    return f"{name[:limit - 9].rstrip('_')}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def source_file(root: Path, rel: str | Path) -> Path:
    """``root / rel``, plain or gzip-compressed: the plain file when it exists, else ``<rel>.gz`` when that exists.

    When neither exists, the plain path, so that the caller's missing-file problem names it.
    """
    plain = root / rel
    gz = plain.with_name(plain.name + ".gz")
    return gz if not plain.exists() and gz.exists() else plain


def read_text(path: Path, expected: str, problems: list[str]) -> str | None:
    """The UTF-8 text of ``path`` (a regular file; ``*.gz`` decompressed), or None with the reason in ``problems``.

    ``expected`` says what the file should hold (``"a JSON list of queries"``), for the problem's text.
    """
    raw = read_regular_file(path, str(path), expected, problems)
    if raw is None:
        return None
    try:
        return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
    except (OSError, EOFError) as err:  # a truncated or corrupt gzip stream
        problems.append(f"{path}: cannot decompress ({err})")
    except UnicodeDecodeError as err:
        problems.append(f"{path}: cannot read ({err})")
    return None


def read_json(path: Path, expected: str, problems: list[str]) -> Any:
    """The JSON document in ``path`` (a regular file; ``*.gz`` decompressed), or None with the reason in ``problems``.

    ``expected`` says what the file should hold (``"a JSON list of queries"``), for the problem's text.
    """
    text = read_text(path, expected, problems)
    if text is None:
        return None
    try:
        return json.loads(text)
    except RecursionError:
        problems.append(f"{path}: not JSON (nested too deeply)")
    except json.JSONDecodeError as err:
        problems.append(f"{path}:{err.lineno}: not JSON ({err.msg})")
    return None


def read_jsonl(path: Path, expected: str, problems: list[str]) -> list[tuple[int, Any]] | None:
    """``(line number, JSON value)`` for every non-blank line of ``path`` (``*.gz`` decompressed), or None.

    A line that is not JSON is a problem (``<file>:<line>: not JSON``) and is left out; a file that cannot be
    read at all gives None with its reason in ``problems``.
    """
    text = read_text(path, expected, problems)
    if text is None:
        return None
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((i, json.loads(line)))
        except (json.JSONDecodeError, RecursionError) as err:
            problems.append(f"{path}:{i}: not JSON ({getattr(err, 'msg', 'nested too deeply')})")
    return rows


def components(members: list[list[str]]) -> list[str]:
    """For each row, the smallest key of its connected component (rows linked by sharing a key).

    The fold groups of a catalog: rows whose gold tools share a key (a tool, a category), transitively, are one
    group, so no fold split separates them.
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for keys in members:
        for k in keys[1:]:
            a, b = find(keys[0]), find(k)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(keys[0]) for keys in members]


def raise_problems(root: Path, problems: list[str], what: str, error: type[SourceError] = SourceError) -> None:
    """Raise ``error`` listing ``problems`` (in ``what``, e.g. ``"the MetaTool files"``); nothing when there are none.

    One problem is one line naming ``root``; more are listed under a count, the first :data:`SHOWN` of them.
    """
    if not problems:
        return
    if len(problems) == 1:
        raise error(f"{root}: {problems[0]}")
    more = f"\n  ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    raise error(f"{root}: {len(problems)} problem(s) in {what}:\n  " + "\n  ".join(problems[:SHOWN]) + more)
