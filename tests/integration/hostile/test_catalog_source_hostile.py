"""The StableToolBench folder, hostile (issue 51): a FIFO among the query files is named and refused, never read
(reading one would block the data stage forever); a missing folder is one line naming it as configured."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.integrations.stabletoolbench.convert import QUERIES, SourceError, convert_solvable_queries

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT.parent / "shared" / "data" / "stabletoolbench"


@pytest.fixture
def catalog(tmp_path):
    if not (SOURCE / QUERIES).is_dir():
        pytest.fail(f"the StableToolBench folder is expected at {SOURCE} (README: data)")
    copy = tmp_path / "stb"
    (copy / QUERIES).mkdir(parents=True)
    shutil.copy(SOURCE / QUERIES / "G1_tool.json", copy / QUERIES / "G1_tool.json")
    return copy


@pytest.mark.parametrize("kind", ["fifo", "folder", "broken link"])
def test_a_query_file_that_is_not_a_regular_file_is_named_not_read(catalog, kind):
    odd = catalog / QUERIES / "G9_odd.json"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "folder":
        odd.mkdir()
    else:
        odd.symlink_to(catalog / "nowhere.json")
    done = subprocess.run([sys.executable, "-c", "import sys; from camdf.integrations.stabletoolbench.convert import "
                           "convert_solvable_queries as c; c(sys.argv[1])", str(catalog)], cwd=ROOT, timeout=60,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "G9_odd.json" in done.stderr, done.stderr
    with pytest.raises(SourceError, match=r"G9_odd\.json:1: (not a regular file|a folder, not a file|broken symbolic "
                                          r"link)") as refused:
        convert_solvable_queries(catalog)
    assert "\n" not in str(refused.value)  # one problem, one line (a header line came first before)


@pytest.mark.parametrize("route", ["override", "environment"])
def test_a_missing_folder_is_one_line_naming_it_as_configured(route, tmp_path):
    """Given on the command line or, as make passes it, in $STABLETOOLBENCH (an environment value is otherwise
    hidden from every line as a possible secret: the folder read ``***`` before)."""
    missing = tmp_path / "no" / "stabletoolbench"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    given = [f"domain.source={missing}"] if route == "override" else []
    if route == "environment":
        env["STABLETOOLBENCH"] = str(missing)
    done = subprocess.run([sys.executable, "-m", "pipelines.data", "domain=stabletoolbench", *given,
                           f"paths.data_dir={tmp_path / 'data'}", "hydra/job_logging=none", "hydra/hydra_logging=none"],
                          cwd=ROOT, timeout=120, capture_output=True, text=True, env=env)
    lines = [ln for ln in done.stderr.splitlines() if "stabletoolbench" in ln]
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert any(f"domain.source: {missing}" in ln and "no such file or folder" in ln for ln in lines), done.stderr
