"""What a config may ask of this machine (issue 51, point 4; camdf/pipeline/checks/bounds.py): a config folder on the
search path holding a YAML alias bomb, a FIFO, a huge file or a whole tree, a value whose interpolations expand
past a bound (camdf/pipeline/checks/interpolation.py: check_expansion), and a local launcher asking for more
worker processes than cores, are each refused before Hydra composes or launches anything: one line, exit 2,
within seconds, nothing made.

Each case runs the gates (:func:`camdf.pipeline.checks.gates.preflight`) as a stage does before Hydra starts; the
alias bomb and the FIFO also run as a real stage process under a time bound (before the change the bomb was
still composing at 120 s and the FIFO blocked the read forever).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from camdf.pipeline.checks import bounds

from .test_gates_hostile import _refused
from .test_interpolation_gates_hostile import _outputs

ROOT = Path(__file__).resolve().parents[3]
#: Seconds a refused stage process may take on a busy 2-core machine (imports and Hydra's own start included).
BOUND = 60.0


def _bomb(lines: int = 10) -> str:
    """A YAML file whose ``lines`` lines each hold nine aliases of the line above: 9**lines nodes expanded."""
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, lines):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n"
    return text


def _expansion(ref: str, where: str = "scorer.params", levels: int = 10, repeats: int = 9) -> dict[str, str]:
    """Keys ``a0`` .. ``a<levels-1>`` under ``where``, each the one above it ``repeats`` times through the reference
    ``ref`` (``{key}``: the full key, ``{name}``: the key's own name): 10 * 9**9 characters at the last, no alias."""
    out = {f"{where}.a0": "x" * 10}
    for i in range(1, levels):
        out[f"{where}.a{i}"] = ref.format(key=f"{where}.a{i - 1}", name=f"a{i - 1}") * repeats
    return out


#: (case, the reference each level repeats, whether each level is a list of the references).
EXPANSIONS = [("absolute", "${{{key}}}", False), ("relative", "${{.{name}}}", False),
              ("oc.select", "${{oc.select:{key},z}}", False), ("in a list", "${{{key}}}", True)]


def _expansion_yaml(ref: str, as_list: bool = False) -> str:
    lines = ["# @package _global_", "scorer:", "  params:"]
    for key, value in _expansion(ref, repeats=1 if as_list else 9).items():
        name = key.rsplit(".", 1)[1]
        lines.append(f"    {name}: [{', '.join([repr(value)] * 9)}]" if as_list and name != "a0" else
                     f"    {name}: '{value}'")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case, ref, as_list", EXPANSIONS, ids=[e[0] for e in EXPANSIONS])
def test_a_value_whose_interpolations_expand_past_the_bound_is_refused_unresolved(case, ref, as_list, tmp_path,
                                                                                  capsys):
    """Ten lines, no YAML alias: before the check the gate itself was still resolving at 30 s."""
    conf = _folder(tmp_path, "evil", _expansion_yaml(ref, as_list))
    start = time.monotonic()
    line = _refused(capsys, "evaluate", [f"hydra.searchpath=[file://{conf}]", "experiment=evil", *_outputs(tmp_path)],
                    "scorer.params.a", "at most 1,000,000 characters")
    assert time.monotonic() - start < BOUND, line
    assert not (tmp_path / "out").exists()


def test_an_expansion_on_the_command_line_is_refused(tmp_path, capsys):
    argv = [f"+{k}={v}" if k.endswith("a0") else f"+{k}='{v}'" for k, v in _expansion("${{{key}}}", "x").items()]
    _refused(capsys, "evaluate", [*argv, *_outputs(tmp_path)], "x.a", "at most 1,000,000 characters")


def test_interpolations_that_stay_small_pass_the_expansion_check():
    from camdf.pipeline.checks.interpolation import check_expansion

    check_expansion({"paths": {"root": "/r", "out": "${paths.root}/outputs", "log": "${.out}/log"},
                     "a": "${paths.out}${paths.log}", "cycle": {"x": "${cycle.y}", "y": "${cycle.x}"}})


def _folder(tmp_path: Path, name: str, body: str | None) -> Path:
    """``conf/experiment/<name>.yaml`` with ``body`` (None: left for the caller to make); the conf folder."""
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True, exist_ok=True)
    if body is not None:
        (conf / "experiment" / f"{name}.yaml").write_text(body)
    return conf


#: (case, YAML text of conf/experiment/evil.yaml, text the one line names besides the file).
FILES = [
    ("alias bomb", "# @package _global_\n" + _bomb(), "&a0"),
    ("one anchor, no alias", "# @package _global_\ncost: &c\n  lam: 0.04\n", "&c"),
    ("alias in a flow map", "# @package _global_\nbase: &b {lam: 0.04}\ncost: *b\n", "&b"),
    ("merge key", "# @package _global_\nbase: &b {lam: 0.04}\ncost:\n  <<: *b\n", "&b"),
    ("huge file", "# @package _global_\n" + "x: 1\n" * (bounds.MAX_BYTES // 5 + 10), "bytes"),
]


@pytest.mark.parametrize("case, body, named", FILES, ids=[f[0] for f in FILES])
def test_a_config_folder_hydra_could_not_compose_in_bounded_time_is_refused(case, body, named, tmp_path, capsys):
    conf = _folder(tmp_path, "evil", body)
    line = _refused(capsys, "evaluate", [f"hydra.searchpath=[file://{conf}]", "experiment=evil",
                                         *_outputs(tmp_path)], str(conf / "experiment" / "evil.yaml"), named)
    if case != "huge file":
        assert ".yaml:2:" in line or ".yaml:3:" in line or ".yaml:4:" in line, line  # the line of the anchor
    assert not (tmp_path / "out").exists()


def test_a_fifo_among_the_configs_is_refused_unread(tmp_path, capsys):
    conf = _folder(tmp_path, "evil", None)
    os.mkfifo(conf / "experiment" / "evil.yaml")  # nothing ever writes it: a read would block forever
    _refused(capsys, "evaluate", [f"hydra.searchpath=[file://{conf}]", "experiment=a18", *_outputs(tmp_path)],
             "evil.yaml", "not a regular file")


def test_a_tree_too_large_to_be_a_config_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_ENTRIES", 50)
    conf = _folder(tmp_path, "ok", "# @package _global_\n")
    for i in range(60):
        (conf / f"f{i}.txt").write_text("")
    _refused(capsys, "evaluate", [f"hydra.searchpath=[file://{conf}]", *_outputs(tmp_path)], "hydra.searchpath",
             "at most 50 entries")


def test_a_plain_config_folder_passes(tmp_path, capsys):
    conf = _folder(tmp_path, "mine", "# @package _global_\ncost:\n  lam: 0.04\n")
    (conf / "experiment" / "notes.txt").write_text("&not *yaml")  # only YAML files are read
    from camdf.pipeline.checks.preflight import preflight

    checked = preflight("evaluate", [f"hydra.searchpath=[file://{conf}]", *_outputs(tmp_path)])
    assert checked.output_dir == f"{tmp_path}/out"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("n_jobs", ["100000", str(bounds.cores() + 1), "0", f"-{bounds.cores() + 1}"])
def test_a_launcher_asking_for_more_workers_than_cores_is_refused(n_jobs, tmp_path, capsys):
    line = _refused(capsys, "evaluate", ["-m", "experiment=smoke", "hydra/launcher=parallel",
                                         f"hydra.launcher.n_jobs={n_jobs}", *_outputs(tmp_path)],
                    "error: hydra.launcher.n_jobs:", f"1 to {bounds.cores()} worker processes")
    assert n_jobs in line


@pytest.mark.parametrize("n_jobs", ["1", str(bounds.cores()), "-1"])
def test_a_launcher_within_the_cores_passes(n_jobs, tmp_path, capsys):
    from camdf.pipeline.checks.preflight import preflight

    argv = ["-m", "experiment=smoke", "hydra/launcher=parallel", f"hydra.launcher.n_jobs={n_jobs}",
            *_outputs(tmp_path)]
    assert preflight("evaluate", argv).output_dir == f"{tmp_path}/out"
    assert capsys.readouterr().err == ""


#: Sweeps on submitit's local executor (``hydra/launcher=slurm_local``), which starts every job at once: the
#: smoke grid's 4 jobs, and sweeps past the limit (:func:`bounds.local_jobs_limit`) from the command line alone
#: and with the experiment's own params.
LAMBDAS = ",".join(f"0.{i:02d}" for i in range(1, bounds.local_jobs_limit() + 2))


@pytest.mark.parametrize("argv, jobs", [(["experiment=smoke", f"cost.lam={LAMBDAS}"], 2 * (bounds.local_jobs_limit() + 1)),
                                        ([f"cost.lam={LAMBDAS}"], bounds.local_jobs_limit() + 1)],
                         ids=["with the experiment's params", "command line alone"])
def test_a_local_submitit_sweep_past_the_limit_is_refused(argv, jobs, tmp_path, capsys):
    line = _refused(capsys, "evaluate", ["-m", "hydra/launcher=slurm_local", *argv, *_outputs(tmp_path)],
                    "error: hydra/launcher:", f"at most {bounds.local_jobs_limit()} jobs", f"this sweep has {jobs}")
    assert "hydra/launcher=parallel" in line


def test_a_local_submitit_sweep_within_the_limit_passes_and_shares_the_memory(tmp_path, capsys):
    from camdf.pipeline.checks.preflight import preflight

    argv = ["-m", "experiment=smoke", "hydra/launcher=slurm_local", *_outputs(tmp_path)]
    assert preflight("evaluate", argv).output_dir == f"{tmp_path}/out"
    assert capsys.readouterr().err == ""
    local = {"_target_": bounds.SUBMITIT_LOCAL}
    assert bounds.workers(local) == bounds.local_jobs_limit()  # each job held to memory / limit, not all of it
    assert bounds.memory_share(bounds.workers(local)) <= bounds.memory_bytes() // bounds.local_jobs_limit()


def test_a_failed_local_submitit_job_is_its_own_line(tmp_path):
    """A job that stops (here: its domain is not built) surfaced as submitit's UncompletedJobError, 'internal
    error' and exit 1; now the job's own line, exit 2."""
    proc = subprocess.run([sys.executable, "-m", "pipelines.evaluate", "-m", "experiment=smoke", "cost.d=1.0",
                           "cost.lam=0.04", "hydra/launcher=slurm_local", *_outputs(tmp_path), "hydra/job_logging=none",
                           "hydra/hydra_logging=none"], cwd=ROOT, capture_output=True, text=True, timeout=BOUND * 3)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and "of the sweep (submitit) stopped:" in lines[0] and "is not built" in lines[0], lines


@pytest.mark.parametrize("case", ["alias bomb", "fifo", "interpolation expansion"])
def test_a_stage_process_refuses_within_seconds(case, tmp_path):
    body = {"alias bomb": "# @package _global_\n" + _bomb(), "fifo": None,
            "interpolation expansion": _expansion_yaml("${{{key}}}")}[case]
    conf = _folder(tmp_path, "evil", body)
    if case == "fifo":
        os.mkfifo(conf / "experiment" / "evil.yaml")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pipelines.evaluate", f"hydra.searchpath=[file://{conf}]",
                           "experiment=evil", *_outputs(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=BOUND * 3)
    assert time.monotonic() - start < BOUND
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    named = "scorer.params.a" if case == "interpolation expansion" else "evil.yaml"
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


# -- memory: each job held to its share of the machine -----------------------------------------------------------

@pytest.mark.parametrize("launcher, n_jobs, expected", [
    ({"_target_": bounds.JOBLIB, "n_jobs": 2}, None, min(2, bounds.cores())),
    ({"_target_": bounds.JOBLIB, "n_jobs": -1}, None, bounds.cores()),
    ({"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}, None, 1),
    (None, None, 1)])
def test_a_job_s_memory_share_is_the_machine_over_its_workers(launcher, n_jobs, expected, monkeypatch):
    monkeypatch.delenv(bounds.MEMORY_ENV, raising=False)
    assert bounds.workers(launcher) == expected
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert bounds.memory_share(expected) == total // expected
    monkeypatch.setenv(bounds.MEMORY_ENV, "512")
    assert bounds.memory_share(expected) == min(512 << 20, total // expected)


@pytest.mark.parametrize("value", ["", "abc", "0", "-5", "1.5", "1e3"])
def test_a_memory_setting_that_is_not_mib_is_refused(value, monkeypatch):
    monkeypatch.setenv(bounds.MEMORY_ENV, value)
    with pytest.raises(bounds.ConfigError, match=f"^{bounds.MEMORY_ENV}: expected a positive whole number of MiB"):
        bounds.memory_share(1)


@pytest.mark.parametrize("stage", ["data", "evaluate-parallel"])
def test_a_job_over_its_memory_share_stops_in_one_line(stage, tmp_path, data_dir):
    """A share below what a job needs (150 MiB: its imports pass it) stops the job in the process that runs it
    (the stage's, or a joblib worker's), with one line naming the share and the setting, and exit 1."""
    args = (["pipelines.data", "domain=retail", *_outputs(tmp_path)] if stage == "data" else
            ["pipelines.evaluate", "-m", "experiment=smoke", "hydra/launcher=parallel", "hydra.launcher.n_jobs=1",
             f"paths.output_dir={tmp_path}/out", f"paths.data_dir={data_dir}"])
    env = {**os.environ, bounds.MEMORY_ENV: "150"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=BOUND * 3)
    assert proc.returncode == 1, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors and all(e == errors[0] for e in errors), proc.stderr[-2000:]
    assert errors[0].startswith("error: out of memory: ") and "this job may use 0.1 GiB" in errors[0]
    assert "hydra.launcher.n_jobs" in errors[0] and bounds.MEMORY_ENV in errors[0]
    assert "Traceback" not in proc.stderr


def test_a_share_stop_that_lands_in_a_finalizer_is_not_printed_and_fires_again(monkeypatch, capsys):
    """The watcher's stop is raised by a signal wherever the main thread is; in a finalizer (a weakref callback of
    a library's garbage, a ``__del__``) Python would drop it and print 'Exception ignored' with a traceback (CI saw
    it inside SQLAlchemy's collection callback): instead it is not printed and the watcher raises it again."""
    import gc
    import signal

    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored after the test
    monkeypatch.setitem(bounds._WATCH, "share", None)
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the test's process keeps its own SIGUSR1
    assert bounds.cap_memory(None) is not None  # the hook is installed (once)
    bounds._WATCH["fired"] = True

    class Garbage:
        def __del__(self):
            bounds._exceeded(None, None)  # as if the signal arrived while the finalizer ran

    Garbage()
    gc.collect()
    assert "Exception ignored" not in capsys.readouterr().err
    assert bounds._WATCH["fired"] is False  # the watcher fires again at its next poll
    bounds.release_memory()
