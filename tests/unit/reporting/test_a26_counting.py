"""A26 counts a cell toward its risk-control verdict only where the rule could have exposed less than full access
minus one tool (issue 55, point 3): a cell exposing every tool, or all but one, tests nothing and is listed apart,
in the table's note and in the headline."""

import numpy as np
import pandas as pd

from camdf.reporting.evidence import Evidence
from camdf.reporting.findings import headlines
from camdf.reporting.report import Report
from camdf.reporting.tables.a26 import within_one_of_full


def test_within_one_of_full():
    assert within_one_of_full(7.0, 7.0) and within_one_of_full(6.2, 7.0) and within_one_of_full(42.0, 43.0)
    assert not within_one_of_full(5.9, 7.0) and not within_one_of_full(72.1, 107.0)
    assert not within_one_of_full(np.nan, 7.0) and not within_one_of_full(5.0, np.nan)


def _a26(rows: dict[str, tuple[str, str]]) -> Report:
    frame = pd.DataFrame([{"domain / scorer / alpha": k, "could expose less": less, "miss rate above alpha": above}
                          for k, (less, above) in rows.items()]).set_index("domain / scorer / alpha")
    return Report("a26", "A26", frame)


def test_the_headline_counts_only_cells_that_could_expose_less():
    report = _a26({"retail / bm25 / 0.01": ("no", "no"), "retail / bm25 / 0.1": ("yes", "no"),
                   "telecom / bm25 / 0.1": ("no", "no"), "airline / bm25 / 0.1": ("yes", "yes")})
    line = next(s for s in headlines(Evidence(), {"scorer": "bm25"}, [report]) if s.startswith("A26:"))
    assert "in 1 of the 2 cells where it could have exposed less" in line, line
    assert ": airline / bm25 / 0.1;" in line, line
    assert "the other 2 expose every tool or all but one and test nothing: retail / bm25 / 0.01, telecom / bm25 / " \
           "0.1." in line, line
