"""Ranking within candidates, cross-fitting groups, the long format and the ranker's text."""

import numpy as np
import pytest

from camdf.rankers.problem import COLUMNS, Problem, crossfit_groups, long_frame, rank_matrix
from camdf.rankers.text import s_stem, split_identifier, tool_document


def test_rank_matrix_breaks_ties_by_secondary_then_catalog_order():
    scores = np.array([[0.5, 0.9, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]])
    mask = np.array([[True, True, True, True], [True, False, True, True]])
    assert rank_matrix(scores, mask).tolist() == [[2, 1, 3, 4], [1, 0, 2, 3]]
    secondary = np.array([[0.0, 0.0, 0.1, 0.2], [0.0, 9.0, 0.3, 0.3]])
    assert rank_matrix(scores, mask, secondary).tolist() == [[4, 1, 3, 2], [3, 0, 1, 2]]


def test_rank_matrix_ignores_scores_outside_candidates_and_refuses_non_finite():
    scores = np.array([[np.nan, 0.1, 0.2]])
    assert rank_matrix(scores, np.array([[False, True, True]])).tolist() == [[0, 2, 1]]
    with pytest.raises(ValueError, match="finite"):
        rank_matrix(scores, np.ones((1, 3), bool))


def test_crossfit_groups_kfold_never_fit_on_the_scored_task():
    folds = np.array([0, 1, 2, 0, 1, 2])
    groups = crossfit_groups(folds)
    assert sorted(np.concatenate([s for s, _ in groups]).tolist()) == list(range(6))
    for scored, train in groups:
        assert not set(scored) & set(train)
        assert set(train) == set(np.flatnonzero(folds != folds[scored[0]]))


def test_crossfit_groups_split_scores_training_only_tasks_among_themselves():
    folds = np.array([0, -1, -1, 0, -1, -1, -1])
    groups = crossfit_groups(folds, inner_folds=2, random_state=3)
    scored_all = np.concatenate([s for s, _ in groups])
    assert sorted(scored_all.tolist()) == list(range(7))
    test_group = [g for g in groups if set(g[0]) == {0, 3}]
    assert len(test_group) == 1 and set(test_group[0][1]) == {1, 2, 4, 5, 6}
    for scored, train in groups:
        if folds[scored[0]] == -1:
            assert not set(train) & {0, 3}, "test labels must not reach training-only scores"
            assert not set(scored) & set(train)


def test_long_frame_one_row_per_candidate_sorted_by_task_then_rank(valid_user):
    problem = Problem.from_domain(valid_user, np.zeros(len(valid_user.tasks), int))
    assert problem.tools == ["lookup_account", "list_invoices", "search_help_center", "convert_currency"]
    scores = np.tile(np.array([0.1, 0.4, 0.3, 0.2]), (5, 1))
    frame = long_frame(problem, scores, rank_matrix(scores, problem.mask))
    assert list(frame.columns) == COLUMNS
    assert len(frame) == 4 * 4 + 2  # u-5 offers two candidates
    assert frame[frame.task_id == "u-1"].tool.tolist() == [
        "list_invoices", "search_help_center", "convert_currency", "lookup_account"
    ]
    assert frame[frame.task_id == "u-5"].tool.tolist() == ["search_help_center", "lookup_account"]
    assert frame.task_id.drop_duplicates().tolist() == ["u-1", "u-2", "u-3", "u-4", "u-5"]
    assert frame["score"].dtype == np.float64 and frame["rank"].dtype == np.int64


def test_problem_refuses_folds_of_the_wrong_length(valid_user):
    with pytest.raises(ValueError, match="one per task"):
        Problem.from_domain(valid_user, np.zeros(3, int))


def test_tool_text():
    assert split_identifier("GorillaFileSystem.mkdir") == "Gorilla File System mkdir"
    assert split_identifier("find_user_id_by_name_zip") == "find user id by name zip"
    assert [s_stem(w) for w in ["orders", "queries", "addresses", "status", "class", "is"]] == [
        "order", "query", "addresse", "status", "class", "is"
    ]


def test_tool_document_reads_name_description_and_parameters(valid_user):
    doc = tool_document(valid_user.tool_by_name["list_invoices"])
    assert doc == "list invoices. List the invoices of an account. Parameters: account id."
