"""Cell summaries on a tiny hand-built outcome table."""

import numpy as np
import pandas as pd

from camdf.evaluation.summary import summarize_cell


def _outcomes():
    rows = []
    payoff = {"camdf": [1.0, 0.5, 0.8, 0.2], "full": [0.6, 0.4, 0.6, 0.1], "best_prefix": [1.0, 0.6, 0.9, 0.3]}
    tools = {"camdf": [1, 2, 1, 3], "full": [4, 4, 4, 4], "best_prefix": [1, 1, 1, 2]}
    for m, vals in payoff.items():
        for i, v in enumerate(vals):
            rows.append({"task_id": f"q{i}", "fold": i % 2, "method": m, "depth": tools[m][i],
                         "n_exposed": tools[m][i], "cost": float(tools[m][i]), "success": v > 0.3,
                         "success_partial": 1.0, "covers_g": True, "payoff": v})
    return pd.DataFrame(rows)


def test_means_differences_and_tool_savings():
    metrics, table = summarize_cell(_outcomes(), n_resamples=500, random_state=1)
    assert metrics["camdf/payoff_mean"] == np.mean([1.0, 0.5, 0.8, 0.2])
    assert metrics["full/n_exposed"] == 4.0
    assert metrics["camdf/fewer_tools_vs_full_pct"] == 100 * (1 - 7 / 4 / 4)
    assert np.isclose(metrics["full/diff_vs_ref"], np.mean([0.6, 0.4, 0.6, 0.1]) - 0.625)
    assert metrics["full/diff_vs_ref_ci_low"] <= metrics["full/diff_vs_ref"] <= metrics["full/diff_vs_ref_ci_high"]
    # best_prefix is an oracle: compared, but left out of the Holm family.
    assert "best_prefix/p_holm_vs_ref" not in metrics and "full/p_holm_vs_ref" in metrics
    assert set(table.index) == {"camdf", "full", "best_prefix"}


def test_same_seed_same_metrics():
    a, _ = summarize_cell(_outcomes(), n_resamples=300, random_state=4)
    b, _ = summarize_cell(_outcomes(), n_resamples=300, random_state=4)
    assert a == b
