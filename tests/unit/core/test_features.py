"""State features: exact values on a tiny task, lazy subsets, and the plain-Python one-task path."""

import numpy as np
import pandas as pd
import pytest

from camdf.core.features import FEATURES, LITE_FEATURES, normalised_scores, state_features, task_features
from camdf.core.instances import build_instances
from camdf.core.targets import walk
from camdf.core.membership import MembershipModel
from camdf.policies import StateBatch
from camdf.policies.camdf import FIRST_BLOCK, CamDF


def _random_instances(seed: int, n_tasks: int = 40, max_n: int = 12, vocab: int = 30):
    """Tasks with random rankings (ties included), costs and required sets over a shared vocabulary."""
    rng = np.random.default_rng(seed)
    names = [f"t{k}" for k in range(vocab)]
    rows, required = [], {}
    for i in range(n_tasks):
        n = int(rng.integers(1, max_n + 1))
        tools = rng.choice(names, n, replace=False)
        scores = np.sort(rng.choice([0.0, 0.5, 1.0, 2.0, 3.5], n) + rng.integers(0, 2) * rng.random(n))[::-1]
        rows += [(f"q{i}", tools[r], scores[r], r + 1, i % 5) for r in range(n)]
        required[f"q{i}"] = list(rng.choice(tools, int(rng.integers(0, min(n, 3) + 1)), replace=False))
    costs = dict(zip(names, rng.uniform(0.1, 3.0, vocab)))
    df = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    texts = {f"q{i}": "x" * int(rng.integers(0, 200)) for i in range(n_tasks)}
    return build_instances(df, required, costs, texts=texts)


def test_normalised_scores_on_a_tiny_task():
    inst = build_instances(
        pd.DataFrame([("a", "x", 3.0, 1, 0), ("a", "y", 2.0, 2, 0), ("a", "z", 1.0, 3, 0),
                      ("b", "x", 4.0, 1, 0), ("b", "y", 4.0, 2, 0)],
                     columns=["task_id", "tool", "score", "rank", "fold"]),
        {"a": ["x"], "b": ["y"]}, {"x": 1.0, "y": 1.0, "z": 1.0})
    np.testing.assert_array_equal(normalised_scores(inst), [[1.0, 0.5, 0.0], [0.5, 0.5, 0.0]])


@pytest.mark.parametrize("kind", ["exact", "partial"])
def test_a_subset_of_features_equals_the_same_entries_of_all(kind):
    inst = _random_instances(1)
    p = np.random.default_rng(1).random(inst.tools.shape) * inst.valid
    full = state_features(inst, p, 0.3, kind)
    some = state_features(inst, p, 0.3, kind, names=LITE_FEATURES)
    assert list(some) == list(LITE_FEATURES)
    for name in LITE_FEATURES:
        np.testing.assert_array_equal(some[name], full[name])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["exact", "partial"])
@pytest.mark.parametrize("lam", [0.0, 0.12, 2.0])
def test_one_task_python_features_equal_the_vectorised_ones(seed, kind, lam):
    inst = _random_instances(seed)
    p = np.random.default_rng(seed).random(inst.tools.shape) * inst.valid
    p[:, ::3] = 0.0  # exact zeros and ones occur in practice
    p[:, 1::4] = np.where(inst.valid[:, 1::4], 1.0, 0.0)
    full = state_features(inst, p, lam, kind)
    for i in range(inst.T):
        k = int(inst.n[i])
        cols = task_features(inst.scores[i, :k].tolist(), inst.costs[i, :k].tolist(), p[i, :k].tolist(), lam, kind,
                             float(inst.text_len[i]), FEATURES)
        for name, col in zip(FEATURES, cols):
            np.testing.assert_allclose(col, full[name][i, :k], rtol=1e-12, atol=1e-12, err_msg=f"{name} task {i}")


def test_one_task_membership_equals_the_vectorised_model():
    inst = _random_instances(7, n_tasks=80)
    model = MembershipModel().fit(inst, inst.member)
    assert model.model_ is not None
    test = _random_instances(8, n_tasks=30, vocab=35)  # t30..t34 are unseen: no identity term
    test.vocab[:] = inst.vocab
    index = {name: j for j, name in enumerate(inst.vocab)}
    test.tool_ids[test.valid] = [index.get(name, -1) for name in test.tools[test.valid]]
    full = model.predict_proba(test)
    z = normalised_scores(test)
    for i in range(test.T):
        k = int(test.n[i])
        one = model.predict_task(z[i, :k].tolist(), test.scores[i, :k].tolist(), test.tool_ids[i, :k].tolist())
        np.testing.assert_allclose(one, full[i, :k], rtol=1e-13, atol=1e-15)


def test_camdf_decide_scores_blocks_yet_walks_like_the_stop_matrix():
    inst = _random_instances(3, n_tasks=120, max_n=3 * FIRST_BLOCK, vocab=60)
    assert inst.N > FIRST_BLOCK
    p = np.random.default_rng(3).random(inst.tools.shape) * inst.valid
    train = StateBatch.make(inst, p, 0.05, "exact", train=True)
    rule = CamDF(grid=({"num_leaves": 7, "min_child_samples": 5},)).fit(train)
    test = StateBatch.make(inst, p, 0.05, "exact", train=False)
    depth = rule.decide(test)
    np.testing.assert_array_equal(depth, walk(rule.stop_matrix(test), inst.n))
    assert (depth > FIRST_BLOCK).any() and (depth < FIRST_BLOCK).any()  # both passes are exercised
    for i in np.flatnonzero(inst.n > FIRST_BLOCK)[:10]:  # one ranking alone takes the slicing branch
        assert rule.decide(test.subset(np.array([i])))[0] == depth[i]


def test_camdf_inner_validation_walks_score_only_reachable_states_yet_match_the_stop_matrix():
    # CamDF.fit scores each inner-validation fold by the walk's depth alone (_walk, blocked predictions);
    # the depths must be those of walking every state's decision, for every grid candidate.
    inst = _random_instances(4, n_tasks=90, max_n=3 * FIRST_BLOCK, vocab=50)
    p = np.random.default_rng(4).random(inst.tools.shape) * inst.valid
    batch = StateBatch.make(inst, p, 0.05, "exact", train=True)
    rule = CamDF(grid=({"num_leaves": 3, "n_estimators": 20, "min_child_samples": 20},
                       {"num_leaves": 7, "n_estimators": 20, "min_child_samples": 10}), inner_folds=2)
    inner = np.random.default_rng(rule.random_state).permutation(np.arange(inst.T) % rule.inner_folds)
    reached_late = False
    for f in range(rule.inner_folds):
        tr, va = batch.subset(inner != f), batch.subset(inner == f)
        for params in rule.grid:
            model = rule._fit_one(tr, params)
            depth = rule._walk(model, va)
            np.testing.assert_array_equal(depth, walk(rule._stop(model, va), va.inst.n))
            reached_late |= bool((depth > FIRST_BLOCK).any())
    assert reached_late  # the second block was exercised


FEATURE_BYTES = """
import hashlib, sys
import numpy as np
from tests.unit.core.test_features import _random_instances
from camdf.core.features import FEATURES, state_features, task_features
inst = _random_instances(3, n_tasks=300, max_n=50, vocab=80)
p = np.round(np.random.default_rng(3).random(inst.tools.shape), 6) * inst.valid
out = hashlib.sha256()
for kind in ("exact", "partial"):
    for name, values in state_features(inst, p, 0.12, kind).items():
        out.update(name.encode() + np.ascontiguousarray(values).tobytes())
    for i in range(0, inst.T, 7):
        n = int(inst.n[i])
        one = task_features(list(inst.scores[i, :n]), list(inst.costs[i, :n]), list(p[i, :n]), 0.12, kind)
        out.update(np.asarray(one, dtype=float).tobytes())
print(out.hexdigest())
"""
#: numpy's dispatch as the machine allows it, and with only the baseline SSE paths (no AVX2, no AVX-512).
CPU_SETTINGS = [{}, {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}]


def test_the_features_are_the_same_bytes_on_every_simd_path():
    """exp and log (the score entropy) round their last bit differently on numpy's SSE, AVX2 and AVX-512 paths; the
    features a stopper is fitted on must not, or a refitted policy's thresholds move from machine to machine."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    got = [subprocess.run([sys.executable, "-c", FEATURE_BYTES], capture_output=True, text=True, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root), **setting}, timeout=300, check=True).stdout
           for setting in CPU_SETTINGS]
    assert len(got[0].strip()) == 64 and got[0] == got[1]
