"""The tables found by folder, and a generic check run on every one of them (a new table is checked unnamed)."""

import sys

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.identity import CONF_DIR
from camdf.pipeline.make_lists import make_experiments
from camdf.reporting.evidence import Evidence
from camdf.reporting.registry import experiments, table_modules, tables
from camdf.reporting.tables.base import TableSpec

SPECS = tables()


@pytest.fixture(scope="module")
def main() -> dict:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("tables")
    return OmegaConf.to_container(cfg, resolve=True)["main"]


def test_every_module_of_the_folder_is_read_and_the_order_is_the_readme_order():
    import importlib

    declared = [s for m in table_modules() for s in importlib.import_module(m).SPECS]
    assert sorted(s.name for s in declared) == sorted(s.name for s in SPECS)
    assert [s.name for s in SPECS][:3] == ["table2", "a18", "a19"] and SPECS[-1].name == "payoff_vs_tools"
    assert [s.order for s in SPECS] == sorted({s.order for s in SPECS})  # unique, ascending


def test_make_reproduce_runs_every_experiment_the_tables_read(tmp_path, monkeypatch):
    monkeypatch.setenv("STABLETOOLBENCH", str(tmp_path))  # A28's folder given (make_needs): its experiments run
    assert set(experiments()) == set(make_experiments())


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_table(spec: TableSpec, main):
    """What every table owes the tables stage: experiments on disk, variants, and a skip (not a crash) without cells."""
    on_disk = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    assert isinstance(spec.order, int) and set(spec.experiments) <= on_disk
    assert bool(spec.experiments) != bool(spec.stage)  # cells of experiments, or a stage's run
    variants = spec.variants(main)
    assert variants and all(isinstance(v, dict) for v in variants)
    empty = Evidence(*(pd.DataFrame() for _ in range(8)))
    for variant in variants:
        with pytest.raises(LookupError):
            spec.build(empty, main, **variant)


def test_a_module_without_specs_is_refused_by_name(tmp_path, monkeypatch):
    pkg = tmp_path / "fake_tables"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text("from camdf.reporting.tables.base import TableSpec\n"
                                 "SPECS = (TableSpec('good', order=1, experiments=('smoke',), build=print),)\n")
    (pkg / "forgot.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fake_tables

    with pytest.raises(TypeError, match=r"fake_tables/forgot.py: expected a module-level SPECS"):
        tables(fake_tables)
    (pkg / "forgot.py").write_text("SPECS = ()\n")
    sys.modules.pop("fake_tables.forgot", None)
    assert [s.name for s in tables(fake_tables)] == ["good"]
    (pkg / "twin.py").write_text("from camdf.reporting.tables.base import TableSpec\n"
                                 "SPECS = (TableSpec('twin', order=1, experiments=('smoke',), build=print),)\n")
    with pytest.raises(ValueError, match=r"tables `good` and `twin` have the same order 1"):
        tables(fake_tables)
