"""CAM-DF-risk's miss-rate bound as the cell runs it: a learned ranker scored by the nested cross-fit.

Each draw is a fresh synthetic domain of i.i.d. tasks and a fresh 5-fold split. The ranker
learns, per task type, the rate of each tool in G_x from its training tasks (a coarse
learned ranker: every task of a type gets the same ranking, so many calibration scores
are tied, as with bm25 on retail). For one outer fold f the rule is fitted on the
training tasks as the nested cross-fit scores them (:func:`camdf.rankers.scoring.nested_views`)
and decides fold f's tasks, scored by the ranker fitted on every training task.
"""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from camdf.core.conformal import crc_threshold, risk_depths
from camdf.core.features import sufficiency_curve
from camdf.core.instances import Instances, curves_from_sets
from camdf.policies import StateBatch
from camdf.policies.risk import CamDFRisk
from camdf.rankers.problem import Problem, crossfit_groups, learned
from camdf.rankers.scoring import nested_views

A, TYPES, T, K, DRAWS = 8, 4, 100, 5, 240
TOOLS = [f"t{j}" for j in range(A)]
RATE = np.random.default_rng(12345).beta(0.6, 1.4, (TYPES, A))  # P(tool j in G_x | task type)


def _types(problem: Problem) -> np.ndarray:
    return np.array([int(text.split()[1]) for text in problem.texts])


@learned
def type_rates(problem: Problem, *, cache_dir=None, random_state: int = 0) -> np.ndarray:
    """Cross-fitted smoothed rate of each tool in G_x among the training tasks of the task's type."""
    types = _types(problem)
    out = np.zeros(problem.mask.shape)
    for scored, train in crossfit_groups(problem.folds):
        for c in range(TYPES):
            rows, to = train[types[train] == c], scored[types[scored] == c]
            out[to] = (problem.membership[rows].sum(axis=0) + 0.5) / (len(rows) + 1.0)
    return out


def draw(rng: np.random.Generator) -> Problem:
    types = rng.integers(0, TYPES, T)
    member = rng.random((T, A)) < RATE[types]
    return Problem(task_ids=[f"x{i}" for i in range(T)], texts=[f"type {c}" for c in types], tools=TOOLS,
                   docs=TOOLS, mask=np.ones((T, A), bool), membership=member,
                   folds=rng.permutation(np.arange(T) % K))


def ranked(problem: Problem, scores: np.ndarray) -> Instances:
    """Every task ranks all A tools by score (ties: catalog order)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    rows = np.arange(T)[:, None]
    member = problem.membership[rows, order]
    n = np.full(T, A)
    success, partial = curves_from_sets(member, [[np.flatnonzero(m)] for m in member], n)
    return Instances(task_ids=np.array(problem.task_ids, dtype=object), tools=np.array(TOOLS, dtype=object)[order],
                     scores=scores[rows, order], costs=np.ones((T, A)), member=member, success=success,
                     partial=partial, n=n, folds=problem.folds, text_len=np.zeros(T), tool_ids=order,
                     vocab=list(TOOLS))


def _batch(inst):
    return StateBatch(inst, np.zeros(inst.tools.shape), 0.1, "exact", {})


def run(p):
    return type_rates(p), None


@pytest.fixture(scope="module")
def realised():
    """Per ranker, alpha and draw: the share of fold f's tasks that miss, with the randomised threshold and the
    deterministic one; and k / (n + 1) per alpha. ``learned``: the type rates, nested; ``fixed``: the true rates
    of the task's type, which learn nothing (every task of a type, calibration or test, ranks alike)."""
    rng = np.random.default_rng(0)
    out = {(r, a): ([], []) for r in ("learned", "fixed") for a in (0.05, 0.1)}
    bounds = {}
    with threadpool_limits(1, user_api="blas"):
        for d in range(DRAWS):
            problem = draw(rng)
            f = d % K
            te = problem.folds == f
            learned_view, _ = nested_views(problem, run)[f]
            for ranker, scores in (("learned", learned_view), ("fixed", RATE[_types(problem)])):
                inst = ranked(problem, scores)
                rule = CamDFRisk(random_state=d).fit(_batch(inst.subset(~te)))
                test = inst.subset(te)
                risk = 1.0 - sufficiency_curve(rule.membership_.predict_proba(test), test.valid)
                for alpha in (0.05, 0.1):
                    randomised, fixed = out[ranker, alpha]
                    for misses, tau in ((randomised, rule.threshold(alpha)), (fixed, crc_threshold(rule.scores_, alpha))):
                        depth = risk_depths(risk, test.n, tau)
                        misses.append(1.0 - test.success[np.arange(test.T), depth].mean())
                    n = len(rule.scores_)
                    bounds[alpha] = np.floor(alpha * (n + 1) + 1e-12) / (n + 1)
    return {key: (np.array(r), np.array(x)) for key, (r, x) in out.items()}, bounds


def _mean_se(x):
    return x.mean(), x.std(ddof=1) / np.sqrt(len(x))


@pytest.mark.parametrize("alpha", [0.05, 0.1])
@pytest.mark.parametrize("ranker", ["learned", "fixed"])
def test_the_randomised_rule_holds_its_bound_and_is_not_vacuous(realised, ranker, alpha):
    per_draw, bounds = realised
    miss = per_draw[ranker, alpha][0]
    mean, se = _mean_se(miss)
    assert len(miss) >= 200
    assert mean <= alpha + 2 * se, (mean, se, bounds[alpha])
    assert mean > alpha / 4, (mean, se)


def test_ties_make_the_deterministic_threshold_conservative_and_randomising_recovers_the_rate(realised):
    per_draw, bounds = realised
    randomised, fixed = per_draw["fixed", 0.1]
    # Every task of a type ranks alike, so many calibration scores tie with each other and with the test
    # tasks': the deterministic rule misses far less than asked; the randomised one comes close to k / (n + 1).
    mean, se = _mean_se(randomised)
    assert fixed.mean() < mean - 2 * se
    assert abs(mean - bounds[0.1]) < 3 * se, (mean, se, bounds[0.1])



def test_many_fold_draws_of_one_domain_miss_at_most_alpha_and_the_misses_cluster_by_task():
    """One synthetic domain, many 5-fold draws (A26's repeats, many more of them): the realised miss rate stays
    within alpha by the clustered test over tasks, and the misses cluster by task (the variance over tasks is far
    above what independent decisions give, the reason the binomial over tasks x draws is anti-conservative)."""
    from camdf.evaluation.power import clustered_miss_test

    rng = np.random.default_rng(2024)
    problem = draw(rng)
    inst = ranked(problem, RATE[_types(problem)])
    alpha, draws = 0.1, 20
    miss = np.zeros((draws, T))
    with threadpool_limits(1, user_api="blas"):
        for r in range(draws):
            folds = rng.permutation(np.arange(T) % K)
            for f in range(K):
                te = folds == f
                rule = CamDFRisk(random_state=r * K + f).fit(_batch(inst.subset(~te)))
                test = inst.subset(te)
                risk = 1.0 - sufficiency_curve(rule.membership_.predict_proba(test), test.valid)
                depth = risk_depths(risk, test.n, rule.threshold(alpha))
                miss[r, te] = 1.0 - test.success[np.arange(test.T), depth]
    task_miss = miss.mean(axis=0)
    test = clustered_miss_test(task_miss, alpha)
    assert test.pvalue > 0.05, (test.rate, test.pvalue)
    assert test.rate > alpha / 4  # not vacuous
    rate = miss.mean()
    binomial_se = np.sqrt(rate * (1 - rate) / miss.size)
    clustered_se = task_miss.std(ddof=1) / np.sqrt(T)
    assert clustered_se > 3 * binomial_se, (clustered_se, binomial_se)
