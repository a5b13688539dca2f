"""Set rules and the field's baselines on the rule interface: outcomes with alternatives, the risk guarantee,
the run-time selection (full and lean paths) and the portable forms."""

import json

import numpy as np
import pandas as pd
import pytest

from camdf.core.instances import build_instances, truncate
from camdf.core.membership import MembershipModel
from camdf.core.sets import plugin_set
from camdf.evaluation.cell import _mask_outcomes, evaluate_cell
from camdf.policies import CARDS, StateBatch, make_policy
from camdf.policies.base import concat_batches
from camdf.runtime import StopPolicy
from camdf.runtime.lean import LeanPolicy, lean_numbers

from ..core.test_features import _random_instances
from ..core.test_theory import _family
from ..runtime.test_runtime import _openai

SET_RULES = [m for m in CARDS if not CARDS[m].picks_prefix and CARDS[m].family != "oracle"]


def _tiny():
    """Two tasks: q0 needs {a, b} or, alternatively, {c}; q1 needs {b}, whose list misses it after top_k = 1."""
    df = pd.DataFrame([("q0", "a", 3.0, 1, 0), ("q0", "b", 2.0, 2, 0), ("q0", "c", 1.0, 3, 0),
                       ("q1", "a", 3.0, 1, 1), ("q1", "b", 1.0, 2, 1)],
                      columns=["task_id", "tool", "score", "rank", "fold"])
    return build_instances(df, {"q0": ["a", "b"], "q1": ["b"]}, {"a": 1.0, "b": 2.0, "c": 0.5},
                           alternatives={"q0": [["c"]]})


def test_instances_carry_the_sufficient_sets_through_subset_and_truncate():
    inst = _tiny()
    assert inst.sets.shape == (2, 2, 3)
    np.testing.assert_array_equal(inst.present, [[True, True], [True, False]])
    np.testing.assert_array_equal(inst.subset(np.array([1])).sets, inst.sets[[1]])
    cut = truncate(inst, 1)
    np.testing.assert_array_equal(cut.present, [[False, False], [False, False]])  # every set loses a member


def test_set_outcomes_count_an_alternative_as_success():
    inst = _tiny()
    exposed = np.array([[False, False, True], [False, True, False]])  # q0: {c} (the alternative), q1: {b} = G_x
    out = _mask_outcomes("r", 0, exposed, inst, 0.1, "exact", None, prefix=False)
    assert out["success"].tolist() == [True, True]
    assert out["covers_g"].tolist() == [False, True]  # q0's G_x is not inside {c}
    np.testing.assert_allclose(out["payoff"], [1 - 0.1 * 0.5, 1 - 0.1 * 2.0])
    np.testing.assert_allclose(out["success_partial"], [0.0, 1.0])
    partial = _mask_outcomes("r", 0, exposed, inst, 0.1, "partial", None, prefix=False)
    np.testing.assert_allclose(partial["payoff"], [0 - 0.1 * 0.5, 1 - 0.1 * 2.0])


@pytest.fixture(scope="module")
def batches():
    inst = _random_instances(11, n_tasks=80)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    return StateBatch.make(inst, p, 0.05, "exact", train=True), StateBatch.make(inst, p, 0.05, "exact", train=False)


def test_plugin_set_rule_is_the_core_optimum_on_calibrated_probabilities(batches):
    train, test = batches
    rule = make_policy("plugin_set").fit(train)
    p = rule.calibrated(test)
    assert not np.allclose(p, test.p)  # the calibration does something
    expected = plugin_set(p, test.inst.costs, test.inst.valid, test.lam, "exact", coverage=rule.coverage_)
    np.testing.assert_array_equal(rule.select(test), expected)


def test_learned_set_picks_the_best_inner_payoff_and_never_loses_to_the_plugin_inside(batches):
    train, _ = batches
    rule = make_policy("learned_set").fit(train)
    assert rule.shrinkage_ in rule.shrinkages and rule.scale_ in rule.scales
    assert np.isfinite(rule.inner_payoff_)


def test_concat_batches_pads_the_sufficient_sets(batches):
    train, _ = batches
    small = train.subset(np.arange(5))
    small.inst.sets, small.inst.present = small.inst.sets[:, :1], small.inst.present[:, :1]
    both = concat_batches([small, train])
    assert both.inst.sets.shape[1] == train.inst.sets.shape[1] and len(both.inst.present) == 5 + train.inst.T


def test_risk_set_misses_at_most_alpha_over_many_draws():
    """Realised miss over synthetic calibration/test draws is at most alpha (exactly alpha in expectation for the
    randomised rule: 0.212 +- 0.011 over 40 draws of 300 test tasks at alpha 0.2), and the rule is not vacuous."""
    alpha, misses, sizes, full = 0.2, [], [], []
    for seed in range(30):
        inst = _family(300, True, seed=seed)
        order = np.random.default_rng(seed).permutation(inst.T)
        train, test = inst.subset(order[:100]), inst.subset(order[100:])
        rule = make_policy("risk_set", random_state=seed, alpha=alpha)
        rule.fit(StateBatch.make(train, np.zeros(train.tools.shape), 0.1, "exact", train=True))
        batch = StateBatch.make(test, np.zeros(test.tools.shape), 0.1, "exact", train=False)
        out = _mask_outcomes("risk_set", 0, rule.select(batch), test, 0.1, "exact", None, False)
        misses.append(1 - out["success"].mean())
        sizes.append(out["n_exposed"].mean())
        full.append(test.n.mean())
    se = np.std(misses) / np.sqrt(len(misses))
    assert np.mean(misses) <= alpha + 3 * se  # at most alpha, up to three standard errors of the draws
    assert np.mean(misses) > alpha / 2  # not vacuously conservative
    assert np.mean(sizes) < np.mean(full)  # and it exposes fewer than every tool


def test_top5_is_an_untuned_prefix_of_five(batches):
    _, test = batches
    depth = make_policy("top5").decide(test)
    np.testing.assert_array_equal(depth, np.minimum(5, test.inst.n))


def test_static_set_exposes_one_vocabulary_subset(batches):
    train, test = batches
    rule = make_policy("static_set").fit(train)
    mask = rule.select(test)
    chosen = set(rule.static_.tools_.tolist())
    assert all((test.inst.tool_ids[mask] >= 0)) and set(test.inst.tool_ids[mask].tolist()) <= chosen


def test_evaluate_cell_scores_every_new_rule():
    inst = _random_instances(3, n_tasks=60)
    names = ["predict_threshold", *SET_RULES, "top5", "bor_depth", "oracle_set"]
    out = evaluate_cell(inst, 0.1, names).outcomes
    assert set(out["method"]) == set(names)
    sets = out[out["method"].isin(SET_RULES)]
    assert (sets["depth"] == -1).all() and (out[out["method"] == "top5"]["depth"] >= 0).all()
    oracle = out[out["method"] == "oracle_set"]
    assert oracle["success"].all()  # A = G_x, every G_x listed here


DIALS = {"risk_set": {"alpha": 0.2}, "fallback_set": {"search_cost": 2.0, "search_k": 2}}


@pytest.fixture(scope="module", params=["plugin_set", "learned_set", "risk_set", "fallback_set"])
def shipped(request):
    policy = StopPolicy(method=request.param, lam=0.2, dials=DIALS.get(request.param, {})).fit(
        _family(80, True), costs={"x": 6.0})
    return policy, LeanPolicy(json.loads(json.dumps(lean_numbers(policy))), full=lambda: policy)


def _request(rng, n):
    vocab = ["a", "b", "c", "d", "x"]
    names = list(rng.permutation(vocab[: min(n, 5)] + [f"new{j}" for j in range(n - min(n, 5))]))
    return {"tools": [_openai(m) for m in names], "scores": np.round(rng.normal(0.5, 0.3, n), 1).tolist(),
            "costs": rng.uniform(0.1, 7.0, n).tolist()}


def test_a_shipped_set_rule_returns_tools_in_ranked_order_without_a_depth_on_every_path(shipped):
    policy, lean = shipped
    rng = np.random.default_rng(2)
    reqs = [_request(rng, int(rng.integers(1, 40))) for _ in range(60)]
    batch = policy.select_batch(reqs)  # the vectorised path
    sizes = []
    for req, b in zip(reqs, batch):
        one = policy.select_batch([req])[0]  # the one-task path
        thin = lean.select_batch([req])[0]  # the lean path, from the JSON numbers
        assert b.depth is None and one.depth is None and thin.depth is None
        assert one.exposed == b.exposed == thin.exposed
        assert one.deferred == b.deferred == thin.deferred  # None unless the rule defers
        assert b.exposed == [name for name in b.ranked if name in set(b.exposed)]  # ranked order
        assert b.to_json()["depth"] is None and b.to_json()["exposed"] == b.exposed
        sizes.append(len(b.exposed))
    assert len(set(sizes)) > 1


def test_verified_success_rescores_a_set_rule_by_its_exposed_tools():
    from camdf.evaluation.verified import verified_outcomes

    inst = _tiny()
    bit = {"a": 1, "b": 2, "c": 4}
    codes = np.arange(8)
    table = np.stack([((codes & 3) == 3) | ((codes & 4) > 0), (codes & 2) > 0])  # q0: {a, b} or {c}; q1: {b}
    verified = {"prefix": np.zeros((2, 4), bool), "table": table, "bit": bit, "row": np.array([0, 1])}
    exposed = {"plugin_set": np.array([[False, False, True], [True, False, False]])}  # q0: {c}; q1: {a}
    outcomes = pd.DataFrame({"task_id": ["q0", "q1"], "method": "plugin_set", "depth": -1})
    assert verified_outcomes(outcomes, inst, verified, None, exposed).tolist() == [True, False]
    with pytest.raises(ValueError, match="set rule 'plugin_set' needs its exposed sets"):
        verified_outcomes(outcomes, inst, verified, None)
