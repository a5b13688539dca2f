"""One payoff path (issue 37): every rule's outcome is scored from its mask, and a prefix's mask scores bit for
bit as the prefix curves score it, on lists long enough (over 8 tools) for the order of a sum to show, and on
lists cut to a top N, where G_x's cut-off tools still count in |G_x|."""

import math

import numpy as np
import pytest

from camdf.core.instances import truncate
from camdf.core.payoff import cumulative_costs, prefix_payoffs
from camdf.core.recovery import Search, recovery_prefix_payoffs
from camdf.core.sets import prefix_masks, set_cost
from camdf.evaluation.cell import _mask_outcomes

from ..core.test_features import _random_instances


@pytest.fixture(scope="module", params=[None, 9], ids=["whole", "top9"])
def inst(request):
    return truncate(_random_instances(5, n_tasks=50, max_n=30, vocab=40), request.param)


def _prefix_rows(inst, depth, kind, lam, search=None, prefix=True):
    return _mask_outcomes("rule", 0, prefix_masks(depth, inst.N), inst, lam, kind, search, prefix)


@pytest.mark.parametrize("kind", ["exact", "partial"])
def test_a_prefix_mask_scores_as_the_prefix_curves_bit_for_bit(inst, kind):
    assert inst.N > 8  # pairwise and ranked-order sums differ only past 8 tools
    lam = 0.37
    u, cum = prefix_payoffs(inst, lam, kind), cumulative_costs(inst.costs)
    rows = np.arange(inst.T)
    for t in range(inst.N + 1):
        depth = np.minimum(t, inst.n)
        out = _prefix_rows(inst, depth, kind, lam)
        np.testing.assert_array_equal(out["depth"], depth)
        np.testing.assert_array_equal(out["cost"], cum[rows, depth])
        np.testing.assert_array_equal(out["payoff"], u[rows, depth])
        np.testing.assert_array_equal(out["success"], inst.success[rows, depth])
        np.testing.assert_array_equal(out["success_partial"], inst.partial[rows, depth])
        np.testing.assert_array_equal(out["covers_g"], inst.partial[rows, depth] >= 1.0)


def test_a_set_holding_a_prefix_scores_as_that_prefix(inst):
    depth = np.random.default_rng(2).integers(0, inst.n + 1)
    as_prefix = _prefix_rows(inst, depth, "exact", 0.2)
    as_set = _prefix_rows(inst, depth, "exact", 0.2, prefix=False)
    assert (as_set["depth"] == -1).all()
    cols = ["cost", "payoff", "success", "success_partial", "covers_g", "n_exposed"]
    assert as_set[cols].equals(as_prefix[cols])


@pytest.mark.parametrize("search", [Search(cost=2.0, k=2), Search(cost=math.inf, k=3)], ids=["on", "off"])
def test_under_the_fallback_a_prefix_mask_scores_as_the_recovery_curve(inst, search):
    u = recovery_prefix_payoffs(inst, 0.15, search)
    rows = np.arange(inst.T)
    for t in (0, 1, 5, 9, inst.N):
        depth = np.minimum(t, inst.n)
        out = _prefix_rows(inst, depth, "recovery", 0.15, search)
        np.testing.assert_array_equal(out["payoff"], u[rows, depth])
        np.testing.assert_array_equal(out["success_partial"], inst.partial[rows, depth])


def test_the_ranked_order_cost_is_the_cumulative_cost_where_numpy_sum_is_not():
    costs = np.random.default_rng(0).lognormal(size=(40, 64))
    mask = prefix_masks(np.full(40, 40), 64)
    assert np.array_equal(set_cost(mask, costs), cumulative_costs(costs)[:, 40])
    assert not np.array_equal(np.where(mask, costs, 0.0).sum(axis=1), cumulative_costs(costs)[:, 40])


def test_g_size_counts_the_required_tools_cut_off_the_list():
    whole = _random_instances(5, n_tasks=50, max_n=30, vocab=40)
    cut = truncate(whole, 4)
    g, listed = whole.member.sum(axis=1), cut.member.sum(axis=1)
    assert ((0 < listed) & (listed < g)).any() and ((listed == 0) & (g > 0)).any()  # the cut took tools from G_x
    # Exact where a required tool is still listed; 1 where all were cut (any set then holds 0 of them).
    np.testing.assert_array_equal(cut.g_size, np.where(listed > 0, g, np.minimum(g, 1)))
