"""The fit memo (camdf.common.fit_memo): a lambda sweep's cells reuse the lambda-conditioned rule fitted on
the same training states, and every outcome is the same bytes as fitting it again."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from camdf.common import fit_memo
from camdf.evaluation.cell import evaluate_cell

from ..core.test_features import _random_instances

METHODS = ["camdf_lambda", "full", "score_per_cost"]
GRID = [0.05, 0.2]


@pytest.fixture
def inst():
    return _random_instances(3, n_tasks=60, max_n=8, vocab=12)


def _cells(inst, lams):
    return [evaluate_cell(inst, lam, METHODS, lam_grid=GRID, inner_folds=3).outcomes for lam in lams]


def test_a_lambda_sweep_reuses_the_rule_and_its_outcomes_are_the_fresh_fits(inst):
    lams = [0.05, 0.1, 0.3]
    fit_memo.clear()
    kept = _cells(inst, lams)
    folds = len(np.unique(inst.folds))
    assert fit_memo.COUNTS == {"fits": folds, "reused": folds * (len(lams) - 1)}
    for lam, outcome in zip(lams, kept):  # each cell alone, in a process that remembers nothing
        fit_memo.clear()
        pd.testing.assert_frame_equal(outcome, _cells(inst, [lam])[0])
        assert fit_memo.COUNTS == {"fits": folds, "reused": 0}


def test_other_training_states_are_fitted_again(inst):
    fit_memo.clear()
    _cells(inst, [0.1])
    other = dataclasses.replace(inst, costs=inst.costs * 1.5)  # another d: other costs, other labels
    _cells(other, [0.1])
    assert fit_memo.COUNTS["reused"] == 0


def test_the_digest_sees_every_field_and_refuses_what_it_cannot_key(inst):
    base = fit_memo.digest(inst)
    assert fit_memo.digest(dataclasses.replace(inst)) == base
    for name, value in [("costs", inst.costs + 1e-12), ("tools", inst.tools[:, ::-1].copy()),
                        ("folds", inst.folds[::-1].copy()), ("vocab", list(reversed(inst.vocab)))]:
        assert fit_memo.digest(dataclasses.replace(inst, **{name: value})) != base, name
    assert fit_memo.digest({"a": 1}) != fit_memo.digest({"a": 1.0})
    assert fit_memo.digest(np.zeros(3, np.float32)) != fit_memo.digest(np.zeros(3, np.float64))
    with pytest.raises(TypeError, match="cannot key a function"):
        fit_memo.digest({"f": lambda: 0})


def test_the_memo_keeps_at_most_its_capacity(monkeypatch, inst):
    monkeypatch.setattr(fit_memo, "CAPACITY", 2)
    fit_memo.clear()
    _cells(inst, [0.1])
    assert len(fit_memo._SHARED) == 2


def test_cv_set_members_fitted_in_one_cell_serve_a_cell_of_other_costs_and_lambda(inst):
    """The pool members' calibrators and set models read no cost and no lambda: a second cell (another d, another
    lambda) finds every one of them kept, and decides as a process that fitted them afresh."""
    fit_memo.clear()
    evaluate_cell(inst, 0.1, ["cv_set"], inner_folds=3)
    kept = {key: dict(fits) for key, fits in fit_memo._SHARED.items()}
    assert kept and all(kept.values())
    other = dataclasses.replace(inst, costs=inst.costs * 1.5)
    second = evaluate_cell(other, 0.25, ["cv_set"], inner_folds=3).outcomes
    assert set(fit_memo._SHARED) == set(kept)  # the same inputs: no new training batch
    for key, fits in kept.items():  # the fits made then are the ones used now (the whole batch's best member,
        assert all(fit_memo._SHARED[key][name] is fit for name, fit in fits.items())  # another d may add one)
    assert sum(map(len, fit_memo._SHARED.values())) - sum(map(len, kept.values())) <= len(kept)
    fit_memo.clear()
    pd.testing.assert_frame_equal(second, evaluate_cell(other, 0.25, ["cv_set"], inner_folds=3).outcomes)


def test_the_risk_rules_membership_serves_a_cell_of_other_costs_and_lambda(inst):
    fit_memo.clear()
    evaluate_cell(inst, 0.1, ["risk_set"], inner_folds=3)
    kept = dict(fit_memo._SHARED)
    assert len(kept) == len(np.unique(inst.folds))  # one membership model (and calibrator) per fold
    other = dataclasses.replace(inst, costs=inst.costs * 0.5)
    second = evaluate_cell(other, 0.3, ["risk_set"], inner_folds=3).outcomes
    assert fit_memo._SHARED == kept
    fit_memo.clear()
    pd.testing.assert_frame_equal(second, evaluate_cell(other, 0.3, ["risk_set"], inner_folds=3).outcomes)
