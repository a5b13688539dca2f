"""CAM-DF-risk: the conformal threshold, its depths, and the miss-rate guarantee on exchangeable synthetic tasks."""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from threadpoolctl import threadpool_limits

from camdf.core.instances import Instances, build_instances
from camdf.policies import StateBatch, make_policy
from camdf.policies.risk import CamDFRisk, check_alpha, crc_threshold, miss_scores, risk_depths

TOOLS = [f"t{j}" for j in range(10)]


def synthetic_tasks(rng: np.random.Generator, T: int, n: int = 6) -> Instances:
    """T i.i.d. tasks: n candidates out of 10 tools, G_x of 1-2 of them, scores informative but noisy."""
    rows, required = [], {}
    for i in range(T):
        cand = rng.choice(len(TOOLS), size=n, replace=False)
        g = cand[: rng.integers(1, 3)]
        score = rng.normal(0, 1, n) + 1.5 * np.isin(cand, g) + 0.1 * cand  # tool identity matters a little
        order = np.argsort(-score, kind="stable")
        tid = f"x{i}"
        rows += [(tid, TOOLS[cand[j]], float(score[j]), r, i % 5) for r, j in enumerate(order, start=1)]
        required[tid] = [TOOLS[j] for j in g]
    frame = pd.DataFrame(rows, columns=["task_id", "tool", "score", "rank", "fold"])
    return build_instances(frame, required, dict.fromkeys(TOOLS, 1.0))


def _batch(inst, train=True):
    """The rule reads only the instances (it scores them with its own membership model) and, without its
    split, ``p``; the state features of a full batch are not needed."""
    return StateBatch(inst, np.full(inst.tools.shape, 0.3), 0.1, "exact", {})


def test_miss_scores_are_the_smallest_risk_before_the_first_sufficient_depth():
    risk = np.array([[0.9, 0.5, 0.7, 0.0], [0.8, 0.2, 0.0, 0.0], [0.6, 0.3, 0.1, 0.0]])
    success = np.array([[False, False, True, True], [True, True, True, True], [False, False, False, False]])
    m = miss_scores(risk, success, np.array([3, 2, 3]))
    assert m[0] == 0.5 and m[1] == math.inf and m[2] == -math.inf


@pytest.mark.parametrize(("alpha", "n", "k"), [(0.1, 9, 1), (0.1, 19, 2), (0.05, 18, 0), (0.5, 3, 2)])
def test_crc_threshold_is_the_k_th_smallest_score_with_k_floor_alpha_n_plus_1(alpha, n, k):
    m = np.arange(n, dtype=float)[::-1]
    tau = crc_threshold(m, alpha)
    assert tau == (-math.inf if k == 0 else float(k - 1))
    assert (m < tau).sum() == max(k - 1, 0)  # at most k - 1 calibration misses


def test_risk_depths_take_the_shallowest_depth_below_the_threshold_else_everything():
    risk = np.array([[0.9, 0.4, 0.1, 0.0], [0.9, 0.8, 0.7, 0.0]])
    assert risk_depths(risk, np.array([3, 3]), 0.5).tolist() == [1, 3]
    assert risk_depths(risk, np.array([3, 3]), -math.inf).tolist() == [3, 3]


def test_check_alpha_names_the_field():
    for bad in (0, 1, -0.1, True, "0.1", float("nan")):
        with pytest.raises(ValueError, match=r"^alpha: must be a number in \(0, 1\)"):
            check_alpha(bad)


def test_unfitted_rule_raises_not_fitted():
    inst = synthetic_tasks(np.random.default_rng(0), 10)
    with pytest.raises(NotFittedError):
        CamDFRisk().decide(_batch(inst, train=False))


def test_alpha_is_a_dial_on_the_fitted_rule():
    inst = synthetic_tasks(np.random.default_rng(1), 200)
    rule = make_policy("camdf_risk", random_state=0, alpha=0.1).fit(_batch(inst))
    assert rule.alpha == 0.1 and rule.tuned_parameters()["n_calibration"] == 100
    test = _batch(synthetic_tasks(np.random.default_rng(2), 300), train=False)
    depths = {a: rule.decide(test, alpha=a) for a in (0.005, 0.05, 0.1, 0.3)}
    assert (depths[0.005] == test.inst.n).all()  # floor(0.005 * 101) = 0: expose everything
    for lo, hi in ((0.05, 0.1), (0.1, 0.3)):
        assert (depths[hi] <= depths[lo]).all()  # a looser target never exposes more
    assert depths[0.3].mean() < depths[0.05].mean() < test.inst.n.mean()
    assert (rule.decide(test) == depths[0.1]).all()


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_miss_rate_is_at_most_alpha_over_many_random_splits(alpha):
    """The conformal guarantee: over random draws of the training (fit + calibration) and test tasks
    from one distribution, the expected miss rate is <= alpha, and the rule does stop early."""
    rng = np.random.default_rng(int(alpha * 1000))
    pool = synthetic_tasks(rng, 4000)
    misses, depths = [], []
    with threadpool_limits(1, "blas"):  # as the cell evaluator: tiny fits, where BLAS threads only spin
        for s in range(200):
            pick = rng.permutation(pool.T)
            train, test = pool.subset(pick[:60]), pool.subset(pick[60:160])
            rule = CamDFRisk(alpha=alpha, random_state=s).fit(_batch(train))
            depth = rule.decide(_batch(test, train=False))
            misses.append(1.0 - test.success[np.arange(test.T), depth].mean())
            depths.append(depth.mean())
    misses = np.array(misses)
    se = misses.std(ddof=1) / np.sqrt(len(misses))
    assert misses.mean() <= alpha + 2 * se
    assert misses.mean() > alpha / 4  # not vacuous: it trades misses for tools
    assert np.mean(depths) < 0.9 * pool.n.mean()


def test_without_the_split_the_rule_calibrates_on_the_batch_probabilities():
    inst = synthetic_tasks(np.random.default_rng(3), 80)
    rule = CamDFRisk(split=False).fit(_batch(inst))
    assert rule.membership_ is None and rule.tuned_parameters()["n_calibration"] == 80


def test_the_one_task_fast_path_decides_as_the_batch_path():
    from camdf.core.features import task_normalised_scores
    from camdf.policies.plain import OneTask

    inst = synthetic_tasks(np.random.default_rng(4), 200)
    rule = CamDFRisk(alpha=0.1).fit(_batch(inst))
    test = synthetic_tasks(np.random.default_rng(5), 100)
    for alpha in (None, 0.02, 0.3):
        batch = rule.decide(_batch(test, train=False), alpha=alpha)
        one = [rule.decide_task(OneTask(test.scores[i, :n].tolist(), test.costs[i, :n].tolist(),
                                        test.tool_ids[i, :n].tolist(),
                                        task_normalised_scores(test.scores[i, :n].tolist()), 0.1, "exact", 0.0),
                                alpha=alpha) for i, n in enumerate(test.n)]
        assert one == batch.tolist()


def test_stop_policy_risk_dial_and_refusals():
    from camdf.runtime import StopPolicy

    inst = synthetic_tasks(np.random.default_rng(6), 200)
    policy = StopPolicy(method="camdf_risk", dials={"alpha": 0.1}).fit(inst)
    tools = [{"name": t, "description": t} for t in TOOLS[:6]]
    scores = [3.0, 2.5, 2.0, 1.0, 0.5, 0.0]
    depths = [policy.select(tools, scores=scores, alpha=a).depth for a in (0.001, 0.05, 0.1, 0.4)]
    assert depths[0] == 6 and depths == sorted(depths, reverse=True)
    assert policy.select(tools, scores=scores).depth == depths[2]  # the fitted alpha
    many = policy.select_batch([{"tools": tools, "scores": scores, "alpha": a} for a in (0.001, 0.05, 0.1, 0.4)])
    assert [s.depth for s in many] == depths  # per-request alpha, decided in groups by the batch path
    with pytest.raises(ValueError, match=r"^alpha: must be a number in \(0, 1\)"):
        policy.select(tools, scores=scores, alpha=1.5)
    lite = StopPolicy(method="camdf_lite").fit(inst)
    with pytest.raises(ValueError, match="^alpha: only the camdf_risk / risk_set policy has a target miss rate; this one is camdf_lite"):
        lite.select(tools, scores=scores, alpha=0.1)
    with pytest.raises(ValueError, match=r"^requests\[1\]\.alpha: only the camdf_risk / risk_set policy"):
        lite.select_batch([{"tools": tools, "scores": scores}, {"tools": tools, "scores": scores, "alpha": 0.1}])
