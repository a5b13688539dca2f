"""Set outcomes, the plug-in set optimiser and the conformal risk set, against plain references and brute force."""

import itertools

import numpy as np
import pytest

from camdf.core.conformal import crc_threshold, task_risk_depth
from camdf.core.instances import curves_from_sets
from camdf.core.payoff import cumulative_costs
from camdf.core.risk_sets import RiskSet, crc_threshold_randomised, nested_risk, nested_success, task_risk_set
from camdf.core.sets import (
    nested_masks, nested_order, partial_weights, plugin_set, plugin_values, prefix_masks, set_payoffs, set_success,
    sufficient_sets, task_plugin_set,
)


def random_tasks(rng, T, N, ragged=True, alt_rate=0.4):
    """T tasks of up to N candidates: n, G_x positions, alternatives (some off the list: None)."""
    n = rng.integers(1, N + 1, T) if ragged else np.full(T, N)
    member = np.zeros((T, N), dtype=bool)
    positions = []
    for i in range(T):
        g = rng.choice(n[i], size=rng.integers(0, min(3, n[i]) + 1), replace=False)
        member[i, g] = True
        task_sets = [np.sort(g)]
        while rng.random() < alt_rate and len(task_sets) < 3:
            if rng.random() < 0.2:
                task_sets.append(None)  # an alternative with a tool off the list
            else:
                task_sets.append(np.sort(rng.choice(n[i], size=rng.integers(1, min(2, n[i]) + 1), replace=False)))
        positions.append(task_sets)
    valid = np.arange(N)[None, :] < n[:, None]
    return n, member, positions, valid


def success_ref(mask_row, task_sets):
    exposed = set(np.flatnonzero(mask_row).tolist())
    return any(s is not None and set(s.tolist()) <= exposed for s in task_sets)


# ---------------------------------------------------------------- outcomes


def test_set_outcomes_match_the_prefix_curves_and_a_plain_reference():
    rng = np.random.default_rng(0)
    T, N = 60, 8
    n, member, positions, valid = random_tasks(rng, T, N)
    costs = np.where(valid, rng.uniform(0.1, 2.0, (T, N)), 0.0)
    sets, present = sufficient_sets(positions, N)
    success, partial = curves_from_sets(member, positions, n)
    lam = 0.12
    for t in range(N + 1):
        mask = prefix_masks(np.minimum(t, n), N)
        reach = t <= n
        np.testing.assert_array_equal(set_success(mask, sets, present)[reach], success[reach, t])
        u = set_payoffs(mask, costs, lam, "exact", sets, present)
        np.testing.assert_array_equal(u[reach], (success[:, t] - lam * cumulative_costs(costs)[:, t])[reach])
        up = set_payoffs(mask, costs, lam, "partial", member=member)
        np.testing.assert_array_equal(up[reach], (partial[:, t] - lam * cumulative_costs(costs)[:, t])[reach])
    # arbitrary masks, with a leading batch axis, against set inclusion in plain Python
    masks = rng.random((5, T, N)) < 0.5
    masks &= valid
    got = set_success(masks, sets, present)
    assert got.shape == (5, T)
    for m in range(5):
        assert got[m].tolist() == [success_ref(masks[m, i], positions[i]) for i in range(T)]


def test_sufficient_sets_rejects_positions_off_the_width():
    with pytest.raises(ValueError, match=r"positions_of_sets\[0\]\[1\]"):
        sufficient_sets([[np.array([0]), np.array([3])]], 3)


def test_empty_sufficient_set_is_always_met_and_absent_sets_never():
    sets, present = sufficient_sets([[np.array([], dtype=int)], [None], [None, np.array([1])]], 2)
    none = np.zeros((3, 2), dtype=bool)
    assert set_success(none, sets, present).tolist() == [True, False, False]
    assert set_success(~none, sets, present).tolist() == [True, False, True]


# ---------------------------------------------------------------- plug-in set


def brute_force(p, costs, lam, coverage=1.0):
    """Best subset of one task by enumeration, by value then fewest tools then smallest code."""
    n = len(p)
    best = None
    for size in range(n + 1):
        for A in itertools.combinations(range(n), size):
            out = [j for j in range(n) if j not in A]
            v = coverage * float(np.prod([1.0 - p[j] for j in out])) - lam * sum(costs[j] for j in A)
            if best is None or v > best[0] + 1e-15:
                best = (v, A)
    return best


def test_plugin_set_equals_brute_force_on_short_lists_with_alternatives():
    """Continuous random instances (no exact ties): the same set as enumeration, and the same true payoff
    when the evaluation counts alternatives."""
    rng = np.random.default_rng(1)
    T, N = 120, 9
    n, member, positions, valid = random_tasks(rng, T, N)
    p = np.where(valid, rng.beta(0.5, 1.0, (T, N)), 0.0)
    costs = np.where(valid, rng.lognormal(0.0, 0.8, (T, N)), 0.0)
    sets, present = sufficient_sets(positions, N)
    coverage = rng.uniform(0.7, 1.0, T)
    for lam in (0.02, 0.12, 0.5):
        mask = plugin_set(p, costs, valid, lam, coverage=coverage)
        ref = np.zeros_like(mask)
        for i in range(T):
            value, A = brute_force(p[i, :n[i]], costs[i, :n[i]], lam, coverage[i])
            ref[i, list(A)] = True
            assert plugin_values(mask[i:i + 1], p[i:i + 1], costs[i:i + 1], valid[i:i + 1], lam,
                                 coverage=coverage[i:i + 1])[0] == pytest.approx(value, abs=1e-12)
        np.testing.assert_array_equal(mask, ref)
        truth = set_payoffs(mask, costs, lam, "exact", sets, present)
        truth_ref = [float(success_ref(ref[i], positions[i])) - lam * costs[i, ref[i]].sum() for i in range(T)]
        np.testing.assert_allclose(truth, truth_ref, atol=1e-12)
        assert not (mask & ~valid).any()


def test_plugin_set_gap_to_brute_force_is_zero_up_to_14_candidates(capsys):
    """The nested-prefix solution against vectorised enumeration of all 2^n subsets, n = 1..14, with
    edge values (p in {0, 1}, free tools) mixed in: the optimality gap is 0 on every instance."""
    rng = np.random.default_rng(2)
    gaps = []
    for n in range(1, 15):
        T = 40
        p = rng.uniform(0, 1, (T, n)) ** rng.choice([0.5, 1.0, 3.0])
        edge = rng.random((T, n))
        p = np.where(edge < 0.05, 0.0, np.where(edge > 0.97, 1.0, p))
        costs = rng.lognormal(0.0, 1.0, (T, n)) * (rng.random((T, n)) > 0.05)
        valid = np.ones((T, n), dtype=bool)
        lam = float(rng.choice([0.01, 0.05, 0.12, 0.3, 1.0]))
        codes = np.arange(1 << n)
        table = ((codes[:, None] >> np.arange(n)) & 1).astype(bool)        # (2^n, n)
        out = ~table
        with np.errstate(divide="ignore"):
            lq = np.log1p(-p)
        log_suff = np.where(out[:, None, :], lq[None], 0.0).sum(axis=2)   # (2^n, T)
        all_values = np.exp(log_suff) - lam * (table.astype(float) @ costs.T)
        mask = plugin_set(p, costs, valid, lam)
        gaps.append(all_values.max(axis=0) - plugin_values(mask, p, costs, valid, lam))
    gaps = np.concatenate(gaps)
    with capsys.disabled():
        print(f"\nplugin_set vs brute force, {len(gaps)} instances n 1..14: mean gap {gaps.mean():.2e}, "
              f"max gap {gaps.max():.2e}")
    assert gaps.max() <= 1e-12


def test_task_plugin_set_is_the_batch_decision():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 15))
        p = rng.beta(0.5, 1.0, n)
        p[rng.random(n) < 0.1] = 0.0
        costs = rng.lognormal(0.0, 0.7, n) * (rng.random(n) > 0.1)
        lam = float(rng.choice([0.0, 0.05, 0.12, 0.4]))
        q = float(rng.uniform(0.5, 1.0))
        batch = plugin_set(p[None], costs[None], np.ones((1, n), dtype=bool), lam, coverage=q)[0]
        fast = task_plugin_set(p.tolist(), costs.tolist(), lam, q)
        assert sorted(fast) == np.flatnonzero(batch).tolist()


def test_partial_plugin_set_is_the_modular_optimum_and_the_independent_weights_are_exact():
    rng = np.random.default_rng(4)
    n = 6
    p = rng.uniform(0.05, 0.9, (1, n))
    valid = np.ones((1, n), dtype=bool)
    # E[|G & A| / |G|] (1 if G empty) by enumerating every G under independence.
    exact = np.zeros(n)
    empty = 0.0
    for G in itertools.product([0, 1], repeat=n):
        prob = float(np.prod([p[0, j] if G[j] else 1 - p[0, j] for j in range(n)]))
        if sum(G) == 0:
            empty += prob
        for j in range(n):
            exact[j] += prob * G[j] / max(sum(G), 1)
    base, w = partial_weights(p, valid, "independent")
    np.testing.assert_allclose(w[0], exact, atol=1e-12)
    assert base[0] == pytest.approx(empty, abs=1e-12)
    costs = rng.uniform(0.1, 1.0, (1, n))
    for estimate in ("ratio", "independent"):
        mask = plugin_set(p, costs, valid, 0.1, kind="partial", partial=estimate)
        values = [plugin_values(np.array([A], dtype=bool), p, costs, valid, 0.1, "partial", partial=estimate)[0]
                  for A in itertools.product([False, True], repeat=n)]
        assert plugin_values(mask, p, costs, valid, 0.1, "partial", partial=estimate)[0] == pytest.approx(max(values))


def test_plugin_set_validates_its_arguments():
    p = np.full((1, 2), 0.5)
    with pytest.raises(ValueError, match="kind"):
        plugin_set(p, p, p > 0, 0.1, kind="both")
    with pytest.raises(ValueError, match="lam"):
        plugin_set(p, p, p > 0, -1.0)


# ---------------------------------------------------------------- nested order and risk set


def test_nested_order_sorts_evidence_per_cost_with_rank_ties_and_padding_last():
    p = np.array([[0.5, 0.75, 0.0, 1.0, 0.5], [0.5, 0.5, 0.3, 0.0, 0.0]])
    costs = np.array([[1.0, 2.0, 1.0, 5.0, 1.0], [2.0, 1.0, 0.0, 0.0, 0.0]])
    valid = np.array([[True] * 5, [True, True, True, False, False]])
    # task 0 keys: log 2 = 0.693, log 4 / 2 = 0.693 (a tie: rank order), 0, inf (p = 1), 0.693
    # task 1 keys: 0.347, 0.693, inf (free); padding last
    np.testing.assert_array_equal(nested_order(p, costs, valid), [[3, 0, 1, 4, 2], [2, 1, 0, 3, 4]])


def test_nested_success_with_the_identity_order_is_the_prefix_curve():
    rng = np.random.default_rng(5)
    T, N = 50, 7
    n, member, positions, valid = random_tasks(rng, T, N)
    sets, present = sufficient_sets(positions, N)
    success, _ = curves_from_sets(member, positions, n)
    identity = np.broadcast_to(np.arange(N), (T, N)).copy()
    np.testing.assert_array_equal(nested_success(identity, sets, present), success)
    # any order: success at depth t is set inclusion in the first t re-ranked candidates
    order = np.argsort(rng.random((T, N)) + ~valid, axis=1, kind="stable")
    got = nested_success(order, sets, present)
    for t in range(N + 1):
        masks = nested_masks(order, np.minimum(t, n))
        np.testing.assert_array_equal(got[:, t][t <= n], set_success(masks, sets, present)[t <= n])


def test_randomised_crc_threshold():
    m = np.array([0.9, 0.1, 0.5, 0.3])
    # n = 4, alpha = 0.3: alpha (n + 1) = 1.5, k = 1, delta = 0.5: rank 2 when u < 0.5, else rank 1.
    assert crc_threshold_randomised(m, 0.3, 0.2) == 0.3
    assert crc_threshold_randomised(m, 0.3, 0.7) == 0.1
    assert crc_threshold_randomised(m, 0.3, 1.0) == crc_threshold(m, 0.3)
    assert crc_threshold_randomised(m, 0.1, 0.9) == -np.inf  # k = 0 and no upgrade: expose everything
    assert crc_threshold_randomised(m, 0.99, 0.0) == np.inf   # rank 5 > n


def _draw(rng, T, N, sharp=1.6, shift=0.8):
    """Synthetic tasks whose G_x is always listed, with alternatives and miscalibrated probabilities."""
    pi = rng.beta(0.5, 1.5, (T, N))
    member = rng.random((T, N)) < pi
    positions = []
    for i in range(T):
        g = np.flatnonzero(member[i])
        task_sets = [g]
        if len(g) and rng.random() < 0.3:  # an alternative: one required tool swapped for another
            others = np.setdiff1d(np.arange(N), g)
            if len(others):
                alt = g.copy()
                alt[rng.integers(len(g))] = rng.choice(others)
                task_sets.append(np.sort(alt))
        positions.append(task_sets)
    logit = np.log(pi) - np.log1p(-pi)
    p = 1.0 / (1.0 + np.exp(-(sharp * logit + shift)))  # over-confident and biased up: not calibrated
    costs = rng.lognormal(0.0, 0.5, (T, N))
    sets, present = sufficient_sets(positions, N)
    return p, costs, np.ones((T, N), dtype=bool), sets, present


@pytest.mark.parametrize("randomised", [True, False])
def test_risk_set_realised_miss_is_at_most_alpha_and_not_vacuous(randomised, capsys):
    rng = np.random.default_rng(6)
    alpha, draws, n_cal, n_test, N = 0.1, 300, 100, 50, 8
    miss, size = [], []
    for d in range(draws):
        p, costs, valid, sets, present = _draw(rng, n_cal + n_test, N)
        cal, te = slice(0, n_cal), slice(n_cal, None)
        rule = RiskSet(alpha=alpha, randomised=randomised, random_state=d).fit(
            p[cal], costs[cal], valid[cal], sets[cal], present[cal])
        mask = rule.predict(p[te], costs[te], valid[te])
        miss.append(1.0 - set_success(mask, sets[te], present[te]).mean())
        size.append(mask.sum(axis=1).mean())
    miss = np.asarray(miss)
    se = miss.std(ddof=1) / np.sqrt(draws)
    with capsys.disabled():
        print(f"\nrisk_set (randomised={randomised}), alpha {alpha}, {draws} draws of {n_cal} calibration + "
              f"{n_test} test tasks: realised miss {miss.mean():.4f} (SE {se:.4f}), {np.mean(size):.2f} of {N} tools")
    assert miss.mean() <= alpha + 2 * se
    assert miss.mean() > alpha / 4
    assert np.mean(size) < N - 1  # it does not simply expose everything


def test_risk_set_paths_agree_and_follow_the_prefix_rule_on_one_task():
    rng = np.random.default_rng(7)
    p, costs, valid, sets, present = _draw(rng, 200, 9)
    rule = RiskSet(alpha=0.15, random_state=1).fit(p[:100], costs[:100], valid[:100], sets[:100], present[:100])
    mask = rule.predict(p[100:], costs[100:], valid[100:])
    tau = rule.threshold()
    for i in range(100):
        fast = task_risk_set(p[100 + i].tolist(), costs[100 + i].tolist(), tau)
        assert sorted(fast) == np.flatnonzero(mask[i]).tolist()
    # with equal costs the re-ranked order is the order of p; with p already sorted that is the
    # ranking, and the set is the prefix camdf_risk's plain-Python path exposes
    ps = -np.sort(-p[100:110], axis=1)
    ones = np.ones_like(ps)
    for row in ps:
        assert task_risk_set(row.tolist(), ones[0].tolist(), tau) == list(range(task_risk_depth(row.tolist(), tau)))
    np.testing.assert_allclose(nested_risk(ps, nested_order(ps, ones, valid[:10]), valid[:10])[:, 0],
                               1.0 - np.prod(1.0 - ps, axis=1), atol=1e-12)


def test_risk_set_needs_fit():
    with pytest.raises(AttributeError, match="fit"):
        RiskSet().threshold()
