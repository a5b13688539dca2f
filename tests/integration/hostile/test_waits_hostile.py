"""Every wait has a bound: a tracking server that refuses, one that accepts and never answers, and one that answers
the probe and then stalls; `camdf select` and each stage that talks to the store return within 10 s with one line.

The servers are plain sockets built here (no MLflow): what matters is what a client sees, not what a server does.
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: The bound of acceptance 3 (issue 41): the whole command, imports included, on an idle machine.
BOUND = 10.0
#: What the waits themselves may add: the probe's 3 s, or MLflow's 5 s read timeout with no retry.
WAITS = 8.0


class Stalling:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers it; with ``probe=True`` it
    answers the first request (the stages' probe) with an MLflow-like JSON and stalls on every later one."""

    def __init__(self, probe: bool):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.probe, self.held, self.answered = self.sock.getsockname()[1], probe, [], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.probe and not self.answered:
                conn.recv(65536)
                body = b'{"experiments": []}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
                conn.close()
                self.answered += 1

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def _refused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]  # closed on exit: nothing listens there


def _servers():
    """The three servers, as (kind, URI); the refused one first (it waits for nothing: the baseline)."""
    stalling = [Stalling(probe=False), Stalling(probe=True)]
    yield "refused", f"http://127.0.0.1:{_refused_port()}"
    yield "silent", f"http://127.0.0.1:{stalling[0].port}"
    yield "probe-then-stall", f"http://127.0.0.1:{stalling[1].port}"
    for s in stalling:
        s.close()


def _lazy(module: str) -> list[str]:
    """The modules a stage imports inside its functions (after its config checks, before its first real call to
    the store): part of what the stage loads before it waits, so part of the baseline."""
    if not module.startswith("pipelines."):
        return []
    tree = ast.parse(Path(ROOT, *module.split(".")).with_suffix(".py").read_text(encoding="utf-8"))
    return sorted({n.module for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                   for n in ast.walk(f) if isinstance(n, ast.ImportFrom) and n.module})


def _baseline(module: str) -> float:
    """Seconds this machine takes now to import MLflow, ``module`` and what it imports lazily (about 3 s when
    idle, more when loaded)."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", f"import {', '.join(['mlflow', module, *_lazy(module)])}"], check=True,
                   timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.monotonic() - start


def _check(cmd: list[str], module: str, tmp_path: Path, *names: str) -> dict[str, float]:
    """Run ``cmd`` against each server: one line each time, and within :data:`BOUND` seconds, or, on a machine
    whose imports are slow now, within the imports' time (measured just before, so under the same load) plus
    :data:`WAITS` and 2 s for composing the config."""
    took = {}
    for kind, uri in _servers():
        base = _baseline(module)
        proc, took[kind] = _timed(cmd, uri, tmp_path)
        _one_line(proc, "127.0.0.1", *names)
        assert took[kind] < max(BOUND, base + WAITS + 2), f"{kind}: {took[kind]:.1f} s (imports: {base:.1f} s)"
    return took


def _timed(cmd: list[str], uri: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": uri, "HF_HUB_OFFLINE": "1"}
    for key in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES"):
        env.pop(key, None)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - start


def _one_line(proc: subprocess.CompletedProcess, *names: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("warning: ")]
    assert proc.returncode in (1, 2) and len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and all(n in lines[0] for n in names), proc.stderr[-3000:]


def test_select_returns_within_the_bound(tmp_path):
    request = tmp_path / "request.json"
    request.write_text('{"ranking": ["a"], "costs": {"a": 1.0}, "lam": 0.1}')
    _check([sys.executable, "-m", "camdf.cli", "select", "--policy", "models:/camdf/1", "--input", str(request)],
           "camdf.cli.commands", tmp_path, "camdf select")


@pytest.mark.parametrize("stage", ["evaluate", pytest.param("train", marks=pytest.mark.slow),
                                   pytest.param("tables", marks=pytest.mark.slow)])
def test_a_stage_returns_within_the_bound(stage, tmp_path, data_dir):
    _check([sys.executable, "-m", f"pipelines.{stage}", f"paths.output_dir={tmp_path}/out",
            f"paths.data_dir={data_dir}", "hydra/job_logging=none", "hydra/hydra_logging=none"], f"pipelines.{stage}", tmp_path)
    assert not list((tmp_path / "out").rglob(".hydra"))


def test_serve_returns_within_the_bound(tmp_path):
    """`camdf serve` checks the store and the policy with bounded waits before `mlflow models serve` starts (run by
    itself against a stalling registry, MLflow's client waited past 100 s)."""
    _check([sys.executable, "-m", "camdf.cli", "serve", "--policy", "models:/camdf/1", "-p", "5999"],
           "camdf.cli.commands", tmp_path, "camdf serve")


# --- the generated family: each owner of a wait, through its entry point, against what would hold it forever ------

DEFAULT_EXPORT = ROOT / "camdf" / "runtime" / "default_policy"
MLMODEL = "flavors:\n  python_function:\n    artifacts:\n      policy:\n        path: artifacts/policy.json\n"
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"


def _export(tmp: Path) -> Path:
    import shutil

    return Path(shutil.copytree(DEFAULT_EXPORT, tmp / "export"))


def _model_folder(tmp: Path) -> Path:
    folder = tmp / "model"
    (folder / "artifacts").mkdir(parents=True)
    (folder / "MLmodel").write_text(MLMODEL)
    (folder / "artifacts" / "policy.json").write_bytes((DEFAULT_EXPORT / "policy.json").read_bytes())
    return folder


def _domain(tmp: Path) -> Path:
    import json

    from .folders import TASKS, TOOLS

    folder = tmp / "mini"
    folder.mkdir()
    (folder / "catalog.json").write_text(json.dumps({"tools": TOOLS}))
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return folder


def _pipe(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)  # nobody writes it: a blocking open or read would wait forever
    return path


def _load(folder: Path):
    from camdf.runtime import load_policy

    return lambda: load_policy(str(folder))


def _fifo_cases():
    """(name, build(tmp) -> the call that must refuse, phrase of its error): every reader of a user-named file."""
    from camdf.data.io import read_domain
    from camdf.integrations.stabletoolbench.convert import convert_solvable_queries
    from camdf.pipeline.checks.bounds import check_config_folders
    from camdf.runtime.fit_inputs import read_tasks, read_tools

    def policy_file(make, rel):  # a file of a policy folder (an export, a model folder) that load_policy reads
        def build(tmp):
            folder = make(tmp)
            _pipe(folder / rel)
            return _load(folder)
        return build

    def domain_file(name):
        def build(tmp):
            folder = _domain(tmp)
            _pipe(folder / name)
            return lambda: read_domain(folder)
        return build

    def one_file(reader):
        def build(tmp):
            return lambda: reader(_pipe(tmp / "input.json"))
        return build

    def config_folder(tmp):
        _pipe(tmp / "evil.yaml")
        return lambda: check_config_folders([f"hydra.searchpath=[file://{tmp}]"])

    def queries(tmp):
        files = tmp / "solvable_queries" / "test_instruction"
        files.mkdir(parents=True)
        (files / "G1_query.json").write_text("[]")
        _pipe(files / "G2_query.json")
        return lambda: convert_solvable_queries(tmp)

    return [("export manifest.json", policy_file(_export, "manifest.json")),
            ("export policy.json", policy_file(_export, "policy.json")),
            ("export booster", policy_file(_export, "boosters/0.txt")),
            ("model MLmodel", policy_file(_model_folder, "MLmodel")),
            ("model policy.json", policy_file(_model_folder, "artifacts/policy.json")),
            ("domain catalog.json", domain_file("catalog.json")),
            ("domain tasks.jsonl", domain_file("tasks.jsonl")),
            ("fit --tools", one_file(read_tools)),
            ("fit --tasks", one_file(lambda p: read_tasks(p, ["a"]))),
            ("config folder", config_folder),
            ("benchmark query files", queries)]


FIFO_CASES = _fifo_cases()


@pytest.mark.parametrize("name,build", FIFO_CASES, ids=[c[0] for c in FIFO_CASES])
def test_a_fifo_is_refused_not_waited_on(name, build, tmp_path):
    from camdf.common.waits import WaitExpired, call

    attempt = build(tmp_path)
    start = time.monotonic()
    try:
        call(attempt, 20.0, name)
        raise AssertionError(f"{name}: a FIFO was taken")
    except WaitExpired:
        raise AssertionError(f"{name}: blocked on the FIFO") from None
    except Exception as err:  # noqa: BLE001 - a refusal of any kind: it must say what it is
        text = str(getattr(err, "problems", None) or err)
        assert "not a regular file" in text or "a FIFO" in text, f"{name}: {type(err).__name__}: {text[:400]}"
    assert time.monotonic() - start < 10.0


def test_a_hung_git_costs_its_bound_not_the_run(tmp_path, monkeypatch):
    """A `git` that never answers (a stalled network filesystem, a hook): the run's commit reads `unknown`."""
    from camdf.pipeline import provenance

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 60\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(provenance, "GIT", 0.5)
    start = time.monotonic()
    assert provenance.git_commit(ROOT) == "unknown"
    assert time.monotonic() - start < 5.0


def test_an_expansion_and_a_huge_fanout_are_refused_before_hydra(tmp_path):
    from camdf.pipeline.checks.bounds import JOBLIB, check_config_folders, check_fanout
    from camdf.pipeline.checks.errors import ConfigError

    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    with pytest.raises(ConfigError, match="anchors or aliases"):
        check_config_folders([f"hydra.searchpath=[file://{tmp_path}]"])
    with pytest.raises(ConfigError, match="worker processes"):
        check_fanout({"_target_": JOBLIB, "n_jobs": 100000})
