"""The marginal rule and plug-in argmax: exact depths on hand-built rankings, with and without truncation."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from camdf.core.features import plugin_payoffs
from camdf.core.instances import build_instances, truncate
from camdf.core.payoff import at_depth, prefix_payoffs
from camdf.policies import StateBatch
from camdf.policies.baselines import MarginalRule, PluginArgmax, list_coverage

COLUMNS = ["task_id", "tool", "score", "rank", "fold"]


def _ranked(lists: dict[str, str], required: dict[str, str], costs: dict[str, float] | None = None):
    """One task per entry, its tools in rank order (one letter each), G_x given as letters."""
    rows = [(tid, tool, float(-r), r, i % 5) for i, (tid, order) in enumerate(lists.items())
            for r, tool in enumerate(order, start=1)]
    names = sorted({t for order in lists.values() for t in order} | {t for g in required.values() for t in g})
    return build_instances(pd.DataFrame(rows, columns=COLUMNS), {k: list(v) for k, v in required.items()},
                           costs or dict.fromkeys(names, 1.0))


def _batch(inst, p, lam, kind="exact"):
    return StateBatch.make(inst, np.asarray(p, dtype=float), lam, kind, train=True)


P4 = [[0.9, 0.8, 0.1, 0.05]]


@pytest.mark.parametrize("kind", ["exact", "partial"])
@pytest.mark.parametrize(("lam", "depth"), [(0.2, 2), (0.01, 4), (1.0, 0)])
def test_marginal_rule_stops_where_the_next_tools_gain_falls_below_its_cost(kind, lam, depth):
    inst = _ranked({"q": "abcd"}, {"q": "ab"})
    batch = _batch(inst, P4, lam, kind)
    rule = MarginalRule().fit(batch)
    assert rule.tuned_parameters() == {"coverage": 1.0}
    assert rule.decide(batch).tolist() == [depth]
    # The rule it replaces, p_suff(t + 1) - p_suff(t) >= lam * c, exposed nothing at lam = 0.2:
    # P(G inside A_1) barely exceeds P(G inside A_0) when G has two tools.
    if kind == "exact" and lam == 0.2:
        assert batch.feats["p_suff_next"][0, 0] - batch.feats["p_suff"][0, 0] < lam


def test_marginal_rule_stops_at_the_first_failing_tool_not_after_the_last_passing_one():
    inst = _ranked({"q": "abcd"}, {"q": "ac"})
    batch = _batch(inst, [[0.9, 0.1, 0.8, 0.05]], 0.2)
    assert MarginalRule().fit(batch).decide(batch).tolist() == [1]


def test_marginal_rule_weighs_each_tool_by_its_own_cost():
    inst = _ranked({"q": "abcd"}, {"q": "ab"}, costs={"a": 1.0, "b": 5.0, "c": 1.0, "d": 1.0})
    batch = _batch(inst, P4, 0.2)
    assert MarginalRule().fit(batch).decide(batch).tolist() == [1]  # 0.8 < 0.2 * 5


def test_marginal_rule_respects_each_tasks_list_length():
    inst = _ranked({"q": "abcd", "r": "ab"}, {"q": "ab", "r": "ab"})
    p = [[0.9, 0.8, 0.9, 0.9], [0.9, 0.9, 0.0, 0.0]]
    batch = _batch(inst, p, 0.2)
    assert MarginalRule().fit(batch).decide(batch).tolist() == [4, 2]


@pytest.mark.parametrize("rule", [MarginalRule, PluginArgmax])
def test_rules_that_estimate_coverage_must_be_fitted(rule):
    inst = _ranked({"q": "abcd"}, {"q": "ab"})
    with pytest.raises(NotFittedError, match=rule.__name__):
        rule().decide(_batch(inst, P4, 0.2))


def _truncated_family(n_tasks: int = 10, n_listed_all: int = 3):
    """Lists cut to the top 3 of a, b, c, z: G = {a, b} for the first tasks, G = {a, b, z} (z cut off) after."""
    lists = {f"q{i}": "abcz" for i in range(n_tasks)}
    required = {f"q{i}": "ab" if i < n_listed_all else "abz" for i in range(n_tasks)}
    return truncate(_ranked(lists, required), 3)


def test_list_coverage_is_the_share_of_full_lists_that_suffice():
    inst = _truncated_family()
    assert inst.success[:, 3].tolist() == [True] * 3 + [False] * 7
    assert list_coverage(inst, "exact") == pytest.approx(0.3)
    assert list_coverage(inst, "partial") == pytest.approx(0.3 + 0.7 * 2 / 3)
    assert list_coverage(_ranked({"q": "abcd"}, {"q": "ab"}), "exact") == 1.0
    with pytest.raises(ValueError, match="batch.inst"):
        list_coverage(inst.subset(np.zeros(inst.T, dtype=bool)), "exact")


@pytest.mark.parametrize("rule", [PluginArgmax, MarginalRule])
def test_coverage_aware_rules_expose_nothing_when_the_list_rarely_holds_g(rule):
    inst = _truncated_family()
    lam = 0.3
    p = np.tile([0.9, 0.8, 0.05], (inst.T, 1))
    train = test = _batch(inst, p, lam)
    naive = np.argmax(plugin_payoffs(inst, p, lam), axis=1)  # as if every G_x were listed
    assert (naive == 2).all()  # 0.95 - 0.6 beats every other depth
    fitted = rule().fit(train)
    assert fitted.tuned_parameters()["coverage"] == pytest.approx(0.3)
    depth = fitted.decide(test)
    assert (depth == 0).all()  # 0.3 * 0.95 < 0.6, and 0.3 * 0.9 < 0.3
    u = prefix_payoffs(inst, lam)
    assert at_depth(u, depth).mean() == pytest.approx(0.0)
    assert at_depth(u, naive).mean() == pytest.approx(0.3 - 0.6)
    assert at_depth(u, depth).mean() >= at_depth(u, naive).mean()


def test_plugin_argmax_with_full_coverage_keeps_the_untruncated_decision():
    inst = _ranked({"q": "abc", "r": "abc"}, {"q": "ab", "r": "a"})
    p = [[0.9, 0.8, 0.05], [0.9, 0.1, 0.05]]
    batch = _batch(inst, p, 0.3)
    fitted = PluginArgmax().fit(batch)
    assert fitted.tuned_parameters() == {"coverage": 1.0}
    np.testing.assert_array_equal(fitted.decide(batch), np.argmax(plugin_payoffs(inst, batch.p, 0.3), axis=1))
    assert fitted.decide(batch).tolist() == [2, 1]


def test_plugin_payoffs_scale_the_value_by_the_coverage():
    inst = _ranked({"q": "abc"}, {"q": "ab"})
    p = np.array([[0.9, 0.8, 0.05]])
    full, scaled = plugin_payoffs(inst, p, 0.3), plugin_payoffs(inst, p, 0.3, coverage=0.5)
    cost = np.array([[0.0, 0.3, 0.6, 0.9]])
    np.testing.assert_allclose(scaled, 0.5 * (full + cost) - cost)
