"""Tables do not depend on the BLAS kernel the environment asks for: one grid under OPENBLAS_CORETYPE=Haswell and
SkylakeX, byte for byte (the stages pin one kernel, see pipelines/__init__.py)."""

import pytest

from .test_pipeline import _run, _tables

GRID = ["pipelines.evaluate", "-m", "experiment=smoke", "cost.lam=0.04,0.12,0.2", "cost.d=0.0,1.0"]
TABLES = ["pipelines.tables", "update_readme=false", "experiments=[smoke]",
          "cell_overrides=['cost.lam=0.04,0.12,0.2']"]  # the tables' cells: the smoke sweep with the wider lambda


@pytest.mark.slow  # two grids of six cells; make test-full
def test_six_cells_under_two_openblas_kernels_give_byte_identical_tables(tmp_path, data_dir, monkeypatch):
    tables = {}
    for kernel in ("Haswell", "SkylakeX"):
        monkeypatch.setenv("OPENBLAS_CORETYPE", kernel)
        out = tmp_path / kernel
        proc = _run(GRID, out, data_dir)
        assert proc.stdout.count("logged run") == 6
        _run(TABLES, out, data_dir)
        tables[kernel] = _tables(out / "tables")
    strip = lambda t: {k: b"\n".join(l for l in v.splitlines() if b"MLflow run" not in l) for k, v in t.items()}  # noqa: E731
    assert "a18.csv" in tables["Haswell"] and "table2.csv" in tables["Haswell"]
    assert tables["Haswell"]["a18.csv"].count(b"\n") >= 4  # the three lambdas of the grid are in the table
    assert strip(tables["Haswell"]) == strip(tables["SkylakeX"])
