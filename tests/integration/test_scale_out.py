"""Scale-out: the smoke grid on Hydra's joblib and submitit launchers, two sweeps racing on one
mlflow server, and a SIGKILLed joblib worker; every store ends with exactly one FINISHED run per cell."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from camdf.tracking.client import Tracker

from .test_pipeline import QUIET, ROOT, SMOKE, TABLES, _env, _finished_keys, _run, _strip, _tables

JOBLIB = ["hydra/launcher=parallel", "hydra.launcher.n_jobs=2"]


def _runs(uri: str, out: Path, status: str, experiment: str = "camdf") -> list:
    return Tracker(uri, experiment, str(out / "mlartifacts")).runs(status=status)


@pytest.fixture(scope="module")
def reference(smoke_reference):
    """The smoke grid on Hydra's basic launcher (cells in turn, one process): tables and wall time.

    The session's reference sweep (tests/integration/conftest.py), which tests/integration/test_pipeline.py
    compares against too.
    """
    return _strip(smoke_reference.tables), smoke_reference.wall


@pytest.mark.parametrize("launcher, target", [
    ("parallel", "hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
    ("slurm", "hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
    ("slurm_local", "hydra_submitit_launcher.submitit_launcher.LocalLauncher"),
])
def test_launcher_configs_compose_on_the_plugin_schemas(launcher, target):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=[f"hydra/launcher={launcher}", "experiment=smoke"],
                      return_hydra_config=True)
    assert cfg.hydra.launcher._target_ == f"hydra_plugins.{target}"


def test_ray_launcher_config_extends_the_plugin_and_forwards_the_store():
    """The Ray extra is optional (not installed by make setup), so its config is checked as a file."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(ROOT / "conf" / "hydra" / "launcher" / "ray_cluster.yaml")
    assert list(cfg.defaults) == ["ray"]
    assert cfg.ray.init.address == "auto"
    assert OmegaConf.to_yaml(cfg).count("MLFLOW_TRACKING_URI") == 2  # forwarded to every Ray worker
    assert cfg.ray.remote.max_retries >= 1


@pytest.mark.slow  # make test-full: keeps make test (CI) well under 15 minutes
def test_joblib_two_workers_give_the_tables_of_the_basic_launcher(tmp_path, data_dir, reference):
    out = tmp_path / "out"
    start = time.time()
    proc = _run([*SMOKE, *JOBLIB], out, data_dir)
    wall = time.time() - start
    assert proc.stdout.count("logged run") == 4
    keys = _finished_keys(f"sqlite:///{out}/mlflow.db")
    assert len(keys) == 4 and len(set(keys)) == 4
    _run(TABLES, out, data_dir)
    assert _strip(_tables(out / "tables")) == reference[0]
    print(f"smoke grid wall time: basic {reference[1]:.1f} s, joblib n_jobs=2 {wall:.1f} s, "
          f"ratio {wall / reference[1]:.2f}")


@pytest.mark.slow  # make test-full: keeps make test (CI) well under 15 minutes
def test_submitit_local_launcher_runs_the_smoke_grid(tmp_path, data_dir, reference):
    out = tmp_path / "out"
    proc = _run([*SMOKE, "hydra/launcher=slurm_local", "hydra.launcher.timeout_min=10"], out, data_dir, check=False)
    logs = "".join(p.read_text()[-1500:] for p in out.rglob(".submitit/*/*_log.*"))
    assert proc.returncode == 0, proc.stderr[-3000:] + logs
    assert len(list(out.rglob(".submitit/*/*_result.pkl"))) == 4  # four jobs, each pickled and run by submitit
    uri = f"sqlite:///{out}/mlflow.db"  # the jobs found MLFLOW_TRACKING_URI in their environment
    keys = _finished_keys(uri)
    assert len(keys) == 4 and len(set(keys)) == 4
    _run(TABLES, out, data_dir)
    assert _strip(_tables(out / "tables")) == reference[0]


def test_two_concurrent_sweeps_on_one_server_compute_each_cell_once(server, tmp_path, data_dir, reference):
    # The session's server is shared: this test's runs go to an experiment of their own.
    experiment = "race"
    procs = []
    for name in ("a", "b"):
        out = tmp_path / name
        cmd = [sys.executable, "-m", *SMOKE, f"tracking.experiment={experiment}", f"paths.output_dir={out}",
               f"paths.data_dir={data_dir}", *QUIET]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=_env(out, server), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outputs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        outputs.append(stdout)
    logged = sum(o.count("logged run") for o in outputs)
    reused = sum(o.count("reused FINISHED run") for o in outputs)
    assert (logged, reused) == (4, 4)  # each cell computed by one sweep and reused by the other
    keys = _finished_keys(server, experiment)
    assert len(keys) == 4 and len(set(keys)) == 4
    assert _runs(server, tmp_path, "RUNNING", experiment) == []
    _run([*TABLES, f"tracking.experiment={experiment}"], tmp_path / "a", data_dir, uri=server)
    assert _strip(_tables(tmp_path / "a" / "tables")) == reference[0]


@pytest.mark.slow  # make test-full: keeps make test (CI) well under 15 minutes
def test_sigkill_of_a_joblib_worker_mid_cell_then_rerun_loses_and_duplicates_nothing(tmp_path, data_dir, reference):
    out = tmp_path / "out"
    uri = f"sqlite:///{out}/mlflow.db"
    cmd = [sys.executable, "-m", *SMOKE, *JOBLIB, f"paths.output_dir={out}", f"paths.data_dir={data_dir}", *QUIET]
    log = tmp_path / "sweep.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(out), stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        victim = None
        deadline = time.time() + 240
        while victim is None and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
            if not Path(out, "mlflow.db").exists():
                continue
            for run in _runs(uri, out, "RUNNING"):  # a claimed cell computed for over a second
                if "claim.ticket" in run.data.tags and time.time() * 1000 - run.info.start_time > 1000:
                    victim = run
                    break
        assert victim is not None, log.read_text()[-3000:]
        os.kill(int(victim.data.tags["claim.pid"]), signal.SIGKILL)
        try:
            proc.wait(timeout=240)  # joblib sees the dead worker and fails the sweep
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode != 0
    assert victim.data.tags["cell_key"] not in _finished_keys(uri)
    rerun = _run([*SMOKE, *JOBLIB], out, data_dir)
    assert rerun.stdout.count("logged run") + rerun.stdout.count("reused FINISHED run") == 4
    keys = _finished_keys(uri)
    assert len(keys) == 4 and len(set(keys)) == 4
    assert _runs(uri, out, "RUNNING") == []
    dead = Tracker(uri, "camdf", str(out / "mlartifacts")).client.get_run(victim.info.run_id)
    assert dead.info.status == "KILLED" and "claim.taken_over_by" in dead.data.tags
    _run(TABLES, out, data_dir)
    assert _strip(_tables(out / "tables")) == reference[0]
