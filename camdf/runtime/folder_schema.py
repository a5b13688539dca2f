"""The fields of a model folder's JSON files, declared once: what each one is, checked before anything is built.

:data:`POLICY_FIELDS` describes ``policy.json`` (:func:`camdf.runtime.policy_file.policy_numbers`) and
:data:`LEAN_FIELDS` ``lean.json`` (:func:`camdf.runtime.lean.write_lean`): every field they write, its
kind (number, integer, string, boolean, list, object), its bounds and, for a string, its choices.
:func:`check_fields` walks a file's parsed numbers against that declaration and refuses the first field
that is missing, of another kind, out of its bounds or not declared, naming it (``costs.x``,
``membership.coef[3]``) and what is expected. The readers call it after the non-finite check
(:mod:`camdf.runtime.finite`) and before anything is built from the numbers; the hostile family of the
tests (``tests/integration/hostile/test_folder_fields_hostile.py``) is generated from these declarations.

``rule`` (the rule's own portable numbers, one layout per rule class) is declared as an object only; each
class's ``from_numbers`` checks its own numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

#: JSON kinds and the Python types json.loads gives them (a bool is no integer or number here).
JSON_TYPES = {"number": (int, float), "integer": (int,), "string": (str,), "boolean": (bool,), "list": (list,),
         "object": (dict,)}
#: Bounds no model-folder number goes beyond (coefficients, costs, lambda): a larger one is refused.
BIG = 1e9


@dataclass(frozen=True)
class Field:
    """One declared field.

    ``path`` is dotted from the file's top; ``[]`` stands for every item of a list and ``{}`` for every
    value of an object whose keys are names (costs by tool). ``low``/``high`` bound a number, or the length
    of a string or a list; ``choices`` (called, so registries are read when a file is) lists a string's
    values; ``nullable`` allows null; ``optional`` allows the field to be missing (a file written before it
    was added).
    """

    path: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: Callable[[], tuple[str, ...]] | None = None
    nullable: bool = False
    open_low: bool = False  # low itself is out of range (costs > 0)
    optional: bool = False

    def expected(self) -> str:
        """What a value of this field must be, in words."""
        what = {"number": "a number", "integer": "an integer", "string": "a string", "boolean": "true or false",
                "list": "a list", "object": "an object"}[self.kind]
        if self.choices is not None:
            what = f"one of {sorted(self.choices())}"
        elif self.low is not None and self.low == self.high and self.kind in ("number", "integer"):
            what += f" equal to {_g(self.low)} (no other is read)"
        elif self.low is not None or self.high is not None:
            left = "(" if self.open_low else "["
            size = " of length" if self.kind in ("string", "list") else ""
            what += f"{size} in {left}{_g(self.low)}, {_g(self.high)}]"
        return what + (" or null" if self.nullable else "")


def _g(x: float | None) -> str:
    return "-inf" if x is None else f"{x:g}"


def _methods() -> tuple[str, ...]:
    from camdf.policies.registry import CARDS

    return tuple(name for name, card in CARDS.items() if card.shippable)


def _kinds() -> tuple[str, ...]:
    from camdf.core.payoff import PAYOFF_KINDS

    return tuple(PAYOFF_KINDS)


def _cost_units() -> tuple[str, ...]:
    from camdf.costs.units import TOKENS

    return (TOKENS,)


def _dials() -> tuple[str, ...]:
    from camdf.policies.registry import dial_specs

    return tuple(dial_specs())


def _range_fields() -> list[Field]:
    """``fit_range`` (:func:`camdf.runtime.fit_range.fit_range`): ``[low, high]`` of each fitted quantity."""
    out = [Field("fit_range", "object", optional=True)]
    for name in ("n", "cost", "mean_cost", "score_span", "lam"):
        out += [Field(f"fit_range.{name}", "list", 2, 2), Field(f"fit_range.{name}[]", "number", -BIG, BIG)]
    return out


_SHARED = [
    Field("vocab", "list", 0, 1_000_000),  # empty: a portable policy reads no tool identity
    Field("vocab[]", "string", 1, 1000),
    Field("costs", "object", 0, 1_000_000),
    Field("costs{}", "number", 0, BIG, open_low=True),
    Field("rule", "object"),
    *_range_fields(),
]

#: ``policy.json``: :func:`camdf.runtime.policy_file.policy_numbers`.
POLICY_FIELDS = [
    Field("format", "integer", 1, 1),
    Field("params", "object"),
    Field("params.method", "string", choices=_methods),
    Field("params.kind", "string", choices=_kinds),
    Field("params.lam", "number", 0, BIG),
    Field("params.lam_grid", "list", 1, 10_000, nullable=True),
    Field("params.lam_grid[]", "number", 0, BIG),
    Field("params.random_state", "integer", 0, 2**32 - 1, nullable=True),
    Field("params.n_jobs", "integer", -1, 4096),
    Field("params.dials", "object", 0, 100, nullable=True),
    Field("params.top_n", "integer", 1, 1_000_000, nullable=True, optional=True),
    Field("params.portable", "boolean", optional=True),
    Field("params.fit_depth", "integer", 1, 2**31 - 1, nullable=True, optional=True),
    *_SHARED,
    Field("membership", "object"),
    Field("membership.coef", "list", 1, 1_000_000),
    Field("membership.coef[]", "number", -BIG, BIG),
    Field("membership.intercept", "number", -BIG, BIG),
    Field("membership.base_rate", "number", 0, 1),
    Field("membership.C", "number", 0, BIG, open_low=True),
    Field("membership.n_vocab", "integer", 0, 1_000_000),
]

#: ``lean.json``: :func:`camdf.runtime.lean.write_lean`.
LEAN_FIELDS = [
    Field("format", "integer", 5, 5),
    Field("method", "string", choices=_methods),
    Field("kind", "string", choices=_kinds),
    Field("lam", "number", 0, BIG),
    Field("dials", "list", 0, 100),
    Field("dials[]", "string", choices=_dials),
    Field("top_n", "integer", 1, 1_000_000, nullable=True, optional=True),
    *_SHARED,
    Field("portable", "boolean"),
    Field("cost_unit", "string", choices=_cost_units, nullable=True),
    *[f for f in POLICY_FIELDS if f.path.split(".")[0] == "membership"],
    Field("policy_sha256", "string", 64, 64),
    Field("sha256", "string", 64, 64),
]


def _children(fields: list[Field], parent: str) -> set[str]:
    """The declared keys directly under ``parent`` (``""``: the top)."""
    keys = set()
    for f in fields:
        head, _, last = f.path.rpartition(".")
        if head == parent and not last.endswith(("[]", "{}")):
            keys.add(last)
    return keys


def _check_value(f: Field, value: Any, where: str, fail: Callable[[str, str], None]) -> bool:
    """Whether ``value`` (at ``where``) is to be walked further; ``fail(where, expected)`` when it is wrong."""
    if value is None:
        if not f.nullable:
            fail(where, f.expected())
        return False
    if not isinstance(value, JSON_TYPES[f.kind]) or (isinstance(value, bool) and f.kind != "boolean"):
        fail(where, f.expected())
    if f.kind in ("number", "integer"):
        if isinstance(value, float) and not math.isfinite(value):
            fail(where, f.expected())
        below = f.low is not None and (value <= f.low if f.open_low else value < f.low)
        if below or (f.high is not None and value > f.high):
            fail(where, f.expected())
    elif f.kind in ("string", "list", "object"):
        if (f.low is not None and len(value) < f.low) or (f.high is not None and len(value) > f.high):
            fail(where, f.expected())
        if f.choices is not None and value not in f.choices():
            fail(where, f.expected())
    return f.kind in ("list", "object")


def check_fields(numbers: Any, fields: list[Field], file: str) -> None:
    """Refuse (ValueError ``<file>: <field>: expected ..., got ...``) the first field of ``numbers`` that is
    missing, of another kind, out of bounds, or not declared in ``fields``."""
    def fail(where: str, expected: str) -> None:
        raise ValueError(f"{file}: {where}: expected {expected}, got {repr(_at(numbers, where))[:80]}")

    if not isinstance(numbers, dict):
        raise ValueError(f"{file}: expected an object of fields, got {type(numbers).__name__}")
    by_path = {f.path: f for f in fields}

    def walk(node: Any, pattern: str, where: str) -> None:
        f = by_path[pattern]
        if not _check_value(f, node, where or "the file", fail) or pattern == "rule":
            return
        if f.kind == "list":
            item = by_path.get(f"{pattern}[]")
            if item is not None:
                for i, value in enumerate(node):
                    walk(value, item.path, f"{where}[{i}]")
            return
        if f"{pattern}{{}}" in by_path:  # a map: names of the caller's choosing
            for key, value in node.items():
                if not key:
                    raise ValueError(f"{file}: {where}: expected non-empty names, got an empty one")
                walk(value, f"{pattern}{{}}", f"{where}.{key}")
            return
        if pattern == "params.dials":  # each dial's value is checked by its own spec when the policy decides
            for key in node:
                if key not in _dials():
                    raise ValueError(f"{file}: {where}.{key}: no such dial (expected some of {sorted(_dials())})")
            return
        _walk_keys(node, pattern, where)

    def _walk_keys(node: dict, pattern: str, where: str) -> None:
        declared = _children(fields, pattern)
        for key in node:
            if key not in declared:
                raise ValueError(f"{file}: {where + '.' if where else ''}{key}: no such field "
                                 f"(expected {sorted(declared)})")
        for key in sorted(declared):
            path, at = (f"{pattern}.{key}" if pattern else key), (f"{where}.{key}" if where else key)
            if key not in node:
                if by_path[path].optional:
                    continue
                raise ValueError(f"{file}: {at}: missing (expected {by_path[path].expected()})")
            walk(node[key], path, at)

    _walk_keys(numbers, "", "")


def _at(numbers: Any, where: str) -> Any:
    """The value at a concrete dotted path (``costs.x``, ``vocab[0]``), or None."""
    import re

    node = numbers
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", where):
        try:
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node
