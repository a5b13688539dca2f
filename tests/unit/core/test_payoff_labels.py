"""Payoffs, Delta labels and Theorem 1, checked against a plain reference on random instances."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camdf.core.instances import build_instances
from camdf.core.targets import deltas, path_regret, stop_labels, walk
from camdf.core.payoff import at_depth, prefix_payoffs

from .reference import deltas_ref, prefix_payoffs_ref

POOL = [f"t{i}" for i in range(8)]


@st.composite
def tasks(draw):
    """A few tasks with ranked candidates, tied scores, random costs, G_x and alternatives."""
    out = []
    for i in range(draw(st.integers(1, 5))):
        cands = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=8, unique=True))
        scores = draw(st.lists(st.integers(0, 3), min_size=len(cands), max_size=len(cands)))  # ties
        required = draw(st.lists(st.sampled_from(cands), max_size=len(cands), unique=True))
        alts = draw(st.lists(st.lists(st.sampled_from(POOL), max_size=3, unique=True), max_size=2))
        out.append((f"q{i}", cands, scores, required, alts))
    costs = {t: draw(st.floats(0.05, 3.0)) for t in POOL}
    lam = draw(st.sampled_from([0.0, 0.05, 0.12, 0.3, 1.0]))
    return out, costs, lam


def _build(spec, costs):
    rows = []
    for tid, cands, scores, _, _ in spec:
        order = sorted(range(len(cands)), key=lambda j: (-scores[j], j))
        rows += [(tid, cands[j], float(scores[j]), r + 1, 0) for r, j in enumerate(order)]
    df = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    inst = build_instances(df, {s[0]: s[3] for s in spec}, costs, alternatives={s[0]: s[4] for s in spec})
    return inst


@settings(max_examples=150, deadline=None)
@given(tasks(), st.sampled_from(["exact", "partial"]))
def test_payoffs_and_deltas_match_reference(case, kind):
    spec, costs, lam = case
    inst = _build(spec, costs)
    u = prefix_payoffs(inst, lam, kind)
    d = deltas(u)
    label, weight = stop_labels(d)
    for i in range(inst.T):
        n = inst.n[i]
        tools = list(inst.tools[i, :n])
        tid, _, _, required, alts = spec[i]
        ref_u = prefix_payoffs_ref(tools, [costs[t] for t in tools], required, alts, lam, kind)
        np.testing.assert_allclose(u[i, : n + 1], ref_u, atol=1e-12)
        assert np.all(np.isneginf(u[i, n + 1:]))
        ref_d = deltas_ref(ref_u)
        np.testing.assert_allclose(d[i, :n], ref_d, atol=1e-12)
        assert np.all(np.isnan(d[i, n:]))
        assert list(label[i, :n]) == [x >= 0 for x in ref_d]
        np.testing.assert_allclose(weight[i, :n], np.abs(ref_d), atol=1e-12)
        assert np.all(weight[i, n:] == 0)


@settings(max_examples=150, deadline=None)
@given(tasks(), st.sampled_from(["exact", "partial"]), st.integers(0, 2**31 - 1))
def test_theorem1_pathwise_regret_is_sum_of_wrong_decisions(case, kind, seed):
    """best-prefix payoff - rule payoff == sum of |Delta_t| over the rule's wrong decisions on its path."""
    spec, costs, lam = case
    inst = _build(spec, costs)
    u = prefix_payoffs(inst, lam, kind)
    d = deltas(u)
    rng = np.random.default_rng(seed)
    stop = rng.random(inst.tools.shape) < rng.random()  # an arbitrary stopping rule
    depth = walk(stop, inst.n)
    regret = u.max(axis=1) - at_depth(u, depth)
    np.testing.assert_allclose(path_regret(d, depth, inst.n), regret, atol=1e-9)
    assert np.all(regret >= -1e-12)


def test_empty_required_set_is_success_at_depth_zero():
    df = pd.DataFrame({"task_id": ["a", "a"], "tool": ["x", "y"], "score": [2.0, 1.0], "rank": [1, 2], "fold": 0})
    inst = build_instances(df, {"a": []}, {"x": 1.0, "y": 1.0})
    assert inst.success[0].tolist() == [True, True, True]
    assert inst.partial[0].tolist() == [1.0, 1.0, 1.0]
    u = prefix_payoffs(inst, 0.1, "exact")
    np.testing.assert_allclose(u[0], [1.0, 0.9, 0.8])
    np.testing.assert_allclose(deltas(u)[0], [0.1, 0.1])


def test_alternative_set_covers_earlier_than_required():
    df = pd.DataFrame({"task_id": ["a"] * 3, "tool": ["x", "y", "z"], "score": [3.0, 2.0, 1.0],
                       "rank": [1, 2, 3], "fold": 0})
    inst = build_instances(df, {"a": ["x", "z"]}, {"x": 1.0, "y": 1.0, "z": 1.0}, alternatives={"a": [["x"]]})
    assert inst.success[0].tolist() == [False, True, True, True]
    np.testing.assert_allclose(inst.partial[0], [0.0, 0.5, 0.5, 1.0])


def test_zero_lambda_makes_full_access_optimal_and_labels_continue_until_covered():
    df = pd.DataFrame({"task_id": ["a"] * 3, "tool": ["x", "y", "z"], "score": [3.0, 2.0, 1.0],
                       "rank": [1, 2, 3], "fold": 0})
    inst = build_instances(df, {"a": ["y"]}, {"x": 1.0, "y": 1.0, "z": 1.0})
    d = deltas(prefix_payoffs(inst, 0.0, "exact"))
    np.testing.assert_allclose(d[0], [-1.0, -1.0, 0.0])
    assert stop_labels(d)[0][0].tolist() == [False, False, True]


def test_bad_lambda_and_kind_are_refused():
    df = pd.DataFrame({"task_id": ["a"], "tool": ["x"], "score": [1.0], "rank": [1], "fold": 0})
    inst = build_instances(df, {"a": ["x"]}, {"x": 1.0})
    with pytest.raises(ValueError, match="lam"):
        prefix_payoffs(inst, -0.1)
    with pytest.raises(ValueError, match="kind"):
        prefix_payoffs(inst, 0.1, "fuzzy")
