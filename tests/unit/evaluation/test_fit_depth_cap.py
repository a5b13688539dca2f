"""A rule that learned from each training task's first D states (candidates.fit_depth) stops by depth D: past it,
it has seen no state (issue 54: CAM-DF-lite exposed 70-76 of 100 catalog APIs, learned on the first 16). Full
access, the oracles and the set rules still decide over the whole list."""

from camdf.evaluation.cell import evaluate_cell

from ..core.test_features import _random_instances

METHODS = ["camdf_lite", "camdf", "score_threshold", "fixed_k", "full", "best_prefix", "plugin_set"]


def test_prefix_rules_that_learn_stop_by_the_fit_depth_and_the_others_do_not():
    inst = _random_instances(8, n_tasks=60, max_n=20, vocab=30)
    free = evaluate_cell(inst, 0.01, METHODS).outcomes  # a low lambda: deep prefixes pay
    capped = evaluate_cell(inst, 0.01, METHODS, fit_depth=3).outcomes
    deepest = capped.groupby("method")["n_exposed"].max()
    for m in ("camdf_lite", "camdf", "score_threshold", "fixed_k"):
        assert deepest[m] <= 3, (m, deepest[m])
    assert free.groupby("method")["n_exposed"].max()[["camdf_lite", "score_threshold"]].max() > 3  # the cap binds
    full = capped[capped["method"] == "full"].set_index("task_id")["n_exposed"]
    assert (full == inst.n[[list(inst.task_ids).index(t) for t in full.index]]).all()  # full access: every tool
    assert deepest["best_prefix"] > 3 or deepest["plugin_set"] > 3  # neither learns a depth from states
