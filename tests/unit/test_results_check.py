"""The README Results carry the code version they were generated at; ``camdf results check`` compares it."""

import subprocess
import sys

from camdf.pipeline.identity import code_stamp
from camdf.reporting.readme import results_markdown, results_stamp, update_readme
from camdf.reporting.report import Report

import pandas as pd

README = "# x\n\n<!-- results:start -->\nold\n<!-- results:end -->\nrest\n"


def _check(path):
    return subprocess.run([sys.executable, "-m", "camdf.cli", "results", "check", str(path)],
                          capture_output=True, text=True)


def test_stamp_round_trips_and_the_check_tells_current_from_stale(tmp_path):
    report = Report("t", "T", pd.DataFrame({"a": [1.0]}, index=pd.Index(["m"], name="method")))
    current = code_stamp()
    readme = tmp_path / "README.md"
    readme.write_text(update_readme(README, results_markdown([report], "make reproduce", stamp=current)))
    assert results_stamp(readme.read_text()) == current
    ok = _check(readme)
    assert ok.returncode == 0 and current in ok.stdout
    readme.write_text(update_readme(README, results_markdown([report], "make reproduce", stamp="0" * 12)))
    stale = _check(readme)
    assert stale.returncode == 1 and "000000000000" in stale.stdout and current in stale.stdout
    readme.write_text(update_readme(README, results_markdown([report], "make reproduce")))
    assert results_stamp(readme.read_text()) is None and _check(readme).returncode == 1


def test_a_readme_without_results_markers_is_refused_in_one_line(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    proc = _check(readme)
    assert proc.returncode == 2 and "markers" in proc.stderr and "Traceback" not in proc.stderr
    assert _check(tmp_path / "missing.md").returncode == 2
