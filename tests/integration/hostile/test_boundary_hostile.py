"""Hostile command lines against every stage's error boundary, one parametrised family per mechanism.

Families: a value that passes the old schema but failed later (per stage); a path-like value for every
config key that reaches the file system; a converter ``_target_`` outside the allow-list; an unknown key
(with and without ``+``); an empty sweep; a data folder edited after its manifest; Ctrl-C mid-stage (slow);
a secret from the environment in the params. Each case runs the real stage as a subprocess from an empty
working folder, with ``TMPDIR`` a private empty folder, and asserts the exit code, ONE stderr line naming the
place, no traceback, and nothing left behind: no Hydra job folder, no FAILED or RUNNING run, nothing new
outside ``paths.output_dir`` (the data folder unchanged), the temp folder empty.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .folders import snapshot

ROOT = Path(__file__).resolve().parents[3]
QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]
BIG = "1" + "0" * 399  # a 400-digit integer
FAST = ["folds.repeats=1", "stats.n_resamples=100"]


def _env(base: Path, extra: dict | None = None) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "MLFLOW_TRACKING_URI": f"sqlite:///{base}/out/mlflow.db",
            "HF_HUB_OFFLINE": "1", "TMPDIR": str(base / "tmp"), **(extra or {})}


def _cmd(stage: str, overrides: list[str], base: Path) -> list[str]:
    return [sys.executable, "-m", f"pipelines.{stage}", *overrides, f"paths.output_dir={base / 'out'}",
            f"paths.data_dir={base / 'data'}", *QUIET]


@pytest.fixture
def base(tmp_path, data_dir) -> Path:
    """``tmp_path`` with a private copy of the built retail data, an output, a working and a temp folder."""
    shutil.copytree(data_dir, tmp_path / "data", copy_function=shutil.copy2)
    for name in ("out", "cwd", "tmp"):
        (tmp_path / name).mkdir()
    return tmp_path


def _run(stage: str, overrides: list[str], base: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    fill = {"base": str(base), "big": BIG}
    cmd = _cmd(stage, [o.format(**fill) for o in overrides], base)
    return subprocess.run(cmd, cwd=base / "cwd", env=_env(base, env), capture_output=True, text=True, timeout=300)


def _runs(base: Path) -> list[tuple[str, str]]:
    """(run id, status) of every run in the case's store (none when it has no store)."""
    db = base / "out" / "mlflow.db"
    if not db.is_file():
        return []
    with sqlite3.connect(db) as con:
        try:
            return con.execute("select run_uuid, status from runs").fetchall()
        except sqlite3.OperationalError:  # a store file without MLflow's tables yet
            return []


def _temp_files(base: Path) -> list[str]:
    return sorted(p.name for p in (base / "tmp").iterdir())


def _outside_out(base: Path) -> dict:
    """Every entry of ``base`` but ``out/`` and the temp folder (checked by :func:`_temp_files`)."""
    return {k: v for k, v in snapshot(base).items()
            if k not in (".", "out", "tmp") and not k.startswith(("out/", "tmp/"))}


def assert_refused(proc, base: Path, before: dict, code: int, *names: str) -> None:
    """Exit ``code``, one stderr line naming ``names``, no traceback, nothing left behind."""
    shown = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, shown
    assert proc.returncode == code, shown
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert all(n in lines[0] for n in names), shown
    assert not list((base / "out").rglob(".hydra")), "a Hydra job folder was left behind"
    assert [s for _, s in _runs(base) if s in ("FAILED", "RUNNING")] == [], _runs(base)
    assert _outside_out(base) == before, "something outside paths.output_dir changed (data, cwd, temp folder)"
    assert _temp_files(base) == []


# -- a value that the schema let through before and that failed later, per stage -------------------------------

LATER = [
    ("evaluate", ["folds.protocol=group", "folds.n_folds=60"], "folds.n_folds", "fold groups"),
    ("evaluate", ["cost.lam=1e308"], "cost.lam", "1e+06"),
    ("evaluate", ["seed={big}"], "seed", "2147483647"),
    ("evaluate", ["seed=2147483647"], "seed", "folds.repeats"),
    ("evaluate", ["cost.d=1e300"], "cost.d", "1000"),
    ("evaluate", ["domain=airline"], "airline", "make data"),
    ("train", ["cost.lam=1e308"], "cost.lam", "1e+06"),
    ("train", ["folds.protocol=group", "folds.n_folds=60"], "folds.n_folds", "fold groups"),
    ("scores", ["random_state={big}"], "random_state", "2147483647"),
    ("scores", ["domain=telecom"], "telecom", "make data"),
    ("tables", ["main.lam=1e308"], "main.lam", "1e+06"),
    ("tables", ["main.seed={big}"], "main.seed", "2147483647"),
]


@pytest.mark.parametrize("stage, overrides, key, hint", LATER, ids=[f"{s}:{' '.join(o)[:40]}" for s, o, *_ in LATER])
def test_a_value_that_failed_late_is_refused_at_the_boundary(stage, overrides, key, hint, base):
    before = _outside_out(base)
    assert_refused(_run(stage, overrides, base), base, before, 2, key, hint)


# -- a path-like value for every config key that reaches the file system -------------------------------------

FS_KEYS = [
    ("evaluate", "tracking.experiment"), ("tables", "tracking.experiment"), ("evaluate", "scorer.label"),
    ("scores", "scorer.label"), ("evaluate", "paths.cache_dir"), ("evaluate", "paths.log_dir"),
    ("scores", "paths.cache_dir"), ("tables", "out_dir"), ("tables", "readme"), ("train", "policy.registered_name"),
    ("train", "policy.alias"), ("evaluate", "+cost.params.cache_dir"), ("data", "domain.name"),
    ("evaluate", "hydra.run.dir"),
]
PATH_VALUES = [pytest.param("/tmp/camdf-hostile", id="absolute"), pytest.param("../../..", id="up"),
               pytest.param("a/../../b", id="inner-up", marks=pytest.mark.slow)]


@pytest.mark.parametrize("value", PATH_VALUES)
@pytest.mark.parametrize("stage, key", FS_KEYS, ids=[f"{s}:{k}" for s, k in FS_KEYS])
def test_a_path_like_value_is_refused_with_its_key(stage, key, value, base):
    before = _outside_out(base)
    proc = _run(stage, [f"{key}={value}"], base)
    assert_refused(proc, base, before, 2, key.lstrip("+"))
    assert not os.path.lexists("/tmp/camdf-hostile")


# -- code from data: a converter outside the allow-list -------------------------------------------------------

TARGETS = ["os.system", "pandas.read_pickle", "builtins.eval", "camdf.pipeline.checks.values.refuse"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_converter_outside_the_allow_list_is_refused(target, base):
    before = _outside_out(base)
    proc = _run("data", ["domain=user_example", f"domain.converter._target_={target}"], base)
    assert_refused(proc, base, before, 2, "domain.converter._target_", "built-in converters")


# -- unknown keys, with and without + -------------------------------------------------------------------------

def test_an_override_hydra_cannot_parse_is_one_line(base):
    before = _outside_out(base)
    proc = _run("evaluate", ["cost.lam=${{a:${{b}}}}"], base)
    assert_refused(proc, base, before, 2, "cost.lam=", "not a valid override")


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "multirun"])
def test_an_experiment_file_hydra_cannot_compose_is_refused_in_one_line(multirun, base):
    """A user's experiment file on ``hydra.searchpath`` overriding a group its primary config leaves null: Hydra's
    composition error is the user's input (exit 2, the file named), not an internal error."""
    (base / "conf" / "experiment").mkdir(parents=True)
    (base / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\ndefaults:\n"
                                                           "  - override /debug: tiny\n")
    before = _outside_out(base)
    proc = _run("evaluate", [*(["-m"] if multirun else []), f"hydra.searchpath=[file://{base / 'conf'}]",
                             "experiment=mine"], base)
    assert_refused(proc, base, before, 2, "config: In 'experiment/mine'", "Could not override 'debug'")


UNKNOWN = [
    ("evaluate", "+cost.lamda=0.5", "cost.lam"), ("evaluate", "cost.lamda=0.5", "cost.lam"),
    ("train", "+polcy.method=camdf", "policy.method"), ("scores", "+folds.n_fold=3", "folds.n_folds"),
    ("tables", "+main.lamb=0.5", "main.lam"), ("data", "+domain.nmae=x", "domain.name"),
    ("evaluate", "+seed=1", "seed"),  # + on a key the config has
]


@pytest.mark.parametrize("stage, override, closest", UNKNOWN, ids=[f"{s}:{o}" for s, o, _ in UNKNOWN])
def test_an_unknown_key_is_refused_with_the_closest_known_key(stage, override, closest, base):
    before = _outside_out(base)
    proc = _run(stage, [override], base)
    assert_refused(proc, base, before, 2, override.split("=")[0], closest)


# -- an empty sweep -------------------------------------------------------------------------------------------

EMPTY = [("evaluate", "cost.lam=range(0)", "cost.lam"), ("evaluate", "seed=range(3,3)", "seed"),
         ("scores", "cost.d=range(1,1)", "cost.d")]


@pytest.mark.parametrize("stage, override, key", EMPTY, ids=[f"{s}:{o}" for s, o, _ in EMPTY])
def test_an_empty_sweep_is_refused(stage, override, key, base):
    before = _outside_out(base)
    proc = _run(stage, ["-m", override], base)
    assert_refused(proc, base, before, 2, key, "empty sweep")


def test_an_experiment_without_m_warns_in_one_line(base):
    proc = _run("evaluate", ["experiment=smoke", "cost.lam=1e308"], base)  # refused after the warning
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: ")]
    assert proc.returncode == 2 and warnings == [], proc.stderr  # the refusal comes first: nothing ran
    proc = _run("evaluate", ["experiment=smoke", "cost.lam=0.12", "cost.d=1", "method.names=[full,none]", *FAST],
                base)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: ")]  # its swept keys are set
    proc = _run("evaluate", ["experiment=smoke", "method.names=[full,none]", *FAST], base)
    assert proc.returncode == 0, proc.stderr[-2000:]
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1 and "experiment=smoke" in warnings[0] and "-m" in warnings[0], proc.stderr


# -- a data folder that no longer matches its manifest -------------------------------------------------------

def _edit_task(folder: Path) -> None:
    lines = (folder / "tasks.jsonl").read_text().splitlines(keepends=True)
    (folder / "tasks.jsonl").write_text("".join(lines[:-1]))  # one task dropped by hand


def _edit_catalog(folder: Path) -> None:
    (folder / "catalog.json").write_text((folder / "catalog.json").read_text().replace("user", "usr", 1))


def _drop_manifest(folder: Path) -> None:
    (folder / "manifest.json").unlink()


def _old_manifest(folder: Path) -> None:
    import json

    doc = json.loads((folder / "manifest.json").read_text())
    doc.pop("files")
    (folder / "manifest.json").write_text(json.dumps(doc))


TAMPER = [("tasks.jsonl", _edit_task, "tasks.jsonl", "rerun `make data`"),
          ("catalog.json", _edit_catalog, "catalog.json", "rerun `make data`"),
          ("no-manifest", _drop_manifest, "retail", "make data"),
          ("manifest-without-hashes", _old_manifest, "manifest.json", "rerun `make data`")]


@pytest.mark.parametrize("stage", ["evaluate", pytest.param("train", marks=pytest.mark.slow),
                                   pytest.param("scores", marks=pytest.mark.slow)])
@pytest.mark.parametrize("what, mutate, file, hint", TAMPER, ids=[t[0] for t in TAMPER])
def test_a_data_folder_that_does_not_match_its_manifest_is_refused(stage, what, mutate, file, hint, base):
    mutate(base / "data" / "retail")
    before = _outside_out(base)
    assert_refused(_run(stage, [], base), base, before, 2, file, hint)


def test_the_data_stage_rebuilds_a_folder_that_does_not_match_its_manifest(base):
    assert _run("data", ["domain=user_example"], base).returncode == 0
    built = snapshot(base / "data" / "user_example")
    _edit_task(base / "data" / "user_example")
    proc = _run("data", ["domain=user_example"], base)
    assert proc.returncode == 0 and ": built " in proc.stdout, proc.stdout + proc.stderr
    again = snapshot(base / "data" / "user_example")
    assert {k: v[3] for k, v in again.items()} == {k: v[3] for k, v in built.items()}  # the same bytes back


# -- Ctrl-C mid-stage ------------------------------------------------------------------------------------------

def _store_has_running_run(base: Path) -> bool:
    return any(s == "RUNNING" for _, s in _runs(base))


INTERRUPT = [
    ("evaluate", [], _store_has_running_run),  # mid-cell: its run is open
    ("evaluate", [], lambda base: bool(list((base / "out").rglob(".hydra")))),  # as the job starts
    ("scores", ["scorer=supervised", "random_state=1"], lambda base: bool(list((base / "out").rglob(".hydra")))),
]


@pytest.mark.slow
@pytest.mark.parametrize("stage, overrides, ready", INTERRUPT, ids=["evaluate-mid-cell", "evaluate-start",
                                                                    "scores"])
def test_ctrl_c_mid_stage_is_one_line_exit_130_and_leaves_no_open_run(stage, overrides, ready, base):
    before = _outside_out(base)
    proc = subprocess.Popen(_cmd(stage, overrides, base), cwd=base / "cwd", env=_env(base), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not ready(base) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the stage ended before it could be interrupted"
    # Past the claim (Tracker.claim opens the run and returns it a moment later): a signal inside claim()
    # itself can still leave the claimed run RUNNING until its claim times out (a finding for tracking.py).
    time.sleep(0.5 if ready is _store_has_running_run else 0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert_refused(done, base, before, 130, "interrupted")
    assert {s for _, s in _runs(base)} <= {"KILLED"}  # an interrupted run is KILLED, with its cause in a tag
    for rid, _ in _runs(base):
        with sqlite3.connect(base / "out" / "mlflow.db") as con:
            tags = dict(con.execute("select key, value from tags where run_uuid = ?", (rid,)).fetchall())
        if tags.get("kind", "cell") == "cell":
            assert tags.get("failure", "").startswith("interrupted"), tags


# -- secrets from the environment -----------------------------------------------------------------------------

def test_an_environment_value_is_never_logged_as_a_param(base):
    secret = "0.0512345"  # a valid margin, so the run goes on; a name from the environment is refused (test_gates)
    proc = _run("evaluate", ["stats.delta='${{oc.decode:${{oc.env:CAMDF_TEST_SECRET}}}}'", "method.names=[full,none]", *FAST],
                base, env={"CAMDF_TEST_SECRET": secret})
    assert proc.returncode == 0, proc.stderr[-2000:]
    with sqlite3.connect(base / "out" / "mlflow.db") as con:
        params = dict(con.execute("select key, value from params").fetchall())
        names = [r[0] for r in con.execute("select name from runs union select name from experiments")]
    assert params["stats.delta"].startswith("<redacted"), params
    assert not [n for n in names if secret in (n or "")], names
    assert not [k for k, v in params.items() if secret in v], params
    assert params["cost.lam"] == "0.12"  # the other params as they were


def test_a_tracking_uri_is_printed_without_its_credentials(base):
    before = _outside_out(base)
    proc = _run("evaluate", [], base, env={"MLFLOW_TRACKING_URI": "http://ana:hunter2@127.0.0.1:9"})
    assert_refused(proc, base, before, 2, "tracking.uri", "127.0.0.1:9")
    assert "hunter2" not in proc.stderr and "ana:" not in proc.stderr
