"""coverage@10, coverage@20 and coverage: exact shares on hand-built rankings."""

import pandas as pd

from camdf.data.model import Domain, Task, Tool
from camdf.rankers import METRICS, per_task_quality, quality_table, ranking_quality

from .test_ranking_quality import _scores

TOOLS = [Tool(f"x{i:02d}", kind="read") for i in range(30)]
NAMES = [t.name for t in TOOLS]


def test_coverage_at_k_is_the_share_of_tasks_with_all_of_g_in_the_top_k():
    required = {
        "top": ("x00", "x09"),   # ranks 1 and 10
        "mid": ("x00", "x10"),   # rank 11: in the top 20 only
        "deep": ("x25",),        # rank 26: listed only
        "cut": ("x00", "x29"),   # x29 is not a candidate of this task
        "empty": (),             # left out of the means
    }
    dom = Domain("toy", "", TOOLS, [Task(tid, "text", req) for tid, req in required.items()])
    rankings = {tid: NAMES[:29] if tid == "cut" else NAMES for tid in required}
    per = per_task_quality(_scores(rankings), dom)
    assert per.loc["top", ["coverage@10", "coverage@20", "coverage"]].tolist() == [1.0, 1.0, 1.0]
    assert per.loc["mid", ["coverage@10", "coverage@20", "coverage"]].tolist() == [0.0, 1.0, 1.0]
    assert per.loc["deep", ["coverage@10", "coverage@20", "coverage"]].tolist() == [0.0, 0.0, 1.0]
    assert per.loc["cut", ["coverage@10", "coverage@20", "coverage"]].tolist() == [0.0, 0.0, 0.0]
    q = ranking_quality(_scores(rankings), dom)
    assert (q["coverage@10"], q["coverage@20"], q["coverage"]) == (0.25, 0.5, 0.75)
    assert q["n_tasks"] == 4 and q["n_empty_excluded"] == 1
    assert {"recall@1", "recall@3", "recall@5", "ndcg@10", "mrr", "all_in_top3"} <= set(q)


def test_a_short_list_covers_at_k_what_it_covers_in_full():
    dom = Domain("toy", "", TOOLS, [Task("t", "text", ("x00", "x02"))])
    q = ranking_quality(_scores({"t": NAMES[:3]}), dom)
    assert (q["coverage@10"], q["coverage@20"], q["coverage"]) == (1.0, 1.0, 1.0)


def test_quality_table_shows_coverage_and_reads_records_written_without_it():
    base = {"domain": "d", "scorer": "s", "recall@1": 0.5, "recall@3": 0.9, "recall@5": 1.0, "ndcg@10": 0.7,
            "mrr": 0.6, "all_in_top3": 0.2, "n_tasks": 10, "n_empty_excluded": 1}
    new = quality_table(pd.DataFrame([{**base, "coverage@10": 0.4, "coverage@20": 0.6, "coverage": 0.8}]))
    assert new.splitlines()[0].endswith("| G_x in top 3 | G_x in top 10 | G_x in top 20 | G_x listed "
                                        "| tasks (empty G_x left out) |")
    assert new.splitlines()[2].endswith("| 0.200 | 0.400 | 0.600 | 0.800 | 10 (1) |")
    old = quality_table(pd.DataFrame([base]))
    assert "G_x listed" not in old and old.splitlines()[2].endswith("| 0.200 | 10 (1) |")
    assert METRICS[-3:] == ["coverage@10", "coverage@20", "coverage"]
