"""The catalog-scale bound: StateBatch.head keeps each task's first states as the whole list made them, and a
cell fitted on the first D states decides on the whole lists (evaluate_cell's fit_depth)."""

import numpy as np

from camdf.core.membership import MembershipModel, fold_probabilities
from camdf.core.payoff import prefix_payoffs
from camdf.core.targets import deltas
from camdf.evaluation.cell import evaluate_cell
from camdf.policies import StateBatch

from ..core.test_features import _random_instances


def test_head_keeps_the_first_states_of_the_whole_lists():
    inst = _random_instances(5, n_tasks=30)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    full = StateBatch.make(inst, p, 0.1, "exact", train=True)
    k = 3
    head = full.head(k)
    assert head.inst.N == k and (head.inst.n == np.minimum(inst.n, k)).all()
    for name, values in full.feats.items():
        np.testing.assert_array_equal(head.feats[name], values[:, :k], err_msg=name)
    # the kept labels compare against every deeper prefix of the whole list, not only the kept ones
    np.testing.assert_array_equal(head.delta, deltas(prefix_payoffs(inst, 0.1, "exact"))[:, :k])
    np.testing.assert_array_equal(head.label, full.label[:, :k])
    np.testing.assert_array_equal(head.u, full.u[:, : k + 1])
    assert full.head(None) is full and full.head(inst.N) is full


def test_a_cell_fitted_on_the_first_states_decides_on_the_whole_lists():
    inst = _random_instances(7, n_tasks=60)
    inst.folds = np.arange(inst.T) % 3
    methods = ["camdf_lite", "plugin_set", "full", "best_prefix"]
    bounded = evaluate_cell(inst, 0.05, methods, fit_depth=2).outcomes.set_index(["task_id", "method"])
    whole = evaluate_cell(inst, 0.05, methods).outcomes.set_index(["task_id", "method"])
    assert len(bounded) == len(whole) == inst.T * len(methods)
    full = bounded.xs("full", level="method")
    n = dict(zip(inst.task_ids, inst.n))
    assert all(full.loc[t, "n_exposed"] == n[t] for t in full.index)  # decisions walk every listed tool
    assert inst.n.max() > 2  # lists longer than the bound
    assert bounded.xs("camdf_lite", level="method")["n_exposed"].max() <= inst.N
    # the oracle reads the truth, not the models: the bound leaves it as it was
    assert bounded.xs("best_prefix", level="method").equals(whole.xs("best_prefix", level="method"))
    # membership fitted on the first 2 positions still scores every position
    p = fold_probabilities(inst, inst.member, [0, 1, 2], fit_depth=2)
    assert all(te.shape[1] == inst.N and tr.shape[1] == inst.N for te, tr in p.values())
