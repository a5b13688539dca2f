"""Portable instances (no tool identity, no score scale) and pooling domains of different list lengths."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from camdf.core.features import normalised_scores, task_normalised_scores
from camdf.core.instances import Instances, build_instances
from camdf.core.portable import normalise_scores, pool, portable
from camdf.evaluation.cell import evaluate_cell


def domain(rng: np.random.Generator, T: int, n: int, prefix: str, scale: float = 1.0) -> Instances:
    """T tasks over a catalog of n tools named ``<prefix><j>``; G_x the 1-2 best-scored after noise; every task
    has all n candidates, scores in the domain's own scale."""
    rows, required = [], {}
    for i in range(T):
        score = scale * (rng.normal(0, 1, n) + 2.0 * (np.arange(n) < 2))
        order = np.argsort(-score, kind="stable")
        tid = f"{prefix}x{i}"
        rows += [(tid, f"{prefix}{j}", float(score[j]), r, i % 3) for r, j in enumerate(order, start=1)]
        required[tid] = [f"{prefix}{j}" for j in range(int(rng.integers(1, 3)))]
    frame = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    return build_instances(frame, required, {f"{prefix}{j}": 1.0 + j % 3 for j in range(n)})


def test_portable_drops_identities_and_normalises_every_task_to_0_1():
    inst = domain(np.random.default_rng(0), 6, 5, "a", scale=40.0)
    p = portable(inst)
    assert p.vocab == [] and (p.tool_ids == -1).all()
    np.testing.assert_array_equal(p.scores, normalised_scores(inst))
    assert np.allclose(p.scores.max(axis=1), 1.0) and np.allclose(p.scores.min(axis=1), 0.0)
    for name in ("tools", "costs", "member", "success", "partial", "n", "folds"):
        np.testing.assert_array_equal(getattr(p, name), getattr(inst, name))
    np.testing.assert_array_equal(portable(p).scores, p.scores)  # idempotent: a pooled part may be made twice


def test_the_runtime_normalises_a_request_as_portable_normalises_a_task():
    inst = domain(np.random.default_rng(1), 4, 6, "b", scale=7.0)
    for i in range(inst.T):
        assert normalise_scores(inst.scores[i].tolist()) == portable(inst).scores[i].tolist()
    assert normalise_scores([3.0, 3.0]) == task_normalised_scores([3.0, 3.0]) == [0.5, 0.5]


def test_pool_pads_each_part_and_keeps_its_rows_as_they_were():
    rng = np.random.default_rng(2)
    a, b = portable(domain(rng, 3, 4, "a")), portable(domain(rng, 5, 7, "b"))
    b = replace(b, folds=np.full(b.T, -1))
    both = pool([a, b])
    assert both.T == 8 and both.N == 7 and both.vocab == []
    assert both.task_ids[:3].tolist() == [f"0:{t}" for t in a.task_ids]
    np.testing.assert_array_equal(both.n, [4] * 3 + [7] * 5)
    np.testing.assert_array_equal(both.folds, [*a.folds, -1, -1, -1, -1, -1])
    np.testing.assert_array_equal(both.tools[:3, :4], a.tools)
    assert (both.tools[:3, 4:] == "").all() and (both.costs[:3, 4:] == 0).all() and np.isnan(both.scores[:3, 4:]).all()
    np.testing.assert_array_equal(both.success[:3, :5], a.success)
    np.testing.assert_array_equal(both.partial[3:], b.partial)
    sets, present = both.sufficient()
    np.testing.assert_array_equal(sets[:3, : a.sufficient()[0].shape[1], :4], a.sufficient()[0])
    assert present.shape == (8, sets.shape[1])


def test_pool_refuses_instances_that_still_name_their_tools():
    inst = domain(np.random.default_rng(3), 2, 3, "a")
    with pytest.raises(ValueError, match="portable"):
        pool([inst])
    with pytest.raises(ValueError, match="at least one"):
        pool([])


def test_a_transfer_cell_learns_nothing_from_the_domain_it_decides():
    """The left-out domain's rows (fold 0) are decided by rules fitted on the training-only rows (fold -1): changing
    the left-out domain's G_x changes its outcomes' scoring but none of the decisions (no leak of its labels)."""
    rng = np.random.default_rng(4)
    test = replace(portable(domain(rng, 12, 5, "t")), folds=np.zeros(12, dtype=np.int64))
    train = replace(portable(domain(rng, 40, 8, "s", scale=30.0)), folds=np.full(40, -1, dtype=np.int64))
    methods = ["camdf_lite", "fixed_k", "score_threshold", "plugin_set", "full", "none"]
    first = evaluate_cell(pool([test, train]), 0.05, methods, random_state=0).outcomes
    flipped = replace(test, member=~test.member & test.valid)
    second = evaluate_cell(pool([flipped, train]), 0.05, methods, random_state=0).outcomes
    assert set(first["task_id"]) == {f"0:{t}" for t in test.task_ids}  # only the left-out domain is decided
    for col in ("method", "task_id", "n_exposed", "cost"):
        assert first[col].tolist() == second[col].tolist()
