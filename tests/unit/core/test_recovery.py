"""The recovery-aware payoff (camdf.core.recovery): its three branches by hand, its two limits, and a
plain reference on random instances."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camdf.core.instances import build_instances
from camdf.core.payoff import prefix_payoffs
from camdf.core.recovery import Search, recovery_outcomes, recovery_prefix_payoffs, search_ranks

from .test_payoff_labels import _build, tasks


def _one_task(required, alternatives=(), costs=None):
    """One task ranking a, b, c, d, e (in that order), costs 1, 2, 1, 3, 1 unless given."""
    tools = ["a", "b", "c", "d", "e"]
    costs = costs or dict(zip(tools, [1.0, 2.0, 1.0, 3.0, 1.0]))
    df = pd.DataFrame({"task_id": "q", "tool": tools, "score": [5.0, 4, 3, 2, 1], "rank": range(1, 6), "fold": 0})
    return build_instances(df, {"q": required}, costs, alternatives={"q": list(alternatives)})


def _mask(inst, names):
    return np.isin(inst.tools, names)


def test_covered_branch_pays_the_preloaded_set_only():
    inst = _one_task(["a", "b"])
    out = recovery_outcomes(_mask(inst, ["a", "b", "c"]), inst, 0.1, Search(cost=2.0, k=2))
    assert out.covered[0] and not out.searched[0] and not out.recovered[0] and out.loaded[0] == 0
    assert out.cost[0] == pytest.approx(4.0)           # C({a, b, c}) = 1 + 2 + 1
    assert out.payoff[0] == pytest.approx(1 - 0.1 * 4.0)


def test_recovered_branch_pays_search_and_returned_tools():
    # G = {a, d}; preload {a}; deferred b, c, d, e in search order; k = 3 returns b, c, d: d recovers.
    inst = _one_task(["a", "d"])
    out = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=2.0, k=3))
    assert not out.covered[0] and out.searched[0] and out.recovered[0] and out.success[0]
    unit = 8.0 / 5                                       # mean candidate cost
    cost = 1.0 + 2.0 * unit + (2.0 + 1.0 + 3.0)          # C(A) + S + C({b, c, d})
    assert out.loaded[0] == 3
    assert out.cost[0] == pytest.approx(cost)
    assert out.payoff[0] == pytest.approx(1 - 0.1 * cost)


def test_lost_branch_pays_the_search_and_scores_zero():
    # k = 2 returns b, c only: d is not found.
    inst = _one_task(["a", "d"])
    out = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=2.0, k=2))
    assert out.searched[0] and not out.recovered[0] and not out.success[0]
    cost = 1.0 + 2.0 * 8.0 / 5 + (2.0 + 1.0)
    assert out.payoff[0] == pytest.approx(-0.1 * cost)


def test_an_alternative_found_by_the_search_recovers():
    inst = _one_task(["e"], alternatives=[["b"]])
    out = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=0.0, k=1))
    assert out.recovered[0] and out.loaded[0] == 1


@settings(max_examples=60, deadline=None)
@given(tasks(), st.sampled_from([0.0, 0.5]))
def test_infinite_search_cost_is_the_exact_payoff_on_every_task(case, noise):
    spec, costs, lam = case
    inst = _build(spec, costs)
    u = recovery_prefix_payoffs(inst, lam, Search(cost=math.inf, k=2, noise=noise))
    np.testing.assert_array_equal(u, prefix_payoffs(inst, lam, "exact"))


@settings(max_examples=60, deadline=None)
@given(tasks())
def test_free_perfect_search_makes_defer_everything_reach_the_oracle_success(case):
    spec, costs, lam = case
    inst = _build(spec, costs)
    sets, present = inst.sufficient()
    # A perfect search ranks the tools of the task's first listed sufficient set first.
    first = np.argmax(present, axis=1)
    best = sets[np.arange(inst.T), first] & present[np.arange(inst.T), first][:, None]
    rank = np.argsort(np.argsort(~best, axis=1, kind="stable"), axis=1)
    k = max(1, int(best.sum(axis=1).max()))
    nothing = np.zeros(inst.tools.shape, dtype=bool)
    out = recovery_outcomes(nothing, inst, lam, Search(cost=0.0, k=k), rank=rank)
    oracle = inst.success[np.arange(inst.T), inst.n]  # the best any set of the list reaches
    np.testing.assert_array_equal(out.success, oracle)


def _reference(tools, cost_of, sets, depth, lam, search_cost, k):
    """Plain recovery payoff of preloading the first ``depth`` tools, search in list order."""
    a = set(tools[:depth])
    ok = lambda have: any(s <= have for s in sets)  # noqa: E731
    c = sum(cost_of[t] for t in a)
    if ok(a):
        return 1 - lam * c
    r = [t for t in tools if t not in a][:k]
    c += search_cost * sum(cost_of[t] for t in tools) / len(tools) + sum(cost_of[t] for t in r)
    return float(ok(a | set(r))) - lam * c


@settings(max_examples=100, deadline=None)
@given(tasks(), st.sampled_from([0.0, 0.7, 3.0]), st.integers(1, 3))
def test_prefix_payoffs_match_a_plain_reference(case, search_cost, k):
    spec, costs, lam = case
    inst = _build(spec, costs)
    u = recovery_prefix_payoffs(inst, lam, Search(cost=search_cost, k=k))
    for i in range(inst.T):
        n = inst.n[i]
        tools = list(inst.tools[i, :n])
        _, _, _, required, alts = spec[i]
        listed = [set(s) for s in [required, *alts] if set(s) <= set(tools)]
        ref = [_reference(tools, costs, listed, t, lam, search_cost, k) for t in range(n + 1)]
        np.testing.assert_allclose(u[i, : n + 1], ref, atol=1e-12)
        assert np.all(np.isneginf(u[i, n + 1:]))


def test_search_noise_is_fixed_by_task_and_tool_not_by_row():
    spec = [("p", ["x", "y", "z"], [3, 2, 1], ["x"], []), ("q", ["a", "b", "c", "d", "e"], [5, 4, 3, 2, 1], ["a"], [])]
    costs = dict.fromkeys("xyzabcde", 1.0)
    both, alone = _build(spec, costs), _build(spec[1:], costs)
    noisy = Search(cost=1.0, k=1, noise=2.0, random_state=3)
    ranks = search_ranks(both, noisy)
    np.testing.assert_array_equal(ranks[1], search_ranks(alone, noisy)[0])
    assert sorted(ranks[0]) == [0, 1, 2, 3, 4] and ranks[0][3:].min() == 3  # padding ranked last
    np.testing.assert_array_equal(search_ranks(both, Search(noise=0.0)), np.tile(np.arange(5), (2, 1)))
    # Noise this large reorders a five-tool list for some seed (and each seed always the same way).
    orders = {tuple(search_ranks(alone, Search(noise=5.0, random_state=s))[0]) for s in range(5)}
    assert len(orders) > 1


@pytest.mark.parametrize("bad", [dict(cost=-1.0), dict(cost=math.nan), dict(k=0), dict(k=1.5), dict(noise=-0.1),
                                 dict(rounds=0), dict(rounds=1.5)])
def test_bad_search_settings_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="search."):
        Search(**bad)


def test_a_second_round_searches_the_next_k_still_deferred_and_is_paid():
    # G = {a, d}; preload {a}; k = 2: round 1 returns b, c (a miss), round 2 returns d, e: d recovers.
    inst = _one_task(["a", "d"])
    one = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=2.0, k=2))
    two = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=2.0, k=2, rounds=2))
    assert not one.recovered[0] and one.rounds[0] == 1
    assert two.recovered[0] and two.rounds[0] == 2 and two.loaded[0] == 4
    unit = 8.0 / 5
    cost = 1.0 + 2 * 2.0 * unit + (2.0 + 1.0) + (3.0 + 1.0)  # C(A) + two rounds, each S + what it loaded
    assert two.cost[0] == pytest.approx(cost) and two.payoff[0] == pytest.approx(1 - 0.1 * cost)
    # a task the first round recovers pays one round only; a covered task none
    three = recovery_outcomes(_mask(inst, ["a"]), inst, 0.1, Search(cost=2.0, k=3, rounds=3))
    assert three.recovered[0] and three.rounds[0] == 1 and three.loaded[0] == 3
    covered = recovery_outcomes(_mask(inst, ["a", "d"]), inst, 0.1, Search(cost=2.0, k=2, rounds=3))
    assert covered.rounds[0] == 0 and covered.cost[0] == pytest.approx(4.0)


@settings(max_examples=40, deadline=None)
@given(tasks(), st.sampled_from([1.0, 4.0]), st.sampled_from([1, 2]))
def test_more_rounds_never_lose_a_recovery_and_one_round_is_the_default_bit_for_bit(case, search_cost, k):
    spec, costs, lam = case
    inst = _build(spec, costs)
    masks = np.broadcast_to(np.arange(inst.N)[None, None, :] < np.arange(inst.N + 1)[:, None, None],
                            (inst.N + 1, inst.T, inst.N))
    base = recovery_outcomes(masks, inst, lam, Search(cost=search_cost, k=k))
    one = recovery_outcomes(masks, inst, lam, Search(cost=search_cost, k=k, rounds=1))
    two = recovery_outcomes(masks, inst, lam, Search(cost=search_cost, k=k, rounds=2))
    np.testing.assert_array_equal(one.payoff, base.payoff)
    assert (two.success >= one.success).all() and (two.rounds >= one.rounds).all() and (two.rounds <= 2).all()
    assert (two.cost >= one.cost - 1e-12).all()
