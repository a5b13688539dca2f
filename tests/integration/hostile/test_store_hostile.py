"""Hostile tracking stores: a corrupt, empty or truncated ``mlflow.db``; a copied ``outputs/``; a train stage
SIGKILLed mid-run (its policy run is ended by the next train stage).

The stage cases run the real stage as a subprocess (the boundary family's harness) and assert exit code,
one line naming the store file, and nothing left behind. The copy case runs a cell in the copy and checks
that no file of the original changed. Slow (marked ``slow``, run by ``make test-full``):
``test_a_killed_train_stage_leaves_no_running_run_after_the_next``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from camdf.tracking.client import Tracker

from .folders import snapshot
from .test_boundary_hostile import FAST, _cmd, _env, _outside_out, _run, _temp_files, base  # noqa: F401


def _zero(db: Path) -> None:
    db.write_bytes(b"")


def _random(db: Path) -> None:
    db.write_bytes(os.urandom(8192))


def _truncated(db: Path) -> None:
    Tracker(f"sqlite:///{db}", "camdf")  # a real store, then cut to its first page
    with open(db, "r+b") as fh:
        fh.truncate(1024)


@pytest.mark.parametrize("mutate, phrase", [(_zero, "0 bytes"), (_random, "not a SQLite database"),
                                            (_truncated, "database disk image is malformed")], ids=["0-byte", "random-bytes", "truncated"])
@pytest.mark.parametrize("stage", ["evaluate", "tables"])
def test_a_corrupt_store_is_one_line_naming_the_file_and_exit_1(stage, mutate, phrase, base):
    db = base / "out" / "mlflow.db"
    mutate(db)
    stored = db.read_bytes()
    before = _outside_out(base)
    proc = _run(stage, FAST if stage == "evaluate" else [], base)
    # assert_refused, but for a store with no readable runs table (nothing can have been logged in it)
    shown = f"exit {proc.returncode}\n--- stderr\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr and proc.returncode == 1, shown
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: ") and phrase in lines[0] and str(db) in lines[0], shown
    assert not list((base / "out").rglob(".hydra")), "a Hydra job folder was left behind"
    assert _outside_out(base) == before and _temp_files(base) == []
    assert sorted(p.name for p in (base / "out").iterdir()) == ["mlflow.db"]
    assert db.read_bytes() == stored  # not replaced by an empty store


def test_a_copied_store_writes_its_new_runs_into_the_copy(base):
    first = _run("evaluate", FAST, base)
    assert first.returncode == 0, first.stderr[-2000:]
    copy = base / "copy"
    subprocess.run(["cp", "-a", str(base / "out"), str(copy)], check=True)
    original = snapshot(base / "out")
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{copy}/mlflow.db"}
    cmd = _cmd("evaluate", [*FAST, "cost.lam=0.5"], base)
    cmd = [c if not c.startswith("paths.output_dir=") else f"paths.output_dir={copy}" for c in cmd]
    proc = subprocess.run(cmd, cwd=base / "cwd", env=_env(base, env), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert snapshot(base / "out") == original  # no file of the original changed
    with sqlite3.connect(copy / "mlflow.db") as con:
        uris = [u for (u,) in con.execute("select artifact_uri from runs")]
    assert len(uris) >= 2 and all(u.startswith((copy / "mlartifacts").as_uri()) for u in uris), uris
    assert any((copy / "mlartifacts").rglob("summary.csv"))


def _policy_runs(base: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(base / "out" / "mlflow.db") as con:
        return con.execute("select r.run_uuid, r.status from runs r join tags t on t.run_uuid = r.run_uuid "
                           "where t.key = 'kind' and t.value = 'policy' order by r.start_time").fetchall()


@pytest.mark.slow
def test_a_killed_train_stage_leaves_no_running_run_after_the_next(base):
    overrides = [*FAST, "policy.method=camdf_lite"]
    proc = subprocess.Popen(_cmd("train", overrides, base), cwd=base / "cwd", env=_env(base),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if (base / "out" / "mlflow.db").is_file():
            try:
                if _policy_runs(base):
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    assert proc.poll() is None, "the train stage ended before its policy run could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    (dead, status), = _policy_runs(base)
    assert status == "RUNNING"
    again = _run("train", overrides, base)
    assert again.returncode == 0, again.stderr[-2000:]
    runs = dict(_policy_runs(base))
    assert runs[dead] == "KILLED" and "RUNNING" not in runs.values(), runs
    with sqlite3.connect(base / "out" / "mlflow.db") as con:
        assert con.execute("select count(*) from tags where run_uuid = ? and key = 'stale.ended_by'",
                           (dead,)).fetchone()[0] == 1
