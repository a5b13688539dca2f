"""Per-fit out-of-fold picks of the best rule of a kind, and the miss-rate test clustered by task."""

import numpy as np
import pandas as pd
import pytest

from camdf.evaluation.picks import fold_picks, pick_counts, picked_outcomes
from camdf.evaluation.power import clustered_miss_test


def _outcomes():
    """Two repeats of two folds (tasks q0-q3: folds 0, 1, 0, 1). Rule a wins fold 0, rule b wins fold 1."""
    pay = {"a": {"q0": 0.9, "q1": 0.1, "q2": 0.9, "q3": 0.1}, "b": {"q0": 0.2, "q1": 0.6, "q2": 0.2, "q3": 0.6}}
    return pd.DataFrame([{"task_id": t, "fold": i % 2, "method": m, "payoff": pay[m][t], "repeat": r}
                         for r in range(2) for m in pay for i, t in enumerate(pay[m])])


def test_each_fold_gets_the_rule_best_on_the_other_folds_never_on_its_own():
    picks = fold_picks(_outcomes(), ["a", "b"])
    # Fold 0's pick is read off fold 1 (b: 0.6 > a: 0.1), fold 1's off fold 0 (a: 0.9 > b: 0.2) ...
    assert picks.to_dict() == {(0, 0): "b", (0, 1): "a", (1, 0): "b", (1, 1): "a"}
    rows, _ = picked_outcomes(_outcomes(), ["a", "b"], "best")
    # ... so the picked rule scores 0.2 and 0.1 on the tasks it is judged on, though a pick on the test
    # tasks themselves would score 0.9 and 0.6: the optimism this protocol removes.
    assert rows.groupby("fold")["payoff"].mean().to_dict() == pytest.approx({0: 0.2, 1: 0.1})
    assert set(rows["method"]) == {"best"} and len(rows) == 8
    assert pick_counts(picks) == "2/4 a; 2/4 b"
    assert fold_picks(_outcomes(), ["c", "a"]).eq("a").all()  # an absent candidate is skipped
    with pytest.raises(LookupError, match="none of"):
        fold_picks(_outcomes(), ["c"])
    with pytest.raises(LookupError, match="fold"):
        fold_picks(_outcomes().assign(fold=0), ["a", "b"])


def test_clustered_miss_test_by_hand_and_against_the_binomial_reading():
    # 20 tasks, 5 repeats: two tasks miss every time, the rest never; rate 0.1 against alpha 0.05.
    task_miss = np.r_[np.ones(2), np.zeros(18)]
    test = clustered_miss_test(task_miss, 0.05)
    sd = task_miss.std(ddof=1)
    assert test.statistic == pytest.approx((0.1 - 0.05) / (sd / np.sqrt(20)))
    from scipy.stats import t as student
    assert test.pvalue == pytest.approx(student.sf(test.statistic, 19))
    assert test.pvalue > 0.2  # two clustered tasks show nothing ...
    from camdf.evaluation.power import miss_rate_test
    assert miss_rate_test(10, 100, 0.05).pvalue < 0.05  # ... which the tasks x repeats binomial calls significant
    assert clustered_miss_test(np.zeros(5), 0.05).pvalue == 1.0
    assert clustered_miss_test(np.full(5, 0.2), 0.05).pvalue == 0.0
    with pytest.raises(ValueError, match="task_miss"):
        clustered_miss_test(np.array([0.5]), 0.05)
    with pytest.raises(ValueError, match="alpha"):
        clustered_miss_test(np.zeros(5), 1.5)
