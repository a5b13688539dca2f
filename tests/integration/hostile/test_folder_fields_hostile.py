"""A hostile family generated from the model folder's declared fields (camdf/runtime/folder_schema.py): for every
field of ``policy.json`` and of ``lean.json``, a value of the wrong type, a non-finite number and an out-of-range
value are each refused by ``camdf select`` in one line naming the file and the field, exit 2, nothing written.

The cases are not listed by hand: each comes from a :class:`~camdf.runtime.folder_schema.Field` (its kind and
bounds), applied to a folder the train stage's writers wrote (``policy.json`` alone for its fields, so that
the full policy is what is read; ``lean.json`` beside it for the lean's).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from camdf.runtime.folder_schema import LEAN_FIELDS, POLICY_FIELDS, Field

from .test_model_folder_hostile import _model, _select, risk  # noqa: F401  (risk: the module's fitted policy)

FILES = {"policy.json": POLICY_FIELDS, "lean.json": LEAN_FIELDS}
#: The rule's own numbers are one layout per rule class, checked by its from_numbers: only kind and finiteness here.
OPAQUE = ("rule",)


def _out_of_range(f: Field):
    """A value of the field's kind outside its bounds or choices (None: the field has none to leave)."""
    if f.kind in ("number", "integer"):
        if f.open_low:
            return f.low
        return f.high + max(1, abs(f.high)) if f.high is not None else f.low - 1
    if f.kind == "string":
        if f.choices is not None:
            return "os.system"
        return "" if f.low else "x" * (int(f.high) + 1)
    if f.kind == "list":
        return [] if f.low else ["x"] * (int(f.high) + 1)
    if f.kind == "object":
        if f.path in OPAQUE:
            return None
        declared_map = any(g.path == f"{f.path}{{}}" for g in FILES_FIELDS)
        return {"": 1.0} if declared_map else {"bogus_key": 1.0}
    return None


FILES_FIELDS = POLICY_FIELDS + LEAN_FIELDS
WRONG_TYPE = {"number": "abc", "integer": "abc", "string": 5, "list": 5, "object": 5, "boolean": "yes"}


def _cases() -> list:
    cases = []
    for file, fields in FILES.items():
        for f in fields:
            values = [("wrong-type", WRONG_TYPE[f.kind]), ("non-finite", float("nan")),
                      ("out-of-range", _out_of_range(f))]
            cases += [pytest.param(file, f.path, value, id=f"{file}:{f.path}:{what}")
                      for what, value in values if not (what == "out-of-range" and value is None)]
    return cases


CASES = _cases()


def _concrete(numbers: dict, pattern: str) -> str:
    """``pattern`` with ``[]`` as the first item and ``{}`` as the first key of the written numbers."""
    where, node = "", numbers
    for part in re.findall(r"[^.\[\]{}]+|\[\]|\{\}", pattern):
        if part == "[]" and node is None:  # a list this policy writes as null (lam_grid): given one item
            _set(numbers, where, [0.1])
            node = _at(numbers, where)
        if part == "[]":
            where, node = f"{where}[0]", node[0]
        elif part == "{}":
            key = next(iter(node))
            where, node = f"{where}.{key}", node[key]
        else:
            where, node = (f"{where}.{part}" if where else part), node[part]
    return where


def _at(numbers: dict, where: str):
    node = numbers
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", where):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def _set(numbers: dict, where: str, value) -> None:
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", where)
    node = numbers
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    last = parts[-1]
    node[int(last[1:-1]) if last.startswith("[") else last] = value


def test_every_declared_field_has_its_three_cases():
    """The family covers the declared fields (3 cases each, 2 for the opaque rule and the fixed-size ones)."""
    assert len(CASES) >= 2 * len(FILES_FIELDS) and len(CASES) > 90


@pytest.mark.parametrize("file,pattern,value", CASES)
def test_a_hostile_field_is_refused_in_one_line_naming_it(file, pattern, value, risk, tmp_path, capsys,  # noqa: F811
                                                         monkeypatch):
    folder = _model(tmp_path, risk)
    arts = folder / "artifacts"
    if file == "policy.json":
        (arts / "lean.json").unlink()  # the full policy is what is read
    path = arts / file
    numbers = json.loads(path.read_text())
    where = _concrete(numbers, pattern)
    _set(numbers, where, value)
    path.write_text(json.dumps(numbers))
    before = sorted(Path(tmp_path).rglob("*"))
    code, out, err = _select(folder, False, capsys, monkeypatch)
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"{path}: {where}" in lines[0], (where, err)
    assert sorted(Path(tmp_path).rglob("*")) == before
