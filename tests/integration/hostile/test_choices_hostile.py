"""A config-group choice naming no config (``domain=nope``, ``domain=../data``, ``experiment=nope``) stops every
stage with one line naming the group and the choices, exit 2, before Hydra composes or anything is written."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("stage,override,group", [
    ("pipelines.data", "domain=nope", "domain"),
    ("pipelines.data", "domain=../data", "domain"),
    ("pipelines.data", "domain=retail,nope", "domain"),
    ("pipelines.evaluate", "experiment=nope", "experiment"),
    ("pipelines.train", "scorer=nope", "scorer"),
    ("pipelines.scores", "domain=/etc/passwd", "domain"),
])
def test_a_choice_naming_no_config_is_one_line_and_exit_2(stage, override, group, tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    args = [sys.executable, "-m", stage, *(["-m"] if "," in override else []), override,
            f"paths.output_dir={out}", f"paths.data_dir={data}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # run from an empty folder, to see that nothing lands there
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    value = override.split("=", 1)[1].split(",")[-1]
    assert proc.stderr.startswith(f"error: {group}: no config {value!r} (expected one of "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no output folder, no data folder, nothing in the working folder


def test_a_choice_from_another_search_path_is_hydras_to_find(tmp_path):
    conf = tmp_path / "conf" / "domain"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text((ROOT / "conf" / "domain" / "user_example.yaml").read_text()
                                    .replace("name: user_example", "name: mine"))
    proc = subprocess.run([sys.executable, "-m", "pipelines.data", "domain=mine",
                           f"hydra.searchpath=[file://{tmp_path / 'conf'}]", f"paths.output_dir={tmp_path / 'out'}",
                           f"paths.data_dir={tmp_path / 'data'}", "hydra/job_logging=none", "hydra/hydra_logging=none"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data" / "mine" / "tasks.jsonl").is_file()
