"""Ranking across catalogs: every built catalog ranked by :mod:`camdf.rankers.crosscat` fitted on the others.

:func:`transfer_rows` is the table ``camdf data ranking`` prints: per catalog and ranker (bm25, the lexical
hybrid, the cross-catalog ranker fitted leave one catalog out) the ranking quality, and each ranker's all-gold@5 minus bm25's with its paired bootstrap interval.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from camdf.evaluation.bootstrap import bootstrap_mean_ci
from camdf.rankers.crosscat import ranks
from camdf.rankers.loco import Catalog


def task_quality(scores: np.ndarray, gold: np.ndarray) -> dict[str, np.ndarray]:
    """Per task (rows): recall@5, all of G_x in the top 5, all of G_x in the top 20, and the counts of gold
    tools and of gold tools in the top 5 (per-API recall@5 = their sums' ratio). ``scores`` and ``gold``
    are (Q, A); ties break by column order."""
    r = ranks(scores)
    n = gold.sum(axis=1)
    h5, h20 = (gold & (r <= 5)).sum(axis=1), (gold & (r <= 20)).sum(axis=1)
    return {"recall@5": h5 / n, "all_gold@5": (h5 == n).astype(float), "gold_in_top20": (h20 == n).astype(float),
            "gold_apis": n.astype(float), "gold_apis@5": h5.astype(float)}


def transfer_rows(catalogs: Sequence[Catalog], scores: dict[str, dict[str, np.ndarray]], n_resamples: int = 10_000,
                  random_state: int = 0) -> list[dict]:
    """The ranking-across-catalogs table: per catalog and ranker the means of :func:`task_quality` (per-API
    recall@5 pooled over the catalog's gold tools), and each ranker's all-gold@5 minus bm25's with its 95%
    paired bootstrap interval over the catalog's queries."""
    rows = []
    for cat in catalogs:
        quality = {name: task_quality(s, cat.gold) for name, s in scores[cat.name].items()}
        base = quality["bm25"]["all_gold@5"]
        for name, q in quality.items():
            diff = q["all_gold@5"] - base
            ci = bootstrap_mean_ci(diff, n_resamples=n_resamples, random_state=random_state)
            rows.append({"catalog": cat.name, "queries": len(cat.task_ids), "tools": len(cat.tools), "ranker": name,
                         "recall@5": float(q["recall@5"].mean()), "all_gold@5": float(q["all_gold@5"].mean()),
                         "gold_in_top20": float(q["gold_in_top20"].mean()),
                         "per_api_recall@5": float(q["gold_apis@5"].sum() / q["gold_apis"].sum()),
                         "vs_bm25": float(diff.mean()), "vs_bm25_low": float(ci.ci_low),
                         "vs_bm25_high": float(ci.ci_high)})
    return rows
