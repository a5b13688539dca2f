"""Code through an interpolation, files through Hydra (issue 51, points 1 and 2): the gates (camdf/pipeline/checks/gates.py)
see a config as Hydra will instantiate it and every file Hydra writes for it.

Two generated families, each set by a config folder on ``hydra.searchpath`` (a user's domain or experiment file,
the way the audit reached them) and checked by the gate the stages call before Hydra starts (:func:`preflight`,
in-process, real Hydra and OmegaConf):

- every node-making resolver variant (``oc.create``, ``oc.decode``, nested, escaped, spaced, an interpolated
  resolver name) at every user-reachable position is refused in one line naming the key, and its payload (code that
  would make a marker folder) never runs;
- every key naming a file or folder Hydra writes (a logging handler's ``filename`` with mode ``w`` or ``a``, the run,
  sweep and job folders, ``.hydra/``) pointed outside ``paths.output_dir`` is refused in one line naming the key, and
  the file there keeps its bytes.

A few cases run the real stage as a subprocess, to see that the gate is the one in front of Hydra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.pipeline.checks.gates import calls_node_resolver, check_tree
from camdf.pipeline.checks.preflight import preflight
from camdf.pipeline.checks.errors import ConfigError

from .test_gates_hostile import _refused

ROOT = Path(__file__).resolve().parents[3]
BYTES = b"precious bytes, never to be emptied\n"


def _outputs(tmp_path: Path) -> list[str]:
    return [f"paths.output_dir={tmp_path}/out", f"paths.data_dir={tmp_path}/data"]


def _yaml_node(node: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in node.items()) + "}"


# -- code through an interpolation ------------------------------------------------------------------------------

def _payload(marker: Path) -> str:
    """A flow node that makes ``marker`` (``os.makedirs(name=marker)``) if Hydra instantiates it."""
    return _yaml_node({"_target_": "os.makedirs", "name": str(marker)})


#: (name, YAML text of a value) of every way a string can become a node: each a single-quoted YAML scalar, so
#: the text reaches OmegaConf as written (a backslash included).
VARIANTS = [
    ("create", lambda m: f"'${{oc.create:{_payload(m)}}}'"),
    ("decode", lambda m: f"'${{oc.decode:\"{_payload(m)}\"}}'"),
    ("nested", lambda m: f"'${{oc.select:no.such.key,${{oc.create:{_payload(m)}}}}}'"),
    ("escaped", lambda m: f"'\\${{oc.create:{_payload(m)}}}'"),
    ("spaced", lambda m: f"'${{ oc.create : {_payload(m)} }}'"),
    ("named", lambda m: f"'${{${{gate_test.resolver}}:{_payload(m)}}}'"),
]

#: (stage, config group, position written as its YAML under the group's package, key named in the refusal).
POSITIONS = [
    ("data", "domain", "converter:\n  never_acquirable: {v}\n", "domain.converter.never_acquirable"),
    ("data", "domain", "converter:\n  folder: {v}\n", "domain.converter.folder"),
    ("data", "domain", "converter: {v}\n", "domain.converter"),
    ("evaluate", "experiment", "cost:\n  params:\n    x: {v}\n", "cost.params.x"),
    ("evaluate", "experiment", "scorer:\n  params: {v}\n", "scorer.params"),
    ("evaluate", "experiment", "hydra:\n  callbacks:\n    sweep_run: {v}\n", "hydra.callbacks.sweep_run"),
    ("evaluate", "experiment", "hydra:\n  callbacks:\n    evil: {v}\n", "hydra.callbacks.evil"),
    ("train", "experiment", "hydra:\n  job_logging:\n    handlers:\n      console: {v}\n",
     "hydra.job_logging.handlers.console"),
]

INTERPOLATIONS = [(s, g, body, key, name, value) for s, g, body, key in POSITIONS for name, value in VARIANTS]


def _config_folder(tmp_path: Path, group: str, body: str) -> list[str]:
    """A config folder on the search path holding ``<group>/evil.yaml`` (a copy of the user domain, or a global
    experiment) with ``body`` merged in; the overrides that select it."""
    folder = tmp_path / "conf" / group
    folder.mkdir(parents=True)
    if group == "domain":
        text = f"defaults:\n  - user_example\n  - _self_\n\nname: evil\n{body}"
    else:
        text = f"# @package _global_\ngate_test:\n  resolver: oc.create\n{body}"
    (folder / "evil.yaml").write_text(text)
    return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", f"{group}=evil"]


@pytest.mark.parametrize("stage, group, body, key, name, value", INTERPOLATIONS,
                         ids=[f"{k}-{n}" for _, _, _, k, n, _ in INTERPOLATIONS])
def test_no_interpolation_makes_a_node(stage, group, body, key, name, value, tmp_path, capsys):
    marker = tmp_path / "ran"
    argv = _config_folder(tmp_path, group, body.format(v=value(marker)))
    line = _refused(capsys, stage, [*argv, *_outputs(tmp_path)], f"error: {key}:", "node-making resolver")
    assert "oc.create" in line and "oc.decode" in line
    assert not marker.exists()


COMMAND_LINE = [
    ("data", ["domain=user_example", "domain.converter.never_acquirable='${{oc.create:{p}}}'"],
     "domain.converter.never_acquirable"),
    ("data", ["domain=user_example", "domain.converter.folder='${{oc.decode:\"{p}\"}}'"], "domain.converter.folder"),
    ("evaluate", ["+scorer.params.x='${{oc.select:a.b,${{oc.create:{p}}}}}'"], "scorer.params.x"),
    ("evaluate", ["-m", "cost.lam=0.04,'${{oc.create:{p}}}'"], "cost.lam"),
]


@pytest.mark.parametrize("stage, argv, key", COMMAND_LINE, ids=[f"{k}-{i}" for i, (_, _, k) in enumerate(COMMAND_LINE)])
def test_no_command_line_value_makes_a_node(stage, argv, key, tmp_path, capsys):
    marker = tmp_path / "ran"
    _refused(capsys, stage, [a.format(p=_payload(marker)) for a in argv] + _outputs(tmp_path), f"error: {key}:",
             "node-making resolver")
    assert not marker.exists()


def test_a_job_config_is_checked_as_it_resolves():
    """The schema's check of a job (a sweep's jobs included): a node made by an interpolation is refused there too,
    as is one an escaped interpolation would make when Hydra's ``instantiate`` resolves the value again."""
    from omegaconf import OmegaConf

    for text in ("${oc.create:{_target_: os.makedirs}}", "\\${oc.create:{_target_: os.makedirs}}"):
        cfg = OmegaConf.create({"domain": {"converter": {"_target_": "camdf.data.io.read_domain", "folder": text}}})
        with pytest.raises(ConfigError, match=r"^domain\.converter\.folder: expected a value that calls no"):
            check_tree(cfg, OmegaConf.to_container(cfg, resolve=True))


@pytest.mark.parametrize("text", ["/a/${paths.root_dir}/b", "${oc.env:HOME,/tmp}", "${now:%Y}", "plain",
                                  "${oc.select:a.b,c}", "${camdf_root:}"])
def test_a_resolver_that_makes_no_node_passes(text):
    assert not calls_node_resolver(text)


# -- files Hydra writes -----------------------------------------------------------------------------------------

def _handler(victim: Path, mode: str, factory: str = "class") -> str:
    return _yaml_node({factory: "logging.FileHandler", "filename": str(victim), "mode": mode})


#: (name, YAML under the experiment's global package with {victim}, key named in the refusal).
WRITES = [
    *[(f"job-file-{mode}", f"hydra:\n  job_logging:\n    handlers:\n      file: {{handler_{mode}}}\n",
       "hydra.job_logging.handlers.file.filename") for mode in ("w", "a")],
    *[(f"job-new-{mode}", "hydra:\n  job_logging:\n    handlers:\n      evil: {handler_%s}\n"
       "    root:\n      handlers: [console, evil]\n" % mode, "hydra.job_logging.handlers.evil.filename")
      for mode in ("w", "a")],
    ("job-factory-w", "hydra:\n  job_logging:\n    handlers:\n      evil: {factory_w}\n",
     "hydra.job_logging.handlers.evil.filename"),
    *[(f"hydra-logging-{mode}", "hydra:\n  hydra_logging:\n    handlers:\n      evil: {handler_%s}\n"
       "    root:\n      handlers: [console, evil]\n" % mode, "hydra.hydra_logging.handlers.evil.filename")
      for mode in ("w", "a")],
    ("job-file-runtime", "hydra:\n  job_logging:\n    handlers:\n      file:\n"
     "        filename: ${{hydra:runtime.cwd}}/../victim.log\n", "hydra.job_logging.handlers.file.filename"),
    ("run-dir-runtime", "hydra:\n  run:\n    dir: ${{hydra:runtime.cwd}}/..\n", "hydra.run.dir"),
    ("output-subdir", "hydra:\n  output_subdir: {victim_dir}\n", "hydra.output_subdir"),
    ("sweep-subdir", "hydra:\n  sweep:\n    subdir: {victim_dir}\n", "hydra.sweep.subdir"),
    ("sweep-subdir-up", "hydra:\n  sweep:\n    subdir: ../../../../../../../..{victim_dir}\n", "hydra.sweep.subdir"),
]


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victims" / "victim.log"
    victim.parent.mkdir()
    victim.write_bytes(BYTES)
    return victim


def _write_experiment(tmp_path: Path, body: str) -> list[str]:
    victim = tmp_path / "victims" / "victim.log"
    text = body.format(victim_dir=victim.parent, handler_w=_handler(victim, "w"), handler_a=_handler(victim, "a"),
                       factory_w=_handler(victim, "w", "()"))
    return _config_folder(tmp_path, "experiment", text)


@pytest.mark.parametrize("name, body, key", WRITES, ids=[w[0] for w in WRITES])
def test_no_config_names_a_file_outside_the_outputs(name, body, key, tmp_path, capsys):
    victim = _victim(tmp_path)
    argv = [*(["-m"] if "sweep" in name else []), *_write_experiment(tmp_path, body), *_outputs(tmp_path)]
    _refused(capsys, "evaluate", argv, f"error: {key}:", "paths.output_dir")
    assert victim.read_bytes() == BYTES and sorted(p.name for p in victim.parent.iterdir()) == ["victim.log"]


def test_hydra_s_own_files_inside_the_outputs_pass(tmp_path, capsys):
    """The shipped logging (a file in the run folder) and a handler writing inside the outputs pass."""
    inside = tmp_path / "out" / "extra.log"
    argv = _config_folder(tmp_path, "experiment", "hydra:\n  job_logging:\n    handlers:\n      evil: "
                          + _handler(inside, "w") + "\n")
    for extra in ([], ["-m"]):
        preflight("evaluate", [*extra, *argv, *_outputs(tmp_path)])
        assert capsys.readouterr().err == ""


# -- end to end: the gate is in front of Hydra ------------------------------------------------------------------

def _stage(stage: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "cwd").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return subprocess.run([sys.executable, "-m", f"pipelines.{stage}", *argv, *_outputs(tmp_path)],
                          cwd=tmp_path / "cwd", env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("variant", ["create", "escaped"])
def test_a_converter_argument_never_runs_code_in_the_data_stage(variant, tmp_path):
    marker = tmp_path / "ran"
    value = dict(VARIANTS)[variant](marker)
    argv = _config_folder(tmp_path, "domain", f"converter:\n  never_acquirable: {value}\n")
    proc = _stage("data", argv, tmp_path)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith("error: domain.converter.never_acquirable:"), proc.stderr
    assert not (tmp_path / "data").exists()


def test_a_logging_config_on_the_search_path_never_empties_a_file(tmp_path):
    victim = _victim(tmp_path)
    folder = tmp_path / "conf" / "hydra" / "job_logging"
    folder.mkdir(parents=True)
    (folder / "evil.yaml").write_text(
        "version: 1\nhandlers:\n  file: " + _handler(victim, "w") + "\nroot:\n  handlers: [file]\n")
    proc = _stage("data", [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "hydra/job_logging=evil"], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith("error: hydra.job_logging.handlers.file.filename:"), proc.stderr
    assert victim.read_bytes() == BYTES


# -- every value of a sweep, not only the first -----------------------------------------------------------------

def _evil_logging(tmp_path: Path, victim: Path) -> str:
    folder = tmp_path / "conf" / "hydra" / "job_logging"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil.yaml").write_text(
        "version: 1\nhandlers:\n  file: " + _handler(victim, "w") + "\nroot:\n  handlers: [file]\n")
    return f"hydra.searchpath=[file://{tmp_path / 'conf'}]"


def _sweep_logging(tmp_path, victim):
    return [_evil_logging(tmp_path, victim), "hydra/job_logging=default,evil"]


def _sweep_experiment(tmp_path, victim):
    searchpath, choice = _write_experiment(tmp_path, WRITES[0][1])
    return [searchpath, "experiment=smoke," + choice.split("=")[1]]


def _sweeper_params(tmp_path, victim):
    searchpath = _evil_logging(tmp_path, victim)
    folder = tmp_path / "conf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "evil.yaml").write_text("# @package _global_\nhydra:\n  sweeper:\n    params:\n"
                                      "      hydra/job_logging: default,evil\n")
    return [searchpath, "experiment=evil"]


def _sweep_subdir(tmp_path, victim):
    return [f"hydra.sweep.subdir=a,{victim.parent}"]


#: (name, the sweep's overrides given tmp_path and the victim file, the key named): the hostile value is never first.
SWEEPS = [("logging-group", _sweep_logging, "hydra.job_logging.handlers.file.filename"),
          ("experiment-group", _sweep_experiment, "hydra.job_logging.handlers.file.filename"),
          ("sweeper-params", _sweeper_params, "hydra.job_logging.handlers.file.filename"),
          ("sweep-subdir", _sweep_subdir, "hydra.sweep.subdir")]


@pytest.mark.parametrize("name, overrides, key", SWEEPS, ids=[s[0] for s in SWEEPS])
def test_every_value_of_a_sweep_is_checked_not_only_the_first(name, overrides, key, tmp_path, capsys):
    victim = _victim(tmp_path)
    _refused(capsys, "evaluate", ["-m", *overrides(tmp_path, victim), *_outputs(tmp_path)], f"error: {key}:",
             "paths.output_dir")
    assert victim.read_bytes() == BYTES


def test_a_sweep_value_that_makes_a_node_is_refused_and_never_runs(tmp_path, capsys):
    marker = tmp_path / "ran"
    searchpath, choice = _config_folder(tmp_path, "experiment",
                                        f"hydra:\n  callbacks:\n    evil: {dict(VARIANTS)['create'](marker)}\n")
    _refused(capsys, "evaluate", ["-m", searchpath, "experiment=smoke," + choice.split("=")[1], *_outputs(tmp_path)],
             "hydra.callbacks.evil")
    assert not marker.exists()


def test_a_sweep_of_the_shipped_configs_passes(tmp_path, capsys):
    """Every value composed and checked: the shipped groups and the defaults' logging pass."""
    out = preflight("evaluate", ["-m", "experiment=smoke,a18", "scorer=bm25,dense", "hydra/job_logging=default,none",
                                 *_outputs(tmp_path)])
    assert out.output_dir == f"{tmp_path}/out" and out.composed_whole and capsys.readouterr().err == ""
