"""Nested cross-fitting: with a learned ranker, nothing the fold-f stopper trains on depends on fold f's labels."""

import dataclasses

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from camdf.core.folds import assign_folds, fold_ids
from camdf.core.membership import fold_probabilities
from camdf.evaluation.cell import evaluate_cell
from camdf.integrations.tau2.convert import convert_customer_service
from camdf.pipeline.assembly import scored_instances
from camdf.policies import StateBatch
from camdf.rankers import score_domain
from camdf.rankers.problem import VIEW, evaluation_view

FOLD = 2  # the outer fold whose labels are corrupted
LAM = 0.12


@pytest.fixture(scope="module")
def retail():
    return convert_customer_service("retail")


@pytest.fixture(scope="module")
def folds(retail):
    return assign_folds([t.id for t in retail.tasks], [t.split for t in retail.tasks], 5, "kfold", 0)


def _corrupt(domain, folds, fold):
    """Every task of ``fold`` gets the complement of its G_x among its candidates, and no alternatives."""
    tasks = list(domain.tasks)
    for i in np.flatnonzero(folds == fold):
        t = tasks[i]
        tasks[i] = dataclasses.replace(
            t, required=tuple(n for n in domain.candidates_of(t) if n not in t.required), alternatives=())
    return dataclasses.replace(domain, tasks=tasks)


def _designs(inst):
    """Per evaluated fold, what its stopper is fitted on and decides from, as evaluate_cell builds them."""
    with threadpool_limits(1, user_api="blas"):  # as evaluate_cell fits them (many small fits)
        probabilities = fold_probabilities(inst, inst.member, fold_ids(inst.folds))
    out = {}
    for f in fold_ids(inst.folds):
        te = inst.folds == f
        tr_inst = inst.training_view(f).subset(~te)
        p_te, p_tr = probabilities[f]
        train = StateBatch.make(tr_inst, p_tr, LAM, "exact", train=True)
        test = StateBatch.make(inst.subset(te), p_te, LAM, "exact", train=False)
        out[f] = {"train_scores": tr_inst.scores, "train_p": p_tr, "test_scores": test.inst.scores, "test_p": p_te,
                  **{f"train_{k}": v for k, v in train.feats.items()},
                  **{f"test_{k}": v for k, v in test.feats.items()}}
    return out


def _same(a, b):
    return all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


@pytest.fixture(scope="module")
def instances(retail, folds):
    costs = dict.fromkeys(retail.acquirable, 1.0)
    corrupted = _corrupt(retail, folds, FOLD)
    return {name: scored_instances(score_domain(dom, "supervised", folds), dom, costs)
            for name, dom in (("clean", retail), ("corrupted", corrupted))}


def test_fold_f_design_is_blind_to_fold_f_labels_and_the_check_has_teeth(instances):
    clean, corrupted = instances["clean"], instances["corrupted"]
    assert set(clean.train_views) == set(fold_ids(clean.folds))
    # The corruption is real: fold f's training labels (its G_x) changed.
    te = clean.folds == FOLD
    assert not np.array_equal(clean.member[te], corrupted.member[te])
    a, b = _designs(clean), _designs(corrupted)
    # Nested: fold f's training scores, membership probabilities and state features, and its test
    # features, are the same whatever fold f's labels are.
    assert _same(a[FOLD], b[FOLD])
    # Teeth: fold f's tasks train every other fold's stopper, so the same corruption moves their designs ...
    for g in fold_ids(clean.folds):
        if g != FOLD:
            assert not _same(a[g], b[g]), g
    # ... and under the former protocol (every fold trained on the one cross-fitted view, where a
    # training task's ranker was fitted on fold f too) it moves fold f's own training design.
    flat = [dataclasses.replace(inst, train_views=None) for inst in (clean, corrupted)]
    old_a, old_b = _designs(flat[0])[FOLD], _designs(flat[1])[FOLD]
    assert not np.array_equal(old_a["train_scores"], old_b["train_scores"])
    assert not _same(old_a, old_b)


def test_fold_f_decisions_are_blind_to_fold_f_labels(instances):
    """End to end: every learned rule's decisions on fold f are the same when fold f's labels change
    (cv_set included: its inner CV, calibrators and set models read only the training tasks)."""
    methods = ["camdf_lite", "predict_threshold", "score_threshold", "camdf_risk", "full", "cv_set"]
    depth, exposed = {}, {}
    for name, inst in instances.items():
        result = evaluate_cell(inst, LAM, methods)
        out = result.outcomes
        depth[name] = out.sort_values(["method", "task_id"]).set_index(["method", "task_id"])[
            ["fold", "depth", "n_exposed", "cost"]]
        exposed[name] = result.exposed["cv_set"]
    clean, corrupted = depth["clean"], depth["corrupted"]
    mine = clean["fold"] == FOLD
    assert clean[mine].equals(corrupted[mine])
    assert not clean[~mine].equals(corrupted[~mine])  # other folds train on fold f's labels
    te = instances["clean"].folds == FOLD
    np.testing.assert_array_equal(exposed["clean"][te], exposed["corrupted"][te])  # the exposed sets themselves
    assert not np.array_equal(exposed["clean"][~te], exposed["corrupted"][~te])


def test_views_keep_each_test_fold_and_the_evaluation_view(retail, folds):
    frame = score_domain(retail, "prior", folds)
    inst = scored_instances(frame, retail, dict.fromkeys(retail.acquirable, 1.0))
    test = evaluation_view(frame)
    assert VIEW not in test.columns and len(frame) == len(test) * len(fold_ids(folds))
    for f, view in inst.train_views.items():
        te = inst.folds == f
        assert view.vocab == inst.vocab
        for field in ("task_ids", "tools", "scores", "tool_ids", "member", "success", "costs"):
            assert np.array_equal(getattr(view, field)[te], getattr(inst, field)[te]), (f, field)
        assert not np.array_equal(view.scores[~te], inst.scores[~te])  # training tasks are re-scored


def test_split_protocol_has_one_view_equal_to_the_evaluation_view(retail):
    folds = assign_folds([t.id for t in retail.tasks], [t.split for t in retail.tasks], 5, "split", 0)
    frame = score_domain(retail, "supervised", folds)
    assert frame[VIEW].unique().tolist() == [0]
    # Under `split` the test fold never trains the ranker: the training-only tasks' cross-fit is already nested.
    assert frame.drop(columns=VIEW).equals(evaluation_view(frame))


def test_unsupervised_scorers_keep_a_single_view(retail, folds):
    assert VIEW not in score_domain(retail, "bm25", folds).columns
    assert VIEW not in score_domain(retail, "noisy_oracle", folds, quality=0.5).columns
