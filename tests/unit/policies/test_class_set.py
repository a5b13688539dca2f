"""class_set: the class multinomial's expected-payoff set. With no weight on the scores it is the static set; with
weight, the scores move the decision; inner CV (group-aware, repeated) picks the setting it reports; above the
enumerated vocabulary it is the static set; it runs in a cell beside the static set."""

import numpy as np
import pandas as pd
import pytest

from camdf.core.class_sets import MAX_EXACT, ClassSetModel, task_classes
from camdf.core.instances import build_instances
from camdf.core.set_baselines import StaticSet
from camdf.evaluation.cell import evaluate_cell
from camdf.policies import StateBatch, make_policy
from camdf.policies.class_set import GRID

from ..core.test_features import _random_instances

VOCAB = ["a", "b", "c", "d", "e", "f"]
COSTS = {"a": 0.6, "b": 0.5, "c": 0.7, "d": 0.4, "e": 0.3, "f": 0.9}
#: Three kinds of task: G = {a, b}, G = {c, d}, and G = {a} or its alternative {e}.
KINDS = ({"required": ["a", "b"], "alt": []}, {"required": ["c", "d"], "alt": []},
         {"required": ["a"], "alt": [["e"]]})


def _tasks(n: int, signal: float, seed: int = 0, groups: bool = False):
    """``n`` tasks listing all six tools, the kind cycling; a kind's tools score ``signal`` above the rest (plus noise)."""
    rng = np.random.default_rng(seed)
    rows, required, alternatives, group = [], {}, {}, {}
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        tid = f"q{i}"
        needed = set(kind["required"]) | {t for alt in kind["alt"] for t in alt}
        scores = np.array([signal * (t in needed) for t in VOCAB]) + rng.normal(0, 0.3, len(VOCAB))
        order = np.argsort(-scores, kind="stable")
        rows += [(tid, VOCAB[j], float(scores[j]), r + 1, i % 5) for r, j in enumerate(order)]
        required[tid], alternatives[tid] = kind["required"], kind["alt"]
        group[tid] = f"g{i // 6}"
    df = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    return build_instances(df, required, COSTS, alternatives=alternatives, vocab=VOCAB,
                           groups=group if groups else None)


def _fit(inst, C, feature="normalised", kind="exact"):
    sets, present = inst.sufficient()
    return ClassSetModel(C, feature).fit(inst.scores, inst.tool_ids, inst.valid,
                                         task_classes(inst.tool_ids, sets, present), len(inst.vocab), kind)


def _exposed(inst, mask):
    return [frozenset(inst.tools[i][mask[i]]) for i in range(inst.T)]


@pytest.mark.parametrize("lam", [0.05, 0.3, 0.8])
def test_with_no_weight_on_the_scores_it_is_the_static_set(lam):
    inst = _tasks(60, signal=2.0)
    sets, present = inst.sufficient()
    static = StaticSet().fit(inst.tool_ids, inst.valid, inst.costs, lam, sets, present)
    model = _fit(inst, C=1e-9)
    mask = model.select(inst.scores, inst.tool_ids, inst.valid, inst.costs, lam)
    assert set(_exposed(inst, mask)) == {frozenset(np.asarray(inst.vocab)[static.tools_])}


def test_with_weight_on_informative_scores_each_kind_gets_its_own_set():
    train, test = _tasks(90, signal=2.0, seed=1), _tasks(30, signal=2.0, seed=2)
    model = _fit(train, C=1.0)
    mask = model.select(test.scores, test.tool_ids, test.valid, test.costs, 0.12)
    # The smallest sufficient set of each kind (the third kind's cheaper alternative {e}), nothing else.
    want = [frozenset(["a", "b"]), frozenset(["c", "d"]), frozenset(["e"])]
    assert _exposed(test, mask) == [want[i % 3] for i in range(test.T)]
    static = StaticSet().fit(train.tool_ids, train.valid, train.costs, 0.12, *train.sufficient())
    assert len(static.tools_) >= 4  # the static set must hold every kind's set at once


def test_partial_payoff_exposes_each_tool_whose_expected_share_pays_its_cost():
    inst = _tasks(60, signal=1.0, seed=3)
    model = _fit(inst, C=1.0, kind="partial")
    lam = 0.5
    mask = model.select(inst.scores, inst.tool_ids, inst.valid, inst.costs, lam)
    P = model.probabilities(inst.scores, inst.tool_ids, inst.valid)
    for i in range(inst.T):
        share = {t: sum(P[i, k] / len(c[1]) for k, c in enumerate(model.classes_) if t in c[1])
                 for t in range(len(inst.vocab))}
        want = {inst.vocab[t] for t, s in share.items() if round(s - lam * COSTS[inst.vocab[t]], 10) > 0}
        assert set(inst.tools[i][mask[i]]) == want


def test_inner_cv_is_repeated_group_aware_and_picks_the_setting_it_reports():
    inst = _tasks(90, signal=1.0, seed=4, groups=True)
    p = np.where(inst.valid, 0.5, 0.0)
    rule = make_policy("class_set").fit(StateBatch.make(inst, p, 0.12, "exact", train=True))
    assert rule.inner_split_ == "group"
    names = [f"{feature}/{C:g}" for feature, C in GRID]
    assert list(rule.inner_payoffs_) == names
    best = max(range(len(GRID)), key=lambda k: (rule.inner_payoffs_[names[k]], -k))
    assert rule.choice_ == GRID[best]
    assert rule.tuned_parameters() == {"model": "classes", "feature": GRID[best][0], "C": GRID[best][1]}
    again = make_policy("class_set").fit(StateBatch.make(inst, p, 0.12, "exact", train=True))
    batch = StateBatch.make(inst, p, 0.12, "exact", train=False)
    np.testing.assert_array_equal(rule.select(batch), again.select(batch))


def test_above_the_enumerated_vocabulary_it_is_the_static_set():
    inst = _random_instances(5, n_tasks=120, max_n=12, vocab=30)
    assert len(inst.vocab) > MAX_EXACT
    p = np.where(inst.valid, 0.5, 0.0)
    train, test = StateBatch.make(inst, p, 0.02, "exact", train=True), StateBatch.make(inst, p, 0.02, "exact", False)
    rule = make_policy("class_set").fit(train)
    static = make_policy("static_set").fit(train)
    assert rule.inner_split_ == "none" and rule.tuned_parameters() == {"model": "static set",
                                                                       "n_tools": len(static.static_.tools_)}
    np.testing.assert_array_equal(rule.select(test), static.select(test))
    assert rule.select(test).any()
    with pytest.raises(ValueError, match="at most 12 tools"):
        ClassSetModel().fit(inst.scores, inst.tool_ids, inst.valid, [(True, (), ())] * inst.T, len(inst.vocab))


def test_in_a_cell_it_beats_the_static_set_where_the_scores_tell_the_kinds_apart():
    inst = _tasks(150, signal=1.5, seed=6)
    mean = evaluate_cell(inst, 0.12, ["static_set", "class_set"]).outcomes.groupby("method")["payoff"].mean()
    # The best any rule can do: each task's cheapest sufficient set (the third kind's alternative {e}, not G_x).
    best = np.mean([1 - 0.12 * min(sum(COSTS[t] for t in s) for s in [KINDS[i % 3]["required"], *KINDS[i % 3]["alt"]])
                    for i in range(inst.T)])
    assert mean["static_set"] + 0.1 < mean["class_set"] <= best + 1e-12


@pytest.mark.parametrize("kind", ["exact", "partial"])
def test_a_task_that_needs_nothing_is_satisfied_by_every_subset_and_one_whose_sets_are_not_listed_by_none(kind):
    rows = [(t, tool, 1.0 - 0.1 * r, r + 1, int(t[1:]) % 5) for t in ("q0", "q1", "q2", "q3")
            for r, tool in enumerate(["a", "b", "c"])] + [("q4", "a", 1.0, 1, 4)]
    inst = build_instances(pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"]),
                           {"q0": [], "q1": ["a"], "q2": ["b", "c"], "q3": ["a"], "q4": ["c"]},
                           {"a": 0.5, "b": 0.5, "c": 0.5}, alternatives={"q3": [["b"]]}, vocab=["a", "b", "c"])
    model = _fit(inst, C=1.0, kind=kind)
    value = dict(zip([tuple(c) for c in model.classes_], model.value_))
    assert (value[(True, (), ())] == 1).all()
    assert (value[(False, (), ())] == 0).all()  # q4: its G_x (c) is not on its list
    only_b = model.subsets_.tolist().index([False, True, False])
    q3 = (True, (0,), ((1,),))
    if kind == "exact":  # q3's alternative {b} suffices; q1 (G_x {a}, no alternative) is a class of its own
        assert value[q3][only_b] == 1 and value[(True, (0,), ())][only_b] == 0
    else:  # G_x alone tells classes apart: q1 and q3 are one class, {b} holds none of its G_x
        assert q3 not in value and value[(True, (0,), ())][only_b] == 0
    assert model.select(inst.scores, inst.tool_ids, inst.valid, inst.costs, 0.1).shape == inst.valid.shape


@pytest.mark.parametrize("n_tasks", [1, 2, 3])
def test_a_training_set_smaller_than_the_inner_folds_is_fitted_with_as_many_folds_as_tasks(n_tasks):
    inst = _tasks(n_tasks, signal=2.0, seed=7)
    p = np.where(inst.valid, 0.5, 0.0)
    rule = make_policy("class_set").fit(StateBatch.make(inst, p, 0.12, "exact", train=True))
    assert (rule.inner_split_ == "none") == (n_tasks < 2) and rule.choice_ in GRID
    assert rule.select(StateBatch.make(inst, p, 0.12, "exact", train=False)).shape == inst.valid.shape
