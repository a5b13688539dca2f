"""The ranking-across-catalogs table: one row per (catalog, ranker), each written once, and a note whose counts
follow the intervals."""

import pandas as pd

from camdf.reporting.evidence import Evidence
from camdf.reporting.tables.ranking import ranking


def _rows() -> pd.DataFrame:
    rows = []
    for catalog, (low, high) in {"alpha": (0.01, 0.05), "beta": (-0.04, -0.01)}.items():
        for k, ranker in enumerate(("bm25", "lexical_hybrid", "crosscat")):
            rows.append({"catalog": catalog, "queries": 30, "tools": 100, "ranker": ranker,
                         "recall@5": 0.5 + 0.1 * k, "all_gold@5": 0.4 + 0.1 * k, "gold_in_top20": 0.8,
                         "per_api_recall@5": 0.45 + 0.1 * k, "vs_bm25": 0.0 if k == 0 else (low + high) / 2,
                         "vs_bm25_low": 0.0 if k == 0 else low, "vs_bm25_high": 0.0 if k == 0 else high})
    return pd.DataFrame(rows).assign(git_commit="0123456789abcdef")


def test_every_catalog_and_ranker_is_one_row_written_once():
    report = ranking(Evidence(ranking=_rows()), {})
    body = [line for line in report.to_markdown().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(body) == 6 and len(set(body)) == 6
    assert body[0].startswith("| alpha, bm25 |") and body[-1].startswith("| beta, crosscat |")
    assert "0.600" in body[2] and "+0.030 [+0.010, +0.050]" in body[2]  # alpha's crosscat row, its own values
    assert "below bm25 (CI under 0) on 1 of 2 catalogs (beta)" in report.note
    assert "above it (CI over 0) on 1 (alpha)" in report.note and "0123456789ab" in report.note
