"""Candidate truncation: exact arrays on a hand-built batch of rankings."""

import numpy as np
import pandas as pd
import pytest

from camdf.core.instances import build_instances, truncate


@pytest.fixture
def inst():
    """q: a b c d, G = {a, c}, or {b} alone; r: d b, G = {b}; s: c d a, G = {d, a}."""
    lists = {"q": "abcd", "r": "db", "s": "cda"}
    rows = [(tid, tool, float(10 - r), r, 0) for tid, order in lists.items() for r, tool in enumerate(order, 1)]
    return build_instances(
        pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"]),
        {"q": ["a", "c"], "r": ["b"], "s": ["d", "a"]},
        {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0},
        alternatives={"q": [["b"]]},
    )


def test_truncate_keeps_the_top_k_and_slices_the_curves(inst):
    cut = truncate(inst, 2)
    assert cut.n.tolist() == [2, 2, 2] and cut.N == 2
    assert cut.tools.tolist() == [["a", "b"], ["d", "b"], ["c", "d"]]
    np.testing.assert_array_equal(cut.costs, [[1.0, 2.0], [4.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(cut.scores, inst.scores[:, :2])
    np.testing.assert_array_equal(cut.tool_ids, inst.tool_ids[:, :2])
    assert cut.member.tolist() == [[True, False], [False, True], [False, True]]
    # q stays sufficient through its alternative {b}; s loses a (position 3) and is never sufficient.
    assert cut.success.tolist() == [[False, False, True], [False, False, True], [False, False, False]]
    # Partial keeps the original |G_x|: s has half of G_x listed.
    np.testing.assert_allclose(cut.partial, [[0.0, 0.5, 0.5], [0.0, 0.0, 1.0], [0.0, 0.0, 0.5]])
    assert cut.vocab == inst.vocab and cut.task_ids.tolist() == ["q", "r", "s"]


def test_truncate_leaves_shorter_lists_alone(inst):
    cut = truncate(inst, 3)
    assert cut.n.tolist() == [3, 2, 3] and cut.N == 3
    assert cut.tools[1].tolist() == ["d", "b", ""]
    np.testing.assert_array_equal(cut.success[1], inst.success[1, :4])
    np.testing.assert_array_equal(cut.partial[0], [0.0, 0.5, 0.5, 1.0])
    assert inst.n.tolist() == [4, 2, 3] and inst.N == 4  # the input is not modified


@pytest.mark.parametrize("top_k", [None, 4, 50])
def test_truncate_at_or_beyond_the_longest_list_changes_nothing(inst, top_k):
    cut = truncate(inst, top_k)
    for name in ("tools", "scores", "costs", "member", "success", "partial", "n", "tool_ids"):
        np.testing.assert_array_equal(getattr(cut, name), getattr(inst, name))


@pytest.mark.parametrize("top_k", [0, -3, 2.5, True, "5"])
def test_truncate_names_the_setting_when_top_k_is_not_a_positive_integer(inst, top_k):
    with pytest.raises(ValueError, match="candidates.top_k"):
        truncate(inst, top_k)


@pytest.mark.parametrize("seed", range(6))
def test_build_instances_equals_the_task_by_task_reference(seed):
    """The column-wise build equals the loop it replaced: shuffled rows, tied ranks, lists of different lengths,
    a tool listed twice, required tools off the list, alternatives, a given vocabulary and tasks with no G_x."""
    from camdf.core.instances import curves_from_sets, sufficient_sets

    from .reference import build_instances_ref

    rng = np.random.default_rng(seed)
    catalog = [f"tool_{j}" for j in range(12)]
    rows, required, alternatives = [], {}, {}
    for t in range(int(rng.integers(1, 9))):
        tid = f"task-{rng.integers(0, 10**6)}-{t}"
        names = list(rng.choice(catalog, size=int(rng.integers(1, 10)), replace=False))
        if seed % 2 and len(names) > 2:
            names.append(names[0])  # the same tool twice in one list
        ranks = rng.integers(1, 4, size=len(names))  # ties
        rows += [{"task_id": tid, "tool": name, "score": float(rng.normal()), "rank": int(r), "fold": t % 3 - 1}
                 for name, r in zip(names, ranks)]
        required[tid] = list(rng.choice(catalog, size=int(rng.integers(0, 4)), replace=False))
        alternatives[tid] = [list(rng.choice(catalog, size=2, replace=False)) for _ in range(int(rng.integers(0, 3)))]
    scores = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    costs = {name: float(rng.uniform(0.1, 3.0)) for name in catalog}
    vocab = list(rng.choice(catalog, size=3, replace=False)) if seed % 3 else []
    inst = build_instances(scores, required, costs, alternatives, vocab=vocab)
    ref, sets_pos = build_instances_ref(scores, required, costs, alternatives, vocab=vocab)
    for field in ("tools", "scores", "costs", "member", "n", "folds", "tool_ids"):
        np.testing.assert_array_equal(getattr(inst, field), ref[field], err_msg=field)
    assert inst.vocab == ref["vocab"]
    as_arrays = [[None if s is None else np.array(s, dtype=int) for s in task] for task in sets_pos]
    success, partial = curves_from_sets(ref["member"], as_arrays, ref["n"])
    np.testing.assert_array_equal(inst.success, success)
    np.testing.assert_array_equal(inst.partial, partial)
    sets, present = sufficient_sets(as_arrays, inst.N)
    np.testing.assert_array_equal(inst.sets, sets)
    np.testing.assert_array_equal(inst.present, present)


def test_build_instances_names_a_tool_without_a_cost():
    scores = pd.DataFrame({"task_id": ["a", "a"], "tool": ["x", "y"], "score": [2.0, 1.0], "rank": [1, 2],
                           "fold": [0, 0]})
    with pytest.raises(KeyError, match="y"):
        build_instances(scores, {"a": ["x"]}, {"x": 1.0})
