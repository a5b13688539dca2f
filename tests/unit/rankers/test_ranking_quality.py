"""Ranking quality: exact values on hand-built rankings."""

import math

import numpy as np
import pandas as pd
import pytest

from camdf.data.model import Domain, Task, Tool
from camdf.rankers import per_task_quality, quality_table, ranking_quality

TOOLS = [Tool(n, kind="read") for n in "abcde"]


def _domain(required: dict[str, tuple[str, ...]]) -> Domain:
    return Domain("toy", "", TOOLS, [Task(tid, "text", req) for tid, req in required.items()])


def _scores(rankings: dict[str, str], folds: dict[str, int] | None = None) -> pd.DataFrame:
    rows = []
    for tid, order in rankings.items():
        for r, tool in enumerate(order, start=1):
            rows.append((tid, tool, float(-r), r, (folds or {}).get(tid, 0)))
    return pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])


def test_exact_values_per_task():
    dom = _domain({"t1": ("a", "c"), "t2": ("e",)})
    per = per_task_quality(_scores({"t1": "abcde", "t2": "abcde"}), dom)
    t1, t2 = per.loc["t1"], per.loc["t2"]
    assert (t1["recall@1"], t1["recall@3"], t1["recall@5"]) == (0.5, 1.0, 1.0)
    assert t1["mrr"] == 1.0 and t1["all_in_top3"] == 1.0
    assert t1["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert (t2["recall@1"], t2["recall@3"], t2["recall@5"]) == (0.0, 0.0, 1.0)
    assert t2["mrr"] == 0.2 and t2["all_in_top3"] == 0.0
    assert t2["ndcg@10"] == pytest.approx(1 / math.log2(6))


def test_means_leave_out_empty_required_sets_and_training_only_tasks():
    dom = _domain({"t1": ("a",), "t2": ("b",), "t3": (), "t4": ("a",)})
    scores = _scores({"t1": "abcde", "t2": "abcde", "t3": "abcde", "t4": "edcba"}, folds={"t4": -1})
    q = ranking_quality(scores, dom)
    assert q["n_tasks"] == 2 and q["n_empty_excluded"] == 1
    assert q["recall@1"] == 0.5 and q["mrr"] == 0.75 and q["all_in_top3"] == 1.0
    assert q["mean_candidates"] == 5.0
    assert np.isnan(per_task_quality(scores, dom).loc["t3", "mrr"])


def test_more_than_ten_required_and_unknown_tasks():
    tools = [Tool(f"x{i}", kind="read") for i in range(12)]
    dom = Domain("big", "", tools, [Task("t", "text", tuple(t.name for t in tools))])
    scores = _scores({"t": [t.name for t in tools]})
    q = per_task_quality(scores, dom).loc["t"]
    assert q["ndcg@10"] == pytest.approx(1.0) and q["recall@5"] == pytest.approx(5 / 12)
    with pytest.raises(ValueError, match="not in domain"):
        per_task_quality(_scores({"zz": ["x0"]}), dom)


def test_quality_table_bolds_the_best_per_domain():
    rows = pd.DataFrame(
        [
            {"domain": "d", "scorer": "s1", "recall@1": 0.5, "recall@3": 0.9, "recall@5": 1.0, "ndcg@10": 0.7,
             "mrr": 0.6, "all_in_top3": 0.2, "n_tasks": 10, "n_empty_excluded": 1},
            {"domain": "d", "scorer": "s2", "recall@1": 0.4, "recall@3": 0.95, "recall@5": 1.0, "ndcg@10": 0.6,
             "mrr": 0.5, "all_in_top3": 0.1, "n_tasks": 10, "n_empty_excluded": 1},
        ]
    )
    lines = quality_table(rows).splitlines()
    assert lines[0].startswith("| domain | scorer | R@1 | R@3 |")
    assert lines[2] == "| d | s1 | **0.500** | 0.900 | **1.000** | **0.700** | **0.600** | **0.200** | 10 (1) |"
    assert lines[3] == "| d | s2 | 0.400 | **0.950** | **1.000** | 0.600 | 0.500 | 0.100 | 10 (1) |"
