"""Hostile input to the data stage (``python -m pipelines.data``): refused with exit 2, nothing written.

Every case runs the real stage as a subprocess on ``domain=user_example`` (or another domain) with
``paths.data_dir`` and ``paths.output_dir`` in ``tmp_path`` and the working directory an empty folder
in ``tmp_path`` too. The data folder starts as a copy of one real earlier build (``user_example/``
written by the stage itself, and a ``README.md``). Each case asserts:

(a) exit code 2;
(b) a line of stderr naming the place: the config key (``domain.name``, ``domain.where.required``,
    ``domain.executable``, ...) or the file and line of the user's folder (``mini/tasks.jsonl:3:``);
(c) no ``Traceback`` in stdout or stderr;
(d) the data folder unchanged (every entry's type, size, mtime and bytes), nothing else in ``tmp_path``
    new or changed (the Hydra output folder may exist, with no file in it), the working directory
    empty, and no trace of the run in the checkout (:func:`_checkout_traces`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from .folders import NAME, TASKS, TOOLS, fifo, snapshot

ROOT = Path(__file__).resolve().parents[3]
QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]
TIMEOUT = 120

# -- the minimal valid user folder (folders.py), written one tool per line: tools[0..2] on lines 5-7 ---------
def catalog_text(tools=TOOLS) -> str:
    lines = ["{", f'  "domain": "{NAME}",', '  "source": "hostile-input tests",', '  "tools": [']
    lines += ["    " + json.dumps(t) + ("," if i < len(tools) - 1 else "") for i, t in enumerate(tools)]
    return "\n".join([*lines, "  ]", "}"]) + "\n"


def tasks_text(tasks=TASKS) -> str:
    return "".join(json.dumps(t) + "\n" for t in tasks)


def build(parent: Path) -> Path:
    folder = parent / NAME
    folder.mkdir(parents=True)
    (folder / "catalog.json").write_text(catalog_text(), encoding="utf-8")
    (folder / "tasks.jsonl").write_text(tasks_text(), encoding="utf-8")
    return folder


# -- running the stage ---------------------------------------------------------------------------------------

def _env(out: Path) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "MLFLOW_TRACKING_URI": f"sqlite:///{out}/mlflow.db",
            "HF_HUB_OFFLINE": "1"}


def run_stage(overrides: list[str], base: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    data, out, cwd = base / "data", base / "out", base / "cwd"
    cwd.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "pipelines.data", *overrides, f"paths.output_dir={out}", f"paths.data_dir={data}",
           *QUIET]
    try:
        return subprocess.run(cmd, cwd=cwd, env=_env(out), capture_output=True, text=True, timeout=timeout,
                              errors="backslashreplace")
    except subprocess.TimeoutExpired as err:  # the child is killed by subprocess.run
        raise AssertionError(f"the data stage did not finish in {timeout} s: {' '.join(overrides)}") from err


@pytest.fixture(scope="session")
def built_data(tmp_path_factory) -> Path:
    """A data folder holding ``user_example/`` as the real stage builds it, and a README (one build per worker)."""
    base = tmp_path_factory.mktemp("hostile_built")
    proc = run_stage(["domain=user_example"], base)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "user_example: built 5 tasks" in proc.stdout
    (base / "data" / "README.md").write_text("# data README\n")
    return base / "data"


def test_the_base_folder_builds(tmp_path):
    """The folder the cases mutate is valid: the stage builds it (so each refusal is the mutation's)."""
    src = build(tmp_path / "src")
    proc = run_stage(["domain=user_example", "domain.name=mini", f"domain.converter.folder={src}"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "mini: built 3 tasks" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "data" / "mini").iterdir()) == [
        "catalog.json", "manifest.json", "report.md", "tasks.jsonl"]


# -- cases ---------------------------------------------------------------------------------------------------

def change(fname: str, old: str, new: bytes) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        data = (folder / fname).read_bytes()
        assert old.encode() in data
        (folder / fname).write_bytes(data.replace(old.encode(), new, 1))
    return mutate


def write(fname: str, content: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / fname).write_bytes(content)


def task_line(i: int, line: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        lines = tasks_text().splitlines()
        lines[i] = line
        (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return mutate


def as_folder(fname: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / fname).unlink()
        (folder / fname).mkdir()
    return mutate


@dataclass
class Case:
    id: str
    overrides: list[str]  # "{src}" is the user's folder (tmp_path/src/mini), "{tmp}" is tmp_path
    where: str  # a stderr line contains this (the key, or the file and line)...
    names: tuple[str, ...] = ()  # ...and each of these
    mutate: Callable[[Path], None] | None = None  # applied to the user's folder
    timeout: float = TIMEOUT
    marks: tuple = ()


USER = ["domain=user_example", "domain.converter.folder={src}"]  # the user's folder, built as data/user_example
DOMAIN_FILE_CASES = [
    ("catalog-invalid-json", change("catalog.json", '"cost": 2.5}', b'"cost": 2.5,}'), "mini/catalog.json:6:",
     ("invalid JSON",)),
    ("catalog-missing", lambda f: (f / "catalog.json").unlink(), "mini/catalog.json:1:", ("missing file",)),
    ("catalog-a-folder", as_folder("catalog.json"), "mini/catalog.json:1:", ("folder",)),
    ("catalog-fifo", fifo("catalog.json"), "mini/catalog.json:1:", ("not a regular file",)),
    ("catalog-bom", lambda f: (f / "catalog.json").write_bytes(b"\xef\xbb\xbf" + catalog_text().encode()),
     "mini/catalog.json:1:", ("byte-order mark",)),
    ("catalog-empty", write("catalog.json", b""), "mini/catalog.json:1:", ("empty file",)),
    ("cost-nan", change("catalog.json", '"cost": 2.5', b'"cost": NaN'), "mini/catalog.json:6:", ("`search`", "`cost`")),
    ("cost-5000-digits", change("catalog.json", '"cost": 2.5', b'"cost": ' + b"9" * 5000), "mini/catalog.json:6:",
     ("number of 5000 characters",)),
    ("tool-name-duplicate", change("catalog.json", '"name": "refund"', b'"name": "lookup"'), "mini/catalog.json:7:",
     ("duplicate tool name `lookup`",)),
    ("tasks-missing", lambda f: (f / "tasks.jsonl").unlink(), "mini/tasks.jsonl:1:", ("missing file",)),
    ("tasks-non-utf8", change("tasks.jsonl", "reset", b"re\xffset"), "mini/tasks.jsonl:2:", ("not UTF-8",)),
    ("tasks-lone-surrogate", change("tasks.jsonl", "reset", b"re\\ud800set"), "mini/tasks.jsonl:2:",
     ("`text`", "lone surrogate")),
    ("task-id-duplicate", change("tasks.jsonl", '"id": "t-3"', b'"id": "t-1"'), "mini/tasks.jsonl:3:",
     ("duplicate task id `t-1`",)),
    ("required-unknown-tool", task_line(0, json.dumps({"id": "t-1", "text": "x", "required": ["ghost"]})),
     "mini/tasks.jsonl:1:", ("unknown tool `ghost`", "`required`")),
    ("task-meta-100k-deep", task_line(1, '{"id": "t-2", "text": "x", "required": [], "meta": {"d": '
                                         + "[" * 100_000 + "]" * 100_000 + "}}"),
     "mini/tasks.jsonl:2:", ("nesting deeper than 100",)),
    ("task-invalid-json", task_line(2, '{"id": "t-3", "text": '), "mini/tasks.jsonl:3:", ("invalid JSON",)),
]
CASES = [
    Case(f"folder-{cid}", USER, where, names, mutate) for cid, mutate, where, names in DOMAIN_FILE_CASES
] + [
    # the folder itself
    Case("folder-missing", ["domain=user_example", "domain.converter.folder={tmp}/src/absent"], "{tmp}/src/absent",
         ("does not exist",)),
    Case("folder-is-a-file", ["domain=user_example", "domain.converter.folder={src}/catalog.json"],
         "{src}/catalog.json", ("not a folder",)),
    Case("folder-dangling-symlink", ["domain=user_example", "domain.converter.folder={tmp}/src/link"],
         "{tmp}/src/link", ("does not exist",), mutate=lambda f: os.symlink(f.parent / "gone", f.parent / "link")),
    Case("folder-is-a-fifo", ["domain=user_example", "domain.converter.folder={tmp}/src/pipe"], "{tmp}/src/pipe",
         ("not a folder",), mutate=lambda f: os.mkfifo(f.parent / "pipe"), timeout=15),
    # domain.name
    Case("name-parent", [*USER, "domain.name=../evil"], "error: domain.name:", ("'../evil'",)),
    Case("name-dot", [*USER, "domain.name=."], "error: domain.name:", ("'.'",)),
    Case("name-dotdot", [*USER, "domain.name=.."], "error: domain.name:", ("'..'",)),
    Case("name-empty", [*USER, "domain.name=''"], "error: domain.name:", ("''",)),
    Case("name-hidden", [*USER, "domain.name=.hidden"], "error: domain.name:", ("'.hidden'",)),
    Case("name-slash", [*USER, "domain.name=a/b"], "error: domain.name:", ("'a/b'",)),
    Case("name-absolute", [*USER, "domain.name=/tmp/evil"], "error: domain.name:", ("'/tmp/evil'",)),
    Case("name-leading-dash", [*USER, "domain.name=-x"], "error: domain.name:", ("'-x'",)),
    # domain.where
    Case("where-required-bad", [*USER, "+domain.where.required=some"], "error: domain.where.required:",
         ("non_empty", "'some'")),
    Case("where-unknown-filter", [*USER, "+domain.where.nope=1"], "error: domain.where.nope:", ("unknown filter",)),
    Case("where-split-not-list", [*USER, "+domain.where.split=train"], "error: domain.where.split:", ("list",)),
    Case("where-split-empty-list", [*USER, "+domain.where.split=[]"], "error: domain.where.split:", ("list",)),
    Case("where-not-mapping", [*USER, "+domain.where=[1]"], "error: domain.where:", ("mapping",)),
    Case("where-meta-not-list", [*USER, "+domain.where.meta.note=x"], "error: domain.where.meta.note:", ("list",)),
    Case("where-keeps-nothing", [*USER, "+domain.where.split=[validation]"], "domain.where:", ("keeps none",)),
    # derived labels: executable and keep_non_executable
    Case("executable-telecom", [*USER, "+domain.label_source=derived", "+domain.executable=telecom"],
         "domain.executable:", ("'telecom'", "airline, retail")),
    Case("executable-missing", [*USER, "+domain.label_source=derived"], "domain.executable:", ("airline, retail",)),
    Case("telecom-derived", ["domain=telecom", "+domain.label_source=derived"], "domain.executable:",
         ("airline, retail",)),
    Case("keep-non-executable-string", [*USER, "+domain.keep_non_executable=maybe"], "domain.keep_non_executable:",
         ("'maybe'",)),
    Case("keep-non-executable-int", [*USER, "+domain.label_source=derived", "+domain.executable=retail",
                                     "+domain.keep_non_executable=1"], "domain.keep_non_executable:", ("1",)),
]


def _checkout_traces() -> dict:
    """What a stage run that escaped ``paths.data_dir`` would leave in the checkout, under the names these cases use.

    (Not a snapshot of the whole ``data/``: other work may rebuild the built-in domains there meanwhile.)
    """
    names = ["user_example", "mini", "evil", ".hidden", "a", "-x", "b"]
    paths = [ROOT / "data" / n for n in names] + [ROOT / n for n in ("evil", "mini", "user_example", "cwd")]
    paths += [*(ROOT / "data").glob(".user_example.*"), *(ROOT / "data").glob(".mini.*")]
    return {str(p): os.lstat(p).st_mtime_ns for p in paths if os.path.lexists(p)}


def _outside_out(snap: dict) -> dict:
    """A snapshot of tmp_path without tmp_path itself (its mtime moves when out/ appears) and out/."""
    return {k: v for k, v in snap.items() if k != "." and k != "out" and not k.startswith("out/")}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_hostile_data_stage_is_refused_and_writes_nothing(case: Case, built_data, tmp_path):
    src = build(tmp_path / "src")
    if case.mutate is not None:
        case.mutate(src)
    shutil.copytree(built_data, tmp_path / "data", copy_function=shutil.copy2, symlinks=True)
    (tmp_path / "cwd").mkdir()
    data_before = snapshot(tmp_path / "data")
    assert "user_example/manifest.json" in data_before
    tmp_before = _outside_out(snapshot(tmp_path))
    checkout_before = _checkout_traces()
    evil_before = os.path.lexists("/tmp/evil")
    fill = {"src": str(src), "tmp": str(tmp_path)}
    proc = run_stage([o.format(**fill) for o in case.overrides], tmp_path, timeout=case.timeout)
    shown = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, shown  # (c)
    assert proc.returncode == 2, shown  # (a)
    where = case.where.format(**fill)
    lines = proc.stderr.splitlines()
    assert lines and lines[0].startswith("error: "), shown
    assert [ln for ln in lines if where in ln and all(n in ln for n in case.names)], (
        f"no stderr line naming {where!r} and {case.names}\n{shown}")  # (b)
    # (d) nothing written: the data folder as it was, nothing new beside it, no file in the output folder
    assert snapshot(tmp_path / "data") == data_before
    out = tmp_path / "out"
    assert not out.exists() or [p for p in out.rglob("*") if not p.is_dir()] == [], sorted(out.rglob("*"))
    assert _outside_out(snapshot(tmp_path)) == tmp_before  # the source folder, cwd and data folder included
    assert list((tmp_path / "cwd").iterdir()) == []
    assert not (tmp_path / "evil").exists() and os.path.lexists("/tmp/evil") == evil_before
    assert _checkout_traces() == checkout_before
