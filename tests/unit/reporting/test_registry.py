"""The table registry: every registered table names existing experiments, once, and the reproduce run covers them."""

import re
from pathlib import Path

from camdf.reporting.registry import TABLES, experiments

ROOT = Path(__file__).resolve().parents[3]


def test_every_table_is_registered_once_with_existing_experiments():
    names = [t.name for t in TABLES]
    assert len(names) == len(set(names))
    on_disk = {p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml")}
    for table in TABLES:
        assert table.experiments and set(table.experiments) <= on_disk, table.name


def test_make_reproduce_runs_every_experiment_the_tables_read():
    line = re.search(r"^EXPERIMENTS := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert set(experiments()) == set(line.split())
