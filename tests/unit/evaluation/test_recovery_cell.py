"""A cell under the recovery payoff (issue 43): the exact cell when the search is off, the product default
(defer everything, search every time) at its limit, labels under the new U, and the fallback-aware set rule."""

import math

import numpy as np
import pytest

from camdf.core.membership import MembershipModel
from camdf.core.recovery import Search, fallback_set, recovery_outcomes, recovery_prefix_payoffs
from camdf.core.sets import plugin_set, plugin_values, set_cost
from camdf.core.targets import deltas, stop_labels
from camdf.evaluation.cell import evaluate_cell
from camdf.policies import StateBatch, make_policy

from ..core.test_features import _random_instances

METHODS = ["camdf_lite", "full", "none", "plugin_set", "static_set", "fallback_set", "best_prefix"]


@pytest.fixture(scope="module")
def inst():
    return _random_instances(21, n_tasks=60)


def test_with_the_search_off_the_cell_is_the_exact_cell(inst):
    exact = evaluate_cell(inst, 0.1, METHODS, kind="exact").outcomes
    off = evaluate_cell(inst, 0.1, METHODS, kind="recovery", search=Search(cost=math.inf, k=3)).outcomes
    keep = exact["method"] != "fallback_set"  # its objective differs (it ranks two families), not its payoff
    for column in ("payoff", "success", "cost", "n_exposed"):
        np.testing.assert_array_equal(off.loc[keep, column].to_numpy(), exact.loc[keep, column].to_numpy())
    assert not off["searched"].any() and not off["recovered"].any()


def test_free_wide_search_lets_defer_everything_succeed_where_full_access_does(inst):
    out = evaluate_cell(inst, 0.1, ["none", "full"], kind="recovery", search=Search(cost=0.0, k=inst.N)).outcomes
    none, full = (out[out["method"] == m].set_index("task_id") for m in ("none", "full"))
    np.testing.assert_array_equal(none["success"], full.loc[none.index, "success"])
    assert (none["n_exposed"] == 0).all()
    # Defer-everything searches exactly on the tasks whose G_x is not empty (an empty set is covered by nothing).
    needs = inst.member.sum(axis=1) > 0
    rows = [list(inst.task_ids).index(t) for t in none.index]
    np.testing.assert_array_equal(none["searched"].to_numpy(), needs[rows])
    assert none["recovered"].sum() > 0


def test_training_labels_are_deltas_of_the_recovery_payoff(inst):
    search = Search(cost=2.0, k=2)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    batch = StateBatch.make(inst, p, 0.1, "exact", train=True, search=search)
    u = recovery_prefix_payoffs(inst, 0.1, search)
    np.testing.assert_array_equal(batch.u, u)
    label, weight = stop_labels(deltas(u))
    np.testing.assert_array_equal(batch.label, label)
    np.testing.assert_array_equal(batch.weight, weight)
    assert batch.subset(np.arange(5)).search == search and batch.head(3).search == search


def test_fallback_set_maximises_its_estimate_and_is_the_plugin_optimum_without_search(inst):
    rng = np.random.default_rng(4)
    p = rng.random(inst.tools.shape) ** 3 * inst.valid
    off = fallback_set(p, inst.costs, inst.valid, 0.1, math.inf, 3)
    best = plugin_set(p, inst.costs, inst.valid, 0.1)
    np.testing.assert_allclose(plugin_values(off, p, inst.costs, inst.valid, 0.1),
                               plugin_values(best, p, inst.costs, inst.valid, 0.1), atol=1e-12)
    cheap = fallback_set(p, inst.costs, inst.valid, 0.1, 0.0, 3)
    # The estimate of the chosen set is at least that of every ranked prefix (one of the families it ranks).
    def estimate(mask, s_cost=0.0, k=3):
        from camdf.core.recovery import returned_tools
        got = returned_tools(mask, inst.valid, np.broadcast_to(np.arange(inst.N), inst.tools.shape), k)
        s_a = plugin_values(mask, p, inst.costs, inst.valid, 0.0)
        s_ar = plugin_values(mask | got, p, inst.costs, inst.valid, 0.0)
        unit = inst.costs.sum(axis=1) / inst.n
        return s_ar - 0.1 * (set_cost(mask, inst.costs) + (1 - s_a) * (s_cost * unit + set_cost(got, inst.costs)))
    chosen = estimate(cheap)
    for t in range(inst.N + 1):
        prefix = (np.arange(inst.N)[None, :] < t) & inst.valid
        assert np.all(chosen >= estimate(prefix) - 1e-12)


def test_fallback_set_takes_the_training_search_and_its_dials_override_it(inst):
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    train = StateBatch.make(inst, p, 0.1, "exact", train=True, search=Search(cost=1.5, k=2))
    rule = make_policy("fallback_set").fit(train)
    assert (rule.search_cost_, rule.search_k_) == (1.5, 2)
    test = StateBatch.make(inst, p, 0.1, "exact", train=False)
    a = rule.select(test)
    np.testing.assert_array_equal(a, fallback_set(rule.calibrated(test), inst.costs, inst.valid, 0.1, 1.5, 2,
                                                  rule.coverage_))
    b = rule.select(test, search_cost=50.0, search_k=1)
    assert b.sum() > a.sum()  # a dear search preloads more
    with pytest.raises(ValueError, match="search_k"):
        rule.select(test, search_k=1.5)


def test_unaware_rules_decide_as_under_the_exact_payoff_and_are_scored_with_the_fallback(inst):
    search = Search(cost=1.0, k=3)
    exact = evaluate_cell(inst, 0.1, ["camdf_lite", "plugin_set"], kind="exact").outcomes
    unaware = evaluate_cell(inst, 0.1, ["camdf_lite", "plugin_set"], kind="recovery", train_kind="exact",
                            search=search).outcomes
    aware = evaluate_cell(inst, 0.1, ["camdf_lite", "plugin_set"], kind="recovery", search=search).outcomes
    np.testing.assert_array_equal(unaware["n_exposed"], exact["n_exposed"])  # the same decisions
    assert unaware["searched"].any() and (unaware["payoff"] != exact["payoff"]).any()  # a different score
    lite = lambda o: o[o["method"] == "camdf_lite"]  # noqa: E731
    assert not np.array_equal(lite(aware)["n_exposed"], lite(unaware)["n_exposed"])  # labels that know the search


def _estimate_by_rounds(mask, p, inst, lam, s_cost, k, rounds):
    """The fallback set's estimate of R rounds, spelled out round by round (the plain reference)."""
    from camdf.core.recovery import returned_tools

    listed = np.broadcast_to(np.arange(inst.N), inst.tools.shape)
    unit = inst.costs.sum(axis=1) / inst.n
    held, paid = mask, np.zeros(len(mask))
    for _ in range(rounds):
        miss = 1 - plugin_values(held, p, inst.costs, inst.valid, 0.0)
        more = returned_tools(held, inst.valid, listed, k)
        paid = paid + miss * (s_cost * unit + set_cost(more, inst.costs))
        held = held | more
    return plugin_values(held, p, inst.costs, inst.valid, 0.0) - lam * (set_cost(mask, inst.costs) + paid)


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_the_fallback_sets_estimate_counts_the_rounds_the_payoff_charges(inst, rounds):
    rng = np.random.default_rng(9)
    p = rng.random(inst.tools.shape) ** 3 * inst.valid
    chosen = fallback_set(p, inst.costs, inst.valid, 0.1, 1.0, 2, rounds=rounds)
    value = _estimate_by_rounds(chosen, p, inst, 0.1, 1.0, 2, rounds)
    for t in range(inst.N + 1):  # at least every ranked prefix's estimate of the same rounds
        prefix = (np.arange(inst.N)[None, :] < t) & inst.valid
        assert np.all(value >= _estimate_by_rounds(prefix, p, inst, 0.1, 1.0, 2, rounds) - 1e-12)
    if rounds == 1:  # one round: the estimate as it always was, bit for bit
        np.testing.assert_array_equal(chosen, fallback_set(p, inst.costs, inst.valid, 0.1, 1.0, 2))
    else:  # a second round paid where the first misses changes some task's choice
        assert not np.array_equal(chosen, fallback_set(p, inst.costs, inst.valid, 0.1, 1.0, 2))


def test_a_fallback_set_fitted_with_two_rounds_estimates_two_and_says_so_in_its_numbers(inst):
    from camdf.policies.plain import PortableFallbackSet

    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    train = StateBatch.make(inst, p, 0.1, "exact", train=True, search=Search(cost=1.0, k=2, rounds=2))
    rule = make_policy("fallback_set", carry_membership=True).fit(train)  # carries its model: exportable
    assert rule.search_rounds_ == 2
    test = StateBatch.make(inst, p, 0.1, "exact", train=False)
    np.testing.assert_array_equal(rule.select(test), fallback_set(rule.calibrated(test), inst.costs, inst.valid, 0.1,
                                                                  1.0, 2, rule.coverage_, rounds=2))
    numbers = rule.to_numbers()
    assert numbers["search_rounds_"] == 2
    assert PortableFallbackSet.from_numbers(numbers).search_rounds_ == 2
    old = {k: v for k, v in numbers.items() if k != "search_rounds_"}  # a rule exported before rounds: one
    assert PortableFallbackSet.from_numbers(old).search_rounds_ == 1
    with pytest.raises(ValueError, match="rule.search_rounds_"):
        PortableFallbackSet.from_numbers({**numbers, "search_rounds_": 0})
