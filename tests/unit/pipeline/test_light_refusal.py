"""A stage that refuses its config does so before it loads the numeric stack.

Hundreds of refused runs (the hostile families, a user's typo) each paid ~1.4 s importing scikit-learn,
SciPy and pandas for name lists; the config checks now read names from light modules and each stage
imports its work after :func:`camdf.pipeline.checks.values.checked`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAVY = ("sklearn", "scipy", "pandas", "lightgbm", "mlflow", "matplotlib")


#: stage -> a value its schema refuses (the config composes; :func:`~camdf.pipeline.checks.values.checked` names the key).
REFUSED = {"data": "force=abc", "scores": "random_state=abc", "evaluate": "seed=abc", "train": "seed=abc",
           "default_policy": "seed=abc", "tables": "main.seed=abc"}


@pytest.mark.parametrize("stage", sorted(REFUSED))
def test_a_refused_stage_imports_no_numeric_stack(stage):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", f"pipelines.{stage}", REFUSED[stage]],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    key = REFUSED[stage].split("=")[0]
    assert lines[-1].startswith(f"error: {key}: expected "), lines[-1]
    imported = {ln.rsplit("|", 1)[-1].strip().split(".")[0] for ln in lines if ln.startswith("import time:")}
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
