"""Hostile input to ``camdf data validate``: every case is refused with exit 2, naming the place, no traceback.

Each case starts from one minimal valid folder (written in ``tmp_path`` by :func:`build`, checked to
validate with exit 0) and changes one thing. Most cases call the command line in-process
(:func:`camdf.cli.commands.main`, the same code the ``camdf`` script runs: its exit code, its stdout
and stderr); the ones flagged ``CLI`` run the real ``python -m camdf.cli`` subprocess. Every case asserts:

(a) exit code 2;
(b) a problem line on stderr that starts with the place (``mini/tasks.jsonl:3:``, ``mini/catalog.json:6:``,
    or the option / folder named) and names the field;
(c) no ``Traceback`` in stdout or stderr;
(d) the input folder unchanged (every entry's type, size, mtime, and a regular file's bytes).

The wording of type errors ("got <typename>") is not asserted: only the place and the field name.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from camdf.cli.commands import main

from .folders import NAME, TASKS, TOOLS, fifo, snapshot

ROOT = Path(__file__).resolve().parents[3]
CAT = f"{NAME}/catalog.json"
TSK = f"{NAME}/tasks.jsonl"

# -- the minimal valid folder --------------------------------------------------------------------------------
# catalog.json is written one tool per line, so tools[0], tools[1], tools[2] are on lines 5, 6 and 7; the
# catalog object itself starts on line 1. tasks.jsonl holds one task per line: t-1, t-2, t-3 on lines 1-3.

TOOL_LINE = {0: 5, 1: 6, 2: 7}


class Raw(str):
    """A value written into the JSON as this literal text (NaN, 1e400, a 5,000-digit integer)."""


def _dumps(value, raws: list[str]) -> str:
    def swap(v):
        if isinstance(v, Raw):
            raws.append(str(v))
            return f"__RAW{len(raws) - 1}__"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value), ensure_ascii=False)
    for i, raw in enumerate(raws):
        text = text.replace(f'"__RAW{i}__"', raw)
    return text


def catalog_text(tools=TOOLS, head=None) -> str:
    head = {"domain": NAME, "source": "hostile-input tests"} if head is None else head
    lines = ["{", *(f"  {json.dumps(k)}: {_dumps(v, [])}," for k, v in head.items()), '  "tools": [']
    lines += ["    " + _dumps(t, []) + ("," if i < len(tools) - 1 else "") for i, t in enumerate(tools)]
    return "\n".join([*lines, "  ]", "}"]) + "\n"


def tasks_text(tasks=TASKS) -> str:
    return "".join(_dumps(t, []) + "\n" for t in tasks)


def build(parent: Path, tools=TOOLS, tasks=TASKS) -> Path:
    """The minimal valid domain folder ``parent/mini`` (3 tools, 3 tasks)."""
    folder = parent / NAME
    folder.mkdir(parents=True)
    (folder / "catalog.json").write_text(catalog_text(tools), encoding="utf-8")
    (folder / "tasks.jsonl").write_text(tasks_text(tasks), encoding="utf-8")
    return folder


# -- running the validator -----------------------------------------------------------------------------------

def run_inprocess(args: list[str]) -> tuple[int, str, str]:
    """``camdf <args>`` in this process: (exit code, stdout, stderr); an escaping exception becomes its traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001  (a traceback is exactly what the test looks for)
            traceback.print_exc(file=err)
            rc = 1
    return rc, out.getvalue(), err.getvalue()


def run_cli(args: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, errors="backslashreplace")
    return proc.returncode, proc.stdout, proc.stderr


def test_the_base_folder_is_valid(tmp_path):
    folder = build(tmp_path)
    for run in (run_inprocess, run_cli):
        rc, out, err = run(["data", "validate", str(folder)])
        assert (rc, err) == (0, ""), err
        assert f"valid domain `{NAME}`: 3 tasks, 3 tools (2 acquirable)" in out


# -- mutations -----------------------------------------------------------------------------------------------

def _changed(rows: list[dict], i: int, changes: dict) -> list[dict]:
    """``rows`` with row ``i``'s fields changed (a value of ``DELETE`` removes the field)."""
    rows = [dict(r) for r in rows]
    for k, v in changes.items():
        if v is DELETE:
            rows[i].pop(k, None)
        else:
            rows[i][k] = v
    return rows


def tool(i: int, **changes) -> Callable[[Path], None]:
    """Tool ``i`` with fields changed (a value of ``DELETE`` removes the field)."""
    def mutate(folder: Path) -> None:
        (folder / "catalog.json").write_text(catalog_text(_changed(TOOLS, i, changes)), encoding="utf-8")
    return mutate


def task(i: int, **changes) -> Callable[[Path], None]:
    """Task ``i`` (0-based; on line ``i + 1``) with fields changed (``DELETE`` removes one)."""
    def mutate(folder: Path) -> None:
        (folder / "tasks.jsonl").write_text(tasks_text(_changed(TASKS, i, changes)), encoding="utf-8")
    return mutate


def head(**changes) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        h = {"domain": NAME, "source": "hostile-input tests", **changes}
        (folder / "catalog.json").write_text(catalog_text(TOOLS, {k: v for k, v in h.items() if v is not DELETE}),
                                             encoding="utf-8")
    return mutate


def write(fname: str, content: bytes | str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        (folder / fname).write_bytes(data)
    return mutate


def replace(fname: str, old: str, new: bytes) -> Callable[[Path], None]:
    """Replace the first ``old`` in the file with the bytes ``new`` (to put in a bad byte)."""
    def mutate(folder: Path) -> None:
        data = (folder / fname).read_bytes()
        assert old.encode() in data
        (folder / fname).write_bytes(data.replace(old.encode(), new, 1))
    return mutate


def remove(fname: str) -> Callable[[Path], None]:
    return lambda folder: (folder / fname).unlink()


def as_folder(fname: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / fname).unlink()
        (folder / fname).mkdir()
        (folder / fname / "inside.json").write_text("{}\n")
    return mutate


def dangling(fname: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / fname).unlink()
        os.symlink("gone.json", folder / fname)
    return mutate


def loop(fname: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / fname).unlink()
        os.symlink(fname, folder / fname)  # a link to itself
    return mutate


def deep(n: int) -> Raw:
    return Raw("[" * n + "]" * n)


def big_catalog_with_one_bad_byte(folder: Path) -> None:
    """A ~10 MB catalog (2,500 tools of 4 KB descriptions) whose tool on line 1,005 holds one 0xff byte."""
    tools = TOOLS + [{"name": f"pad_{i}", "description": "x" * 4000, "kind": "read"} for i in range(2500)]
    data = catalog_text(tools).encode("utf-8")
    assert len(data) > 10_000_000
    lines = data.split(b"\n")
    lines[1004] = lines[1004].replace(b"xxxx", b"x\xffxx", 1)
    (folder / "catalog.json").write_bytes(b"\n".join(lines))


def many_problems(folder: Path) -> None:
    """899 lines each with one problem: a task requiring a tool the catalog does not have."""
    lines = [json.dumps({"id": f"p-{i}", "text": "t", "required": ["nope"]}) for i in range(899)]
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


DELETE = object()


@dataclass
class Case:
    id: str
    mutate: Callable[[Path], None]
    where: str  # a problem line starts with this (after the header)
    names: tuple[str, ...] = ()  # each must appear in that line (the field, the value class)
    cli: bool = False  # run through the real subprocess
    args: tuple[str, ...] = ()  # extra command-line options
    target: str | None = None  # folder to validate instead of mini/ (relative to tmp_path)
    check: Callable[[str], None] | None = None  # more assertions on stderr
    marks: tuple = field(default_factory=tuple)


def _short(err: str) -> None:
    assert len(err) < 2000, len(err)


def _899(err: str) -> None:
    lines = err.splitlines()
    assert lines[0].endswith("refused, 899 problem(s):")
    assert len(lines) == 1 + 200 + 1, len(lines)
    assert all(line.startswith(f"{TSK}:") for line in lines[1:201])
    assert lines[201] == "... and 699 more problem(s) not listed (fix the ones above first)"


CASES = [
    # files: missing, empty, not a regular file, not UTF-8
    Case("catalog-missing", remove("catalog.json"), f"{CAT}:1:", ("missing file",), cli=True),
    Case("tasks-missing", remove("tasks.jsonl"), f"{TSK}:1:", ("missing file",)),
    Case("catalog-folder", as_folder("catalog.json"), f"{CAT}:1:", ("folder",), cli=True),
    Case("tasks-folder", as_folder("tasks.jsonl"), f"{TSK}:1:", ("folder",)),
    Case("catalog-dangling-symlink", dangling("catalog.json"), f"{CAT}:1:", ("broken symbolic link", "gone.json"),
         cli=True),
    Case("tasks-dangling-symlink", dangling("tasks.jsonl"), f"{TSK}:1:", ("broken symbolic link",)),
    Case("catalog-symlink-loop", loop("catalog.json"), f"{CAT}:1:", ("cannot read",)),
    Case("catalog-fifo", fifo("catalog.json"), f"{CAT}:1:", ("not a regular file",), cli=True),
    Case("tasks-fifo", fifo("tasks.jsonl"), f"{TSK}:1:", ("not a regular file",)),
    Case("catalog-empty", write("catalog.json", b""), f"{CAT}:1:", ("empty file",), cli=True),
    Case("catalog-whitespace", write("catalog.json", b"  \n\n \t\n"), f"{CAT}:1:", ("empty file",)),
    Case("tasks-empty", write("tasks.jsonl", b""), f"{TSK}:1:", ("no tasks",), cli=True),
    Case("tasks-blank-lines", write("tasks.jsonl", b"\n \n\n"), f"{TSK}:1:", ("no tasks",)),
    Case("catalog-bom", lambda f: (f / "catalog.json").write_bytes(b"\xef\xbb\xbf" + catalog_text().encode()),
         f"{CAT}:1:", ("byte-order mark",), cli=True),
    Case("tasks-bom", lambda f: (f / "tasks.jsonl").write_bytes(b"\xef\xbb\xbf" + tasks_text().encode()),
         f"{TSK}:1:", ("byte-order mark",)),
    Case("catalog-non-utf8", replace("catalog.json", "help center", b"help \xff center"), f"{CAT}:6:",
         ("not UTF-8", "0xff"), cli=True),
    Case("tasks-non-utf8", replace("tasks.jsonl", "reset", b"re\xc3\x28set"), f"{TSK}:2:", ("not UTF-8", "0xc3")),
    Case("catalog-lone-surrogate", tool(1, description=Raw('"bad \\ud800 text"')), f"{CAT}:6:",
         ("`tools[1].description`", "lone surrogate"), cli=True),
    Case("task-lone-surrogate", task(1, text=Raw('"bad \\udfff"')), f"{TSK}:2:", ("`text`", "lone surrogate")),
    Case("task-lone-surrogate-meta-key", task(2, meta=Raw('{"\\ud800": 1}')), f"{TSK}:3:", ("`meta.", "surrogate")),
    Case("catalog-big-with-one-bad-byte", big_catalog_with_one_bad_byte, f"{CAT}:1005:", ("not UTF-8", "0xff"),
         cli=True, check=_short),
    # JSON syntax and limits
    Case("catalog-invalid-json", replace("catalog.json", '"kind": "generic", "cost": 2.5}',
                                         b'"kind": "generic", "cost": 2.5,}'),
         f"{CAT}:6:", ("invalid JSON",)),
    Case("tasks-invalid-json", replace("tasks.jsonl", '"split": "test"', b'"split": test'), f"{TSK}:2:",
         ("invalid JSON",), cli=True),
    Case("tasks-truncated-line", replace("tasks.jsonl", '"meta": {"note": "x"}}', b'"meta": {"note": "x"'),
         f"{TSK}:3:", ("invalid JSON",)),
    Case("cost-401-digits", tool(0, cost=Raw("9" * 401)), f"{CAT}:5:", ("number of 401 characters",), cli=True),
    Case("catalog-5000-digit-integer", tool(1, parameters=Raw('{"default": ' + "1" * 5000 + "}")), f"{CAT}:6:",
         ("number of 5000 characters",)),
    Case("task-5000-digit-integer-meta", task(0, meta=Raw('{"n": ' + "7" * 5000 + "}")), f"{TSK}:1:",
         ("number of 5000 characters",), cli=True),
    Case("task-5000-digit-integer-id", task(2, id=Raw("-" + "3" * 5000)), f"{TSK}:3:", ("number of 5001 characters",)),
    Case("task-meta-100k-deep", task(0, meta=Raw('{"deep": ' + "[" * 100_000 + "]" * 100_000 + "}")), f"{TSK}:1:",
         ("nesting deeper than 100",), cli=True),
    Case("tool-parameters-5k-deep", tool(0, parameters=Raw('{"p": ' + "{\"a\": " * 5000 + "1" + "}" * 5000 + "}")),
         f"{CAT}:5:", ("nesting deeper than 100",), cli=True),
    Case("catalog-tools-5k-deep-arrays", tool(2, parameters=Raw('{"p": ' + deep(5000) + "}")), f"{CAT}:7:",
         ("nesting deeper than 100",)),
    # catalog structure
    Case("catalog-not-object", write("catalog.json", "[1, 2]\n"), f"{CAT}:1:", ("`tools`",)),
    Case("catalog-without-tools", write("catalog.json", '{"domain": "mini"}\n'),
         f"{CAT}:1:", ("`tools`",)),
    Case("tools-not-list", write("catalog.json", '{\n  "tools": {"name": "lookup"}\n}\n'), f"{CAT}:1:", ("`tools`",)),
    Case("tools-empty", lambda f: (f / "catalog.json").write_text(catalog_text([])), f"{CAT}:1:",
         ("empty catalog", "`tools`")),
    Case("tool-not-object", lambda f: (f / "catalog.json").write_text(catalog_text([TOOLS[0], "search", TOOLS[2]])),
         f"{CAT}:1:", ("tools[1]",)),
    Case("domain-not-string", head(domain=7), f"{CAT}:1:", ("`domain`",)),
    Case("source-not-string", head(source=["x"]), f"{CAT}:1:", ("`source`",)),
    Case("catalog-unknown-field", head(version=2), f"{CAT}:1:", ("unknown field `version`",)),
    # tool fields
    Case("tool-name-not-string", tool(1, name=42), f"{CAT}:6:", ("tools[1]", "`name`"), cli=True),
    Case("tool-name-missing", tool(1, name=DELETE), f"{CAT}:6:", ("tools[1]", "`name`")),
    Case("tool-name-empty", tool(2, name=""), f"{CAT}:7:", ("tools[2]", "`name`")),
    Case("tool-name-blank", tool(2, name="   "), f"{CAT}:7:", ("tools[2]", "`name`")),
    Case("tool-name-control-char", tool(0, name="look\nup"), f"{CAT}:5:", ("tools[0]", "`name`", "control")),
    Case("tool-name-duplicate", tool(2, name="lookup"), f"{CAT}:7:", ("duplicate tool name `lookup`", "line 5"),
         cli=True),
    Case("tool-description-not-string", tool(1, description=["a"]), f"{CAT}:6:", ("`search`", "`description`")),
    Case("tool-parameters-not-object", tool(0, parameters=["email"]), f"{CAT}:5:", ("`lookup`", "`parameters`")),
    Case("tool-kind-bad", tool(1, kind="mutating"), f"{CAT}:6:", ("`search`", "`kind`", "read, write, generic"),
         cli=True),
    Case("tool-kind-missing", tool(1, kind=DELETE), f"{CAT}:6:", ("`search`", "`kind`")),
    Case("tool-kind-not-string", tool(1, kind=1), f"{CAT}:6:", ("`search`", "`kind`")),
    Case("tool-kind-wrong-case", tool(0, kind="READ"), f"{CAT}:5:", ("`lookup`", "`kind`")),
    Case("tool-unknown-field", tool(2, price=3), f"{CAT}:7:", ("unknown field `price`",)),
    Case("cost-string", tool(0, cost="1"), f"{CAT}:5:", ("`lookup`", "`cost`"), cli=True),
    Case("cost-nan", tool(0, cost=Raw("NaN")), f"{CAT}:5:", ("`lookup`", "`cost`")),
    Case("cost-infinity", tool(0, cost=Raw("Infinity")), f"{CAT}:5:", ("`lookup`", "`cost`")),
    Case("cost-minus-infinity", tool(0, cost=Raw("-Infinity")), f"{CAT}:5:", ("`lookup`", "`cost`")),
    Case("cost-1e400", tool(1, cost=Raw("1e400")), f"{CAT}:6:", ("`search`", "`cost`")),
    Case("cost-object", tool(1, cost={"amount": 1}), f"{CAT}:6:", ("`search`", "`cost`")),
    Case("cost-negative", tool(1, cost=-2.5), f"{CAT}:6:", ("`search`", "`cost`")),
    Case("cost-zero", tool(1, cost=0), f"{CAT}:6:", ("`search`", "`cost`")),
    Case("cost-minus-zero", tool(1, cost=Raw("-0.0")), f"{CAT}:6:", ("`search`", "`cost`")),
    Case("cost-true", tool(0, cost=True), f"{CAT}:5:", ("`lookup`", "`cost`")),
    Case("cost-list", tool(0, cost=[1.0]), f"{CAT}:5:", ("`lookup`", "`cost`")),
    # task fields
    Case("task-not-object", write("tasks.jsonl", tasks_text(TASKS[:1]) + "[1, 2]\n"), f"{TSK}:2:",
         ("JSON object",)),
    Case("task-id-missing", task(1, id=DELETE), f"{TSK}:2:", ("`id`",)),
    Case("task-id-not-string", task(1, id=2), f"{TSK}:2:", ("`id`",)),
    Case("task-id-empty", task(1, id=""), f"{TSK}:2:", ("`id`",)),
    Case("task-id-control-char", task(1, id="t\x00-2"), f"{TSK}:2:", ("`id`", "control")),
    Case("task-id-duplicate", task(2, id="t-1"), f"{TSK}:3:", ("duplicate task id `t-1`", "line 1"), cli=True),
    Case("task-text-missing", task(1, text=DELETE), f"{TSK}:2:", ("task `t-2`", "`text`")),
    Case("task-text-not-string", task(1, text={"q": "reset"}), f"{TSK}:2:", ("task `t-2`", "`text`")),
    Case("required-missing", task(0, required=DELETE), f"{TSK}:1:", ("task `t-1`", "`required`")),
    Case("required-not-list", task(0, required="lookup"), f"{TSK}:1:", ("task `t-1`", "`required`"), cli=True),
    Case("required-set-as-object", task(0, required={"lookup": True}), f"{TSK}:1:", ("task `t-1`", "`required`")),
    Case("required-holds-number", task(0, required=["lookup", 3]), f"{TSK}:1:", ("task `t-1`", "`required`")),
    Case("required-twice", task(0, required=["lookup", "lookup"]), f"{TSK}:1:", ("task `t-1`", "`required`")),
    Case("required-unknown-tool", task(2, required=["lookup", "nope"], candidates=DELETE), f"{TSK}:3:",
         ("task `t-3`", "unknown tool `nope`", "`required`"), cli=True),
    Case("required-outside-candidates", task(2, candidates=["lookup"]), f"{TSK}:3:",
         ("task `t-3`", "`search`", "`candidates`")),
    Case("candidates-not-list", task(2, candidates="lookup"), f"{TSK}:3:", ("task `t-3`", "`candidates`")),
    Case("candidates-unknown-tool", task(2, candidates=["lookup", "search", "ghost"]), f"{TSK}:3:",
         ("task `t-3`", "unknown tool `ghost`", "`candidates`")),
    Case("alternatives-not-list-of-lists", task(2, alternatives=["lookup"]), f"{TSK}:3:",
         ("task `t-3`", "`alternatives`")),
    Case("alternatives-unknown-tool", task(2, alternatives=[["lookup"], ["ghost"]]), f"{TSK}:3:",
         ("task `t-3`", "unknown tool `ghost`", "`alternatives[1]`")),
    Case("split-empty", task(0, split=""), f"{TSK}:1:", ("task `t-1`", "`split`")),
    Case("split-not-string", task(0, split=["train"]), f"{TSK}:1:", ("task `t-1`", "`split`")),
    Case("split-false", task(1, split=False), f"{TSK}:2:", ("task `t-2`", "`split`")),
    Case("group-empty", task(1, group=""), f"{TSK}:2:", ("task `t-2`", "`group`")),
    Case("group-blank", task(1, group="  "), f"{TSK}:2:", ("task `t-2`", "`group`")),
    Case("group-not-string", task(1, group=1), f"{TSK}:2:", ("task `t-2`", "`group`")),
    Case("meta-not-object", task(0, meta=["gold"]), f"{TSK}:1:", ("task `t-1`", "`meta`")),
    Case("task-unknown-field", task(1, label="x"), f"{TSK}:2:", ("unknown field `label`",)),
    Case("899-problems", many_problems, f"{TSK}:1:", ("unknown tool `nope`",), cli=True, check=_899),
    # the folder itself and the options
    Case("folder-missing", lambda f: None, "", ("not a folder", "no such folder"), target="absent"),
    Case("folder-is-a-file", lambda f: (f.parent / "file.json").write_text("{}\n"), "", ("not a folder",),
         target="file.json"),
    Case("never-acquirable-unknown", lambda f: None, "never_acquirable:", ("unknown tool `ghost`",),
         args=("--never-acquirable", "ghost")),
    Case("acquirable-kinds-unknown", lambda f: None, "camdf data validate: acquirable_kinds:", ("readonly",),
         args=("--acquirable-kinds", "read,readonly")),
]


def _params():
    for case in CASES:
        yield pytest.param(case, id=case.id + ("-cli" if case.cli else ""), marks=case.marks)


@pytest.mark.parametrize("case", _params())
def test_hostile_folder_is_refused_cleanly(case: Case, tmp_path):
    folder = build(tmp_path)
    case.mutate(folder)
    target = tmp_path / case.target if case.target else folder
    before = snapshot(tmp_path)
    rc, out, err = (run_cli if case.cli else run_inprocess)(["data", "validate", str(target), *case.args])
    shown = f"exit {rc}\n--- stdout\n{out[:3000]}\n--- stderr\n{err[:3000]}"
    assert "Traceback" not in out + err, shown  # (c)
    assert rc == 2, shown  # (a)
    assert out == "", shown
    lines = err.splitlines()
    if case.args and not case.target and case.where.startswith("camdf"):  # a refused option: one line
        problems = lines
    else:
        assert lines and lines[0] == f"camdf data validate: {target}: refused, {lines[0].split('refused, ')[-1]}", shown
        problems = lines[1:]
    if case.target:  # the folder itself: the problem names it
        case = Case(case.id, case.mutate, str(target), case.names)
    matching = [p for p in problems if p.startswith(case.where) and all(n in p for n in case.names)]  # (b)
    assert matching, f"no problem line starting with {case.where!r} naming {case.names}\n{shown}"
    if case.check is not None:
        case.check(err)
    assert snapshot(tmp_path) == before  # (d)
