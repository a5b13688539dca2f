"""Repeated cross-fitting: per-task means over repeats, the repeat spread, headroom and degenerate cells."""

import numpy as np
import pandas as pd
import pytest

from camdf.evaluation.summary import paired_success_p, per_task_means, repeat_spread, summarize_cell
from camdf.evaluation.headroom import headroom_metrics


def _repeat(r, camdf):
    rows = []
    for m, vals in {"camdf": camdf, "full": [0.6, 0.4, 0.6, 0.1]}.items():
        for i, v in enumerate(vals):
            rows.append({"task_id": f"q{i}", "fold": i % 2, "method": m, "depth": 2, "n_exposed": 2 if m == "camdf" else 4,
                         "cost": 1.0, "success": v > 0.3, "success_partial": 1.0, "covers_g": True, "payoff": v,
                         "repeat": r})
    return pd.DataFrame(rows)


def _two_repeats():
    return pd.concat([_repeat(0, [1.0, 0.5, 0.8, 0.2]), _repeat(1, [0.0, 0.5, 0.8, 0.4])], ignore_index=True)


def test_statistics_read_per_task_means_over_repeats():
    out = _two_repeats()
    means = per_task_means(out)
    camdf = means[means.method == "camdf"].set_index("task_id")
    assert camdf.loc["q0", "payoff"] == 0.5 and camdf.loc["q3", "payoff"] == pytest.approx(0.3)
    assert camdf.loc["q0", "success"] == 0.5  # succeeded in one of the two repeats
    metrics, table = summarize_cell(out, n_resamples=300, random_state=0)
    assert metrics["camdf/payoff_mean"] == pytest.approx(np.mean([0.5, 0.5, 0.8, 0.3]))
    assert metrics["camdf/n_tasks"] == 4  # tasks, not task x repeat rows, are resampled
    assert metrics["camdf/payoff_repeat_min"] == pytest.approx(0.425)
    assert metrics["camdf/payoff_repeat_max"] == pytest.approx(0.625)
    assert metrics["cell/n_repeats"] == 2


def test_one_repeat_is_the_plain_cell():
    one = _repeat(0, [1.0, 0.5, 0.8, 0.2])
    a, _ = summarize_cell(one, n_resamples=300, random_state=0)
    b, _ = summarize_cell(one.drop(columns="repeat"), n_resamples=300, random_state=0)
    assert {k: v for k, v in a.items() if "repeat" not in k} == b
    assert repeat_spread(one)["camdf/payoff_repeat_min"] == repeat_spread(one)["camdf/payoff_repeat_max"]


def test_paired_success_test_is_mcnemar_on_binary_and_sign_flip_on_shares():
    a, b = np.array([1.0, 1, 0, 1, 1, 1]), np.array([0.0, 0, 0, 1, 0, 0])
    from camdf.evaluation.classical import mcnemar_exact
    from camdf.evaluation.permutation import sign_flip_test
    assert paired_success_p(a, b, 500, 0) == mcnemar_exact(a, b).pvalue
    shares = a * 0.5
    assert paired_success_p(shares, b, 500, 0) == sign_flip_test(shares, b, n_resamples=500, random_state=0).pvalue


def test_headroom_and_shares():
    bounds = pd.DataFrame({"task_id": ["a", "b"], "none": [0.0, 0.0], "full": [0.2, 0.0], "best": [0.5, 0.3]})
    table = pd.DataFrame({"payoff_mean": {"camdf": 0.2, "full": 0.1}})
    m = headroom_metrics(bounds, table)
    assert m["cell/headroom"] == pytest.approx(0.4 - 0.1)
    assert m["camdf/headroom_share"] == pytest.approx((0.2 - 0.1) / 0.3)
    assert m["full/headroom_share"] == 0.0 and m["cell/degenerate"] == 0.0
    flat = pd.DataFrame({"task_id": ["a"], "none": [0.0], "full": [-0.5], "best": [0.01]})
    assert headroom_metrics(flat, table)["cell/degenerate"] == 1.0
