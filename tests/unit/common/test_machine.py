"""Numeric-environment tags (camdf.common.machine): BLAS kernel and threads, numpy's CPU features, flat strings."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from camdf.common import machine
from camdf.common.machine import numeric_environment

ROOT = Path(__file__).resolve().parents[3]


def _openblas() -> list[dict]:
    return [lib for lib in threadpool_info() if lib.get("internal_api") == "openblas"]


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((l for l in text.splitlines() if l.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def test_tags_are_flat_short_strings_under_numeric():
    env = numeric_environment()
    assert env and all(k.startswith("numeric.") for k in env)
    assert all(isinstance(v, str) and 0 < len(v) <= machine.MAX_VALUE for v in env.values())
    assert env["numeric.numpy.version"] == np.__version__
    assert env["numeric.python.version"].count(".") == 2
    assert env["numeric.platform.machine"]
    assert env["numeric.lightgbm.version"][0].isdigit()


@pytest.mark.skipif(not _openblas(), reason="threadpoolctl finds no OpenBLAS here")
def test_blas_architecture_and_threads_as_threadpoolctl_reports_them():
    env = numeric_environment()
    libs = _openblas()
    assert env["numeric.blas.internal_api"] == "openblas"
    assert env["numeric.blas.architecture"] == ",".join(sorted({lib["architecture"] for lib in libs}))
    assert env["numeric.blas.num_threads"] == ",".join(sorted({str(lib["num_threads"]) for lib in libs}))
    assert all(lib["version"] in env["numeric.blas.version"] for lib in libs)
    assert all(Path(lib["filepath"]).name in env["numeric.blas.libraries"] for lib in libs)


def test_cpu_features_are_numpys_enabled_ones_and_missing_tables_give_unknown(monkeypatch):
    env = numeric_environment()
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__
    assert env["numeric.numpy.cpu_features"] == ",".join(sorted(k for k, on in __cpu_features__.items() if on))
    assert "numeric.numpy.cpu_baseline" in env and "numeric.numpy.cpu_dispatch" in env
    monkeypatch.setattr(machine, "CPU_MODULES", ("numpy._camdf_no_such_module", "numpy"))  # the attribute moved
    moved = numeric_environment()
    assert {moved[f"numeric.numpy.cpu_{k}"] for k in ("features", "baseline", "dispatch")} == {"unknown"}


def test_kernel_env_vars_are_tagged_when_set_and_long_values_are_cut(monkeypatch):
    monkeypatch.delenv("MKL_CBWR", raising=False)
    assert "numeric.env.MKL_CBWR" not in numeric_environment()
    monkeypatch.setenv("MKL_CBWR", "x" * 2000)
    value = numeric_environment()["numeric.env.MKL_CBWR"]
    assert len(value) == machine.MAX_VALUE and value.endswith("...")


PRINT = "import json; from camdf.common.machine import numeric_environment; print(json.dumps(numeric_environment()))"


@pytest.mark.skipif(not _openblas(), reason="threadpoolctl finds no OpenBLAS here")
@pytest.mark.parametrize("coretype,flag", [("Haswell", "avx2"), ("SkylakeX", "avx512f")])
def test_openblas_coretype_set_before_numpy_is_imported_shows_as_the_architecture(coretype, flag):
    if flag not in _cpu_flags():
        pytest.skip(f"this CPU has no {flag}: OpenBLAS would not run the {coretype} kernels")
    env = {**os.environ, "OPENBLAS_CORETYPE": coretype}  # read by OpenBLAS when it loads: a fresh process
    proc = subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tags = json.loads(proc.stdout)
    assert tags["numeric.blas.architecture"] == coretype
    assert tags["numeric.env.OPENBLAS_CORETYPE"] == coretype


def _architecture(env_extra: dict) -> str:
    import os
    import subprocess
    import sys

    code = ("import pipelines, numpy; from threadpoolctl import threadpool_info; "
            "print(sorted({i['architecture'] for i in threadpool_info() if i['user_api'] == 'blas'}))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "CAMDF_OPENBLAS_CORETYPE")}
    return subprocess.run([sys.executable, "-c", code], env={**env, **env_extra}, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_the_stages_pin_the_openblas_kernel_whatever_the_environment_asks():
    from pipelines import PINNED_CORETYPE

    assert _architecture({"OPENBLAS_CORETYPE": "SkylakeX"}) == f"['{PINNED_CORETYPE}']"
    assert _architecture({}) == f"['{PINNED_CORETYPE}']"
    assert _architecture({"CAMDF_OPENBLAS_CORETYPE": "native", "OPENBLAS_CORETYPE": "Haswell"}) == "['Haswell']"
