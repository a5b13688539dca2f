"""Code, paths and secrets by construction (camdf/pipeline/checks/gates.py): every position Hydra instantiates, every path
a stage writes, every environment value a name or a message could carry.

Most cases call the gate the stages call before Hydra starts (:func:`preflight`, in-process: it is the only
place these values are looked at before Hydra acts on them); a few run the real stage as a subprocess with a
payload that would leave a marker folder if it ran, to see that the gate is the one in front of Hydra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.common.uri import safe_uri
from camdf.pipeline.checks.preflight import preflight

ROOT = Path(__file__).resolve().parents[3]


def _refused(capsys, stage: str, argv: list[str], *names: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        preflight(stage, argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(n in lines[0] for n in names), err
    return lines[0]


def _payload(marker: Path, key: str) -> list[str]:
    """``key`` set to code that would make ``marker`` (``os.makedirs(name=marker)``) if Hydra instantiated it."""
    return [f"+{key}._target_=os.makedirs", f"+{key}.name={marker}"]


#: Every place Hydra (or a stage) instantiates or imports a config's code, as a command line would set it.
POSITIONS = [
    ("data", lambda m: _payload(m, "hydra.callbacks.evil"), "hydra.callbacks.evil._target_"),
    ("evaluate", lambda m: ["hydra.callbacks.sweep_run._target_=os.makedirs"], "hydra.callbacks.sweep_run._target_"),
    ("evaluate", lambda m: ["~hydra.callbacks.check_sweep"], "hydra.callbacks.check_sweep"),
    ("evaluate", lambda m: ["hydra.launcher._target_=os.makedirs"], "hydra.launcher._target_"),
    ("evaluate", lambda m: ["hydra.sweeper._target_=os.makedirs"], "hydra.sweeper._target_"),
    ("train", lambda m: ["hydra.job_logging.handlers.console.class=os.makedirs"], "hydra.job_logging"),
    ("tables", lambda m: ["hydra.hydra_logging.handlers.console.stream=ext://os.system"], "hydra.hydra_logging"),
    ("scores", lambda m: ["hydra.launcher.setup=[touch x]"], "hydra.launcher.setup"),
    ("data", lambda m: ["domain=user_example", "domain.converter._target_=os.makedirs"], "domain.converter._target_"),
    ("data", lambda m: ["domain=user_example", f"domain.converter.folder={{_target_:os.makedirs,name:{m}}}"],
     "domain.converter.folder"),
    ("data", lambda m: ["-m", "domain=user_example", "domain.converter._target_=camdf.data.io.read_domain,os.makedirs"],
     "domain.converter._target_"),
    ("evaluate", lambda m: ["cost.params={_target_:os.makedirs}"], "cost.params"),
    ("evaluate", lambda m: ["-m", f"scorer.params=[{{x:{{_target_:os.makedirs,name:{m}}}}}]"], "scorer.params"),
]


@pytest.mark.parametrize("stage, argv, key", POSITIONS, ids=[k + f"-{i}" for i, (_, _, k) in enumerate(POSITIONS)])
def test_no_override_names_code(stage, argv, key, tmp_path, capsys):
    marker = tmp_path / "ran"
    _refused(capsys, stage, argv(marker), key)
    assert not marker.exists()


def test_a_config_file_on_the_search_path_cannot_add_a_callback(tmp_path, capsys):
    exp = tmp_path / "conf" / "experiment"
    exp.mkdir(parents=True)
    (exp / "mine.yaml").write_text("# @package _global_\nhydra:\n  callbacks:\n    evil:\n"
                                   f"      _target_: os.makedirs\n      name: {tmp_path / 'ran'}\n")
    _refused(capsys, "evaluate", [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "experiment=mine"],
             "hydra.callbacks.evil._target_", "allowed targets")


def test_a_config_folder_outside_the_search_path_is_refused(tmp_path, capsys):
    _refused(capsys, "evaluate", ["--config-dir", str(tmp_path)], "--config-dir", "hydra.searchpath")


@pytest.mark.parametrize("argv", [[], ["-m", "cost.lam=0.04,0.12"], ["hydra/launcher=parallel",
                                                                      "hydra.launcher.n_jobs=2"]])
def test_the_shipped_configs_pass(argv, tmp_path, capsys):
    preflight("evaluate", [*argv, f"paths.output_dir={tmp_path}/out", f"paths.data_dir={tmp_path}/data"])
    assert capsys.readouterr().err == ""


# -- paths -----------------------------------------------------------------------------------------------------

PATHS = [
    ("paths.output_dir=123", "paths.output_dir", "absolute path"),
    ("paths.output_dir=outputs2", "paths.output_dir", "absolute path"),
    ("paths.output_dir={root}/camdf", "paths.output_dir", "outside the checkout"),
    ("paths.data_dir={root}/docs", "paths.data_dir", "outside the checkout"),
    ("paths.output_dir={root}/outputs/../conf", "paths.output_dir", "outside the checkout"),
    ("paths.output_dir=/", "paths.output_dir", "does not hold the checkout"),
    ("paths.cache_dir={tmp}/elsewhere", "paths.cache_dir", "inside paths.output_dir"),
    ("paths.log_dir={tmp}/elsewhere", "paths.log_dir", "inside paths.output_dir"),
    ("tracking.artifact_root={tmp}/artifacts", "tracking.artifact_root", "inside paths.output_dir"),
    ("tracking.artifact_root=file://{tmp}/artifacts", "tracking.artifact_root", "inside paths.output_dir"),
    ("tracking.uri=sqlite:///{tmp}/elsewhere.db", "tracking.uri", "inside paths.output_dir"),
    ("paths.root_dir=relative", "paths.root_dir", "absolute path"),
]


@pytest.mark.parametrize("override, key, hint", PATHS, ids=[p[0][:40] for p in PATHS])
def test_every_written_path_is_confined(override, key, hint, tmp_path, capsys):
    argv = [override.format(root=ROOT, tmp=tmp_path)]
    if "output_dir" not in override:
        argv.append(f"paths.output_dir={tmp_path}/out")
    _refused(capsys, "evaluate", argv, key, hint)


def test_a_remote_artifact_root_and_a_store_inside_the_outputs_pass(tmp_path, capsys):
    preflight("train", [f"paths.output_dir={tmp_path}/out", "tracking.artifact_root=s3://bucket/camdf",
                        f"tracking.uri=sqlite:///{tmp_path}/out/mlflow.db"])
    assert capsys.readouterr().err == ""


# -- end to end: the gate is in front of Hydra ------------------------------------------------------------------

def _stage(stage: str, argv: list[str], tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "cwd").mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return subprocess.run([sys.executable, "-m", f"pipelines.{stage}", *argv], cwd=tmp_path / "cwd",
                          env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_a_callback_payload_never_runs_in_a_stage(tmp_path):
    marker = tmp_path / "ran"
    proc = _stage("data", [*_payload(marker, "hydra.callbacks.evil"), f"paths.output_dir={tmp_path}/out",
                           f"paths.data_dir={tmp_path}/data"], tmp_path)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "hydra.callbacks.evil._target_" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd"] and not list((tmp_path / "cwd").iterdir())


def test_a_numeric_output_dir_writes_nothing(tmp_path):
    proc = _stage("data", ["paths.output_dir=123", f"paths.data_dir={tmp_path}/data"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: paths.output_dir: expected an absolute path")
    assert not list((tmp_path / "cwd").iterdir())


# -- secrets -------------------------------------------------------------------------------------------------

def test_a_name_from_the_environment_is_refused_without_showing_it(tmp_path):
    secret = "s3cr3t-value"
    proc = _stage("evaluate", ["tracking.experiment=${oc.env:CAMDF_TEST_SECRET}", f"paths.output_dir={tmp_path}/out",
                               f"paths.data_dir={tmp_path}/data"], tmp_path, env={"CAMDF_TEST_SECRET": secret})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: tracking.experiment: expected a name given in the config itself")
    assert secret not in proc.stderr + proc.stdout


def test_an_environment_value_is_hidden_in_every_message(tmp_path):
    secret = "tok-9f8e7d6c"
    proc = _stage("evaluate", ["+scorer.params.token=${oc.env:CAMDF_TEST_SECRET}", "cost.lam=${oc.env:CAMDF_TEST_LAM}",
                               f"paths.output_dir={tmp_path}/out", f"paths.data_dir={tmp_path}/data"], tmp_path,
                  env={"CAMDF_TEST_SECRET": secret, "CAMDF_TEST_LAM": f"bad-{secret}"})
    assert proc.returncode == 2 and "cost.lam" in proc.stderr, proc.stderr
    assert secret not in proc.stderr + proc.stdout, proc.stderr


def test_a_data_folder_from_the_environment_is_shown_in_a_sweep_of_derived_domains(tmp_path):
    """A derived domain hands the data folder to its converter (``domain.converter.data_dir``); with the folder from
    the environment, every job's message read ``***/airline`` (the folder hidden as a possible secret)."""
    data = tmp_path / "data"
    proc = _stage("evaluate", ["-m", "domain=airline,retail_d100", f"paths.output_dir={tmp_path}/out",
                               "paths.data_dir=${oc.env:CAMDF_TEST_DATA}"], tmp_path, env={"CAMDF_TEST_DATA": str(data)})
    assert proc.returncode != 0 and f"{data}/airline" in proc.stderr and "***" not in proc.stderr, proc.stderr


def test_a_uri_query_and_its_credentials_are_never_shown():
    shown = safe_uri("cannot reach https://ana:pw@h.example/api?token=abc123&x=1 (sqlite:///a.db?mode=ro)")
    assert "abc123" not in shown and "pw@" not in shown and "token=***" in shown


# -- read-only commands never create a store --------------------------------------------------------------------

@pytest.mark.parametrize("state, code", [("missing", 2), ("empty", 1)])
def test_select_never_creates_or_fills_a_store(state, code, tmp_path):
    db = tmp_path / "mlflow.db"
    if state == "empty":
        db.write_bytes(b"")
    request = tmp_path / "request.json"
    request.write_text('{"ranking": ["a"], "costs": {"a": 1.0}, "lam": 0.1}')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{db}"}
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", "runs:/0123abcd/model",
                           "--input", str(request)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and str(db) in proc.stderr, proc.stderr
    assert (not db.exists()) if state == "missing" else db.stat().st_size == 0
