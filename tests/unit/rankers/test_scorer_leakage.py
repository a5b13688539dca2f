"""Cross-fitting: changing one task's G_x changes no score of that task (supervised, prior, pairwise, rerank)."""

import dataclasses

import numpy as np
import pytest

from camdf.core.folds import assign_folds
from camdf.rankers import score_domain


def _with_required(domain, index, required):
    tasks = list(domain.tasks)
    tasks[index] = dataclasses.replace(tasks[index], required=tuple(required))
    return dataclasses.replace(domain, tasks=tasks)


@pytest.mark.parametrize("scorer", ["supervised", "prior"])
@pytest.mark.parametrize("protocol", ["kfold", "split"])
def test_a_tasks_own_required_set_never_reaches_its_scores(scorer, protocol, retail):
    folds = assign_folds([t.id for t in retail.tasks], [t.split for t in retail.tasks], 5, protocol, 0)
    before = score_domain(retail, scorer, folds)
    # One evaluated task and, under `split`, one training-only task too.
    picks = [int(np.flatnonzero(folds >= 0)[3])] + ([int(np.flatnonzero(folds == -1)[2])] if protocol == "split" else [])
    for index in picks:
        task = retail.tasks[index]
        flipped = [n for n in retail.candidates_of(task) if n not in task.required]  # the complement of G_x
        after = score_domain(_with_required(retail, index, flipped), scorer, folds)
        mine = before.task_id == task.id
        assert before[mine].equals(after[after.task_id == task.id]), (scorer, protocol, task.id)
        others = after[after.task_id != task.id]
        if protocol == "split" and folds[index] == 0:
            # A test task's labels train nothing at all under `split`.
            assert before[~mine].equals(others)
        else:
            # The labels do matter: a task that trains on this one sees a different score.
            assert not before[~mine].reset_index(drop=True).equals(others.reset_index(drop=True))


@pytest.mark.parametrize("scorer", ["pairwise", "rerank"])
def test_the_pair_rankers_never_read_a_tasks_own_required_set(scorer, retail, tmp_path):
    """The (query, tool) pair ranker and the re-ranker (whose G_x rates are themselves cross-fitted), cross-fitted:
    the same check, their embeddings cached once for the runs."""
    folds = assign_folds([t.id for t in retail.tasks], [t.split for t in retail.tasks], 5, "kfold", 0)
    before = score_domain(retail, scorer, folds, cache_dir=tmp_path)
    index = int(np.flatnonzero(folds >= 0)[3])
    task = retail.tasks[index]
    flipped = [n for n in retail.candidates_of(task) if n not in task.required]
    after = score_domain(_with_required(retail, index, flipped), scorer, folds, cache_dir=tmp_path)
    mine = before.task_id == task.id
    assert before[mine].equals(after[after.task_id == task.id])
    assert not before[~mine].reset_index(drop=True).equals(after[after.task_id != task.id].reset_index(drop=True))
