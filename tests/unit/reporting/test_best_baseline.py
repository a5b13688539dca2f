"""One "best tuned baseline": the cell's evaluation flags it, and Table 2, the family verdict, A28 and the cell's
description name the same method (a peer, static_set, when it pays most; before, the flag skipped the peers and
named fixed_k while Table 2 named static_set)."""

import pandas as pd
import pytest

from camdf.evaluation.summary import summarize_cell
from camdf.policies import best_tuned_baseline
from camdf.reporting.tables.notes import baseline_of


def _cell(pays: dict[str, float]) -> pd.Series:
    rows = [{"task_id": f"q{i}", "fold": i % 2, "method": m, "depth": -1, "n_exposed": 3, "cost": 1.0,
             "success": True, "success_partial": 1.0, "covers_g": True, "payoff": p + 0.01 * (-1) ** i}
            for i in range(20) for m, p in pays.items()]
    metrics, _ = summarize_cell(pd.DataFrame(rows), n_resamples=200)
    return pd.Series({f"m:{k}": v for k, v in metrics.items()})


@pytest.mark.parametrize("pays, best", [
    ({"camdf": 0.15, "fixed_k": 0.16, "static_set": 0.23, "full": 0.10, "oracle_set": 0.9}, "static_set"),
    ({"camdf": 0.15, "fixed_k": 0.26, "static_set": 0.23, "full": 0.10, "best_prefix": 0.5}, "fixed_k"),
    ({"camdf": 0.15, "camdf_lite": 0.40, "fixed_k": 0.16, "full": 0.10}, "fixed_k"),  # ours never the baseline
])
def test_every_place_names_the_same_best_tuned_baseline(pays, best):
    run = _cell(pays)
    flagged = [m for m in pays if run.get(f"m:{m}/is_best_baseline") == 1.0]
    assert flagged == [best]
    assert best_tuned_baseline(pays) == baseline_of(run) == best
    assert "m:camdf/diff_vs_best_baseline" in run  # the family verdict's differences are against it


def test_the_definition_leaves_out_oracles_ours_and_unknown_names():
    assert best_tuned_baseline({"oracle_set": 1.0, "cv_set": 0.9, "camdf_no_cost": 0.8, "mystery": 0.7}) is None
    assert best_tuned_baseline({"top5": 0.2, "none": 0.2}) == "top5"  # a tie: the earlier one
    assert best_tuned_baseline({"fixed_k": float("nan"), "full": 0.1}) == "full"
