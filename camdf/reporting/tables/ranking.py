"""Ranking across catalogs: every catalog in the box ranked by the runtime's built-in ranker fitted on the others.

The default-policy stage (:mod:`camdf.pipeline.default_policy`) fits the built-in ranker (crosscat) on every
catalog and, leave one catalog out, ranks each catalog by the ranker fitted on the others beside bm25 and the
lexical hybrid (crosscat's first stage); it logs the rows (:func:`camdf.evaluation.ranking_transfer.transfer_rows`)
to its run as ``ranker/ranking_across_catalogs.parquet``; :func:`camdf.reporting.store.ranking_frame` reads the
latest FINISHED default-policy run's rows into the evidence, and this table shows them.
"""

from __future__ import annotations

import pandas as pd

from camdf.reporting.evidence import Evidence
from camdf.reporting.report import Report
from camdf.reporting.tables.base import TableSpec

#: Issue 68's goal on the catalog of 2,479 APIs left out, at k = 5.
GOAL = {"catalog": "stabletoolbench", "all_gold@5": 0.65, "per_api_recall@5": 0.80}


def _ci(row: pd.Series) -> str:
    return f"{row['vs_bm25']:+.3f} [{row['vs_bm25_low']:+.3f}, {row['vs_bm25_high']:+.3f}]"


def ranking(evidence: Evidence, main: dict) -> Report:
    """The table (LookupError without a default-policy run that logged the rows)."""
    rows = evidence.ranking
    if rows.empty:
        raise LookupError("ranking: no FINISHED default-policy run with the ranking across catalogs in the store; "
                          "run `make default-policy`")
    # One row per (catalog, ranker), labelled by both: the index is what the Results key a row by, so it is unique.
    frame = pd.DataFrame({
        "catalog, ranker": [f"{c}, {r}" for c, r in zip(rows["catalog"], rows["ranker"])],
        "queries": rows["queries"].astype(int).to_numpy(), "tools": rows["tools"].astype(int).to_numpy(),
        "recall@5": rows["recall@5"].to_numpy(), "all gold@5": rows["all_gold@5"].to_numpy(),
        "G_x in top 20": rows["gold_in_top20"].to_numpy(), "per-API recall@5": rows["per_api_recall@5"].to_numpy(),
        "all gold@5 minus bm25 [95% CI]": [("" if r["ranker"] == "bm25" else _ci(r)) for _, r in rows.iterrows()],
    }).set_index("catalog, ranker")
    cross = rows[rows["ranker"] == "crosscat"]
    below = cross[cross["vs_bm25_high"] < 0]["catalog"].tolist()
    ahead = cross[cross["vs_bm25_low"] > 0]["catalog"].tolist()
    goal = cross[cross["catalog"] == GOAL["catalog"]]
    goal_text = ""
    if not goal.empty:
        all_gold, per_api = float(goal["all_gold@5"].iloc[0]), float(goal["per_api_recall@5"].iloc[0])
        met = all_gold >= GOAL["all_gold@5"] and per_api >= GOAL["per_api_recall@5"]
        goal_text = (f" Issue 68's goal for the {GOAL['catalog']} catalog left out (all gold@5 >= "
                     f"{GOAL['all_gold@5']:.2f} and per-API recall@5 >= {GOAL['per_api_recall@5']:.2f}): "
                     f"{'met' if met else 'not met'} ({all_gold:.3f} and {per_api:.3f}).")
    note = (f"Each catalog's queries ranked over its own tools by bm25, by the lexical hybrid (the reciprocal-rank "
            f"fusion of bm25 and a character n-gram cosine: crosscat's first stage) and by crosscat, the runtime's "
            f"built-in ranker, fitted on the {len(cross) - 1} other catalogs only (leave one catalog out: the "
            f"catalog's own labels never reach its model; camdf.rankers.crosscat). Queries: those with a gold tool "
            f"among the catalog's acquirable tools. recall@5: the share of a query's gold tools in its top 5; all "
            f"gold@5 and G_x in top 20: queries whose every gold tool is in the top 5 / 20; per-API recall@5: gold "
            f"tools in their query's top 5 over all gold tools. Last column: all gold@5 minus bm25's, paired over the "
            f"catalog's queries, 95% bootstrap CI. crosscat is below bm25 (CI under 0) on "
            f"{len(below)} of {len(cross)} catalogs{' (' + ', '.join(below) + ')' if below else ''} and above it (CI "
            f"over 0) on {len(ahead)}{' (' + ', '.join(ahead) + ')' if ahead else ''}.{goal_text} From the "
            f"latest default-policy run (make default-policy, git commit {str(rows['git_commit'].iloc[0])[:12]}).")
    return Report("ranking", "Ranking across catalogs: each catalog left out", frame, note=note)


TABLE = TableSpec("ranking", order=123, experiments=(), build=ranking, stage="default_policy")
SPECS = (TABLE,)
