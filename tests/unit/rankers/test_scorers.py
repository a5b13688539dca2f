"""Every scorer scores every (task, candidate); each scorer's own rule on small cases."""

import numpy as np
import pytest

from camdf.data.model import Domain, Task, Tool
from camdf.core.folds import assign_folds, fold_ids
from camdf.rankers import SCORERS, ranking_quality, score_domain, scorer_params
from camdf.rankers.problem import VIEW, Problem, rank_matrix, evaluation_view, training_view
from camdf.rankers.fusion import rrf
from camdf.rankers.lexical import bm25_scores
from camdf.rankers.text import tool_document

from tests.unit.rankers.conftest import NAMES

FAST = ["bm25", "supervised", "prior", "noisy_oracle"]
BUILTIN = ["retail", "airline", "telecom", "bfcl_multi_turn", "retail_d100"]


def _folds(dom, protocol="kfold"):
    return assign_folds([t.id for t in dom.tasks], [t.split for t in dom.tasks], 5, protocol, 0)


def _check_complete(frame, dom, folds):
    """The frame, and for a learned scorer each of its views and its test view, is complete."""
    if VIEW in frame.columns:
        assert sorted(frame[VIEW].unique()) == fold_ids(folds)
        for part in [evaluation_view(frame), *(training_view(frame, f) for f in fold_ids(folds))]:
            _check_complete(part, dom, folds)
        return
    expected = [(t.id, n) for t in dom.tasks for n in dom.candidates_of(t)]
    assert sorted(zip(frame.task_id, frame.tool)) == sorted(expected)
    assert frame["score"].notna().all() and np.isfinite(frame["score"]).all()
    assert (frame.groupby("task_id", sort=False).cumcount() + 1 == frame["rank"]).all()
    assert frame.task_id.drop_duplicates().tolist() == [t.id for t in dom.tasks]
    assert dict(zip(frame.task_id, frame.fold)) == {t.id: int(f) for t, f in zip(dom.tasks, folds)}


@pytest.mark.parametrize("name", BUILTIN)
def test_label_and_lexical_scorers_cover_every_candidate_of_the_builtin_domains(name, builtin):
    dom = builtin[1][name]
    folds = _folds(dom)
    for scorer in FAST:
        frame = score_domain(dom, scorer, folds)
        _check_complete(frame, dom, folds)
        q = ranking_quality(frame, dom)
        assert 0.0 <= q["recall@1"] <= q["recall@3"] <= q["recall@5"] <= 1.0, scorer


@pytest.mark.parametrize("scorer", list(SCORERS))
def test_every_scorer_on_the_fixture_domain_under_both_protocols(scorer, valid_user, vendor_catalogs, tmp_path):
    """A scorer that learns across catalogs learns from the vendor catalogs (never from the checkout's data/,
    which a clean clone does not have)."""
    across = {"catalogs": NAMES} if "catalogs" in scorer_params(scorer) else {}
    for protocol in ("kfold", "split"):
        folds = _folds(valid_user, protocol) if protocol == "kfold" else np.array([-1, -1, 0, 0, -1])
        frame = score_domain(valid_user, scorer, folds, cache_dir=tmp_path, random_state=1,
                             data_dir=vendor_catalogs, **across)
        _check_complete(frame, valid_user, folds)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILTIN)
def test_every_scorer_covers_every_candidate_of_the_builtin_domains(name, builtin, tmp_path_factory):
    dom, cache = builtin[1][name], tmp_path_factory.mktemp("emb")
    for scorer in ["bm25", "dense", "supervised", "hybrid", "prior"]:
        _check_complete(score_domain(dom, scorer, _folds(dom), cache_dir=cache), dom, _folds(dom))


def test_bm25_matches_words_inside_identifiers_and_plurals():
    docs = ["get order details. Get the status of an order.", "list all product types.", "find user id by email."]
    s = bm25_scores(["What is the status of my orders?", "Which products do you sell?", "the"], docs)
    assert s[0].argmax() == 0 and s[1].argmax() == 1
    assert (s[2] == 0).all()  # only stop words


def test_hybrid_is_the_rrf_of_bm25_and_dense(valid_user, tmp_path):
    folds = _folds(valid_user)
    frames = {s: score_domain(valid_user, s, folds, cache_dir=tmp_path) for s in ("bm25", "dense", "hybrid")}
    problem = Problem.from_domain(valid_user, folds)

    def matrix(frame):
        col = {n: j for j, n in enumerate(problem.tools)}
        out = np.zeros(problem.mask.shape, int)
        row = {t: i for i, t in enumerate(problem.task_ids)}
        out[frame.task_id.map(row), frame.tool.map(col)] = frame["rank"]
        return out

    fused = rrf([matrix(frames["bm25"]), matrix(frames["dense"])], problem.mask, k=60)
    assert np.array_equal(matrix(frames["hybrid"]), rank_matrix(fused, problem.mask))
    assert rrf([np.array([[1, 2]]), np.array([[2, 1]])], np.ones((1, 2), bool), k=0).tolist() == [[1.5, 1.5]]


def test_prior_is_the_training_rate_with_ties_broken_by_bm25():
    tools = [Tool("alpha_tool", "Alpha."), Tool("refund_money", "Refund money to a card.", kind="read"),
             Tool("beta_tool", "Beta.")]
    tasks = [Task("t0", "x", ()), Task("t1", "please refund my money", ("alpha_tool",)),
             Task("t2", "y", ("alpha_tool", "beta_tool"))]
    nested = score_domain(Domain("toy", "", tools, tasks), "prior", np.array([0, 1, 1]))
    frame = evaluation_view(nested)
    t0 = frame[frame.task_id == "t0"]  # fitted on t1, t2
    assert t0.tool.tolist() == ["alpha_tool", "beta_tool", "refund_money"]
    assert t0.score.tolist() == [1.0, 0.5, 0.0]
    t1 = frame[frame.task_id == "t1"]  # fitted on t0 alone: every rate 0, so bm25 decides
    assert t1.tool.tolist() == ["refund_money", "alpha_tool", "beta_tool"] and (t1.score == 0).all()
    t2 = frame[frame.task_id == "t2"]  # every rate 0 and no bm25 match: catalog order
    assert t2.tool.tolist() == ["alpha_tool", "refund_money", "beta_tool"]
    # Nested: fold 0's stopper trains on t1, t2 scored among themselves (one fold: nothing to fit on),
    # and fold 1's on t0 scored without t1, t2 (nothing left either): every rate 0, bm25 then catalog order.
    view0, view1 = training_view(nested, 0), training_view(nested, 1)
    assert (view0[view0.task_id != "t0"].score == 0).all()
    assert view0[view0.task_id == "t1"].tool.tolist() == ["refund_money", "alpha_tool", "beta_tool"]
    assert view0[view0.task_id == "t0"].equals(t0)  # the test fold keeps its scores
    t0_trained = view1[view1.task_id == "t0"]
    assert t0_trained.tool.tolist() == ["alpha_tool", "refund_money", "beta_tool"] and (t0_trained.score == 0).all()


def test_noisy_oracle_quality_sweeps_from_perfect_to_random(retail):
    folds = _folds(retail)
    perfect = ranking_quality(score_domain(retail, "noisy_oracle", folds, quality=1.0), retail)
    assert perfect["recall@5"] == 1.0 and perfect["mrr"] == 1.0 and perfect["ndcg@10"] == 1.0
    mrr = [ranking_quality(score_domain(retail, "noisy_oracle", folds, quality=q), retail)["mrr"]
           for q in (0.0, 0.3, 0.6)]
    assert mrr[0] < mrr[1] < mrr[2] < 1.0
    a = score_domain(retail, "noisy_oracle", folds, quality=0.3, random_state=4)
    assert a.equals(score_domain(retail, "noisy_oracle", folds, quality=0.3, random_state=4))
    assert not a.equals(score_domain(retail, "noisy_oracle", folds, quality=0.3, random_state=5))
    with pytest.raises(ValueError, match=r"quality must lie in \[0, 1\]"):
        score_domain(retail, "noisy_oracle", folds, quality=1.5)


def test_unknown_scorers_and_parameters_are_refused_by_name(valid_user):
    folds = np.zeros(5, int)
    with pytest.raises(ValueError, match="unknown scorer 'bm26'"):
        score_domain(valid_user, "bm26", folds)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['quality'\]"):
        score_domain(valid_user, "bm25", folds, quality=0.5)
    assert scorer_params("noisy_oracle") == {"quality": 0.5}


def test_supervised_learns_from_training_folds(retail):
    q = ranking_quality(score_domain(retail, "supervised", _folds(retail)), retail)
    bm25 = ranking_quality(score_domain(retail, "bm25", _folds(retail)), retail)
    assert q["mrr"] > bm25["mrr"]


def test_tool_documents_of_distractors_are_ranked_like_any_tool(builtin):
    dom = builtin[1]["retail_d100"]
    assert len(dom.acquirable) == 107
    assert tool_document(dom.tool_by_name[dom.acquirable[0]])
