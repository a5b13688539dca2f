"""The crosscat scorer: a domain ranked by crosscat fitted on the *other* built catalogs, never on its own labels;
featurised catalogs kept on disk and read back; a missing catalog refused by name."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from camdf.core.folds import assign_folds
from camdf.rankers import loco, score_domain
from camdf.rankers.problem import Problem

from tests.unit.rankers.conftest import NAMES
from tests.unit.rankers.test_crosscat import vendor_domain


def _problem(name: str = "alpha", seed: int = 0) -> Problem:
    dom = vendor_domain(name, seed)
    return Problem.from_domain(dom, np.zeros(len(dom.tasks), dtype=int))


def test_the_domains_own_labels_never_reach_its_scores(vendor_catalogs, tmp_path):
    problem = _problem()
    base = loco.score_crosscat(problem, catalogs=NAMES, data_dir=vendor_catalogs, cache_dir=tmp_path, rounds=20)
    assert base.shape == problem.mask.shape and np.isfinite(base).all()
    # Another G_x for every task of the scored domain: the same scores (its labels are not read).
    rng = np.random.default_rng(1)
    shuffled = replace(problem, membership=rng.permutation(problem.membership, axis=1))
    assert np.array_equal(loco.score_crosscat(shuffled, catalogs=NAMES, data_dir=vendor_catalogs, cache_dir=tmp_path, rounds=20),
                          base)
    # The scored domain's own built folder is left out too: scoring without it gives the same scores.
    assert np.array_equal(loco.score_crosscat(problem, catalogs=("beta", "gamma"), data_dir=vendor_catalogs, cache_dir=tmp_path,
                                              rounds=20), base)
    # What it learns from does matter: the same catalog with scrambled labels gives other scores.
    assert not np.array_equal(loco.score_crosscat(problem, catalogs=("scrambled",), data_dir=vendor_catalogs, rounds=20),
                              loco.score_crosscat(problem, catalogs=("beta",), data_dir=vendor_catalogs, rounds=20))


def test_the_scorer_ranks_the_gold_tools_above_most(vendor_catalogs, tmp_path):
    dom = vendor_domain("alpha", 0)
    frame = score_domain(dom, "crosscat", assign_folds([t.id for t in dom.tasks], n_folds=3), cache_dir=tmp_path,
                         data_dir=vendor_catalogs, catalogs=NAMES, rounds=20)
    required = {t.id: set(t.required) for t in dom.tasks}
    top = frame[frame["rank"] <= 2].groupby("task_id")["tool"].apply(set)
    hit = np.mean([bool(required[t] & top[t]) for t in top.index])
    assert hit > 0.8, hit


def test_featurised_catalogs_are_kept_on_disk_and_a_damaged_file_is_rebuilt(vendor_catalogs, tmp_path):
    loco._KEPT.clear()  # this process's memory first: a kept catalog is not read or written again
    first = loco.built_catalog(vendor_catalogs / "beta", cache_dir=tmp_path)
    files = sorted((tmp_path / "crosscat").glob("beta-*.npz"))
    assert len(files) == 1
    loco._KEPT.clear()
    again = loco.built_catalog(vendor_catalogs / "beta", cache_dir=tmp_path)
    assert np.array_equal(again.features, first.features) and again.tools == first.tools
    files[0].write_bytes(b"not an npz")
    loco._KEPT.clear()
    rebuilt = loco.built_catalog(vendor_catalogs / "beta", cache_dir=tmp_path)
    assert np.array_equal(rebuilt.features, first.features)
    assert np.load(files[0])["features"].shape == first.features.shape  # written again, whole


def test_a_changed_catalogs_new_file_replaces_its_old_one_and_no_other(vendor_catalogs, tmp_path):
    import shutil

    data = Path(shutil.copytree(vendor_catalogs, tmp_path / "data"))
    shutil.copytree(data / "gamma", data / "beta-2")  # a catalog whose name starts with another's
    loco._KEPT.clear()
    loco.built_catalog(data / "beta", cache_dir=tmp_path)
    loco.built_catalog(data / "beta-2", cache_dir=tmp_path)
    old = sorted(p.name for p in (tmp_path / "crosscat").glob("*.npz"))
    tasks = data / "beta" / "tasks.jsonl"
    tasks.write_text("".join(tasks.read_text().splitlines(keepends=True)[:-1]))  # one task fewer: a new key
    changed = loco.built_catalog(data / "beta", cache_dir=tmp_path)
    now = sorted(p.name for p in (tmp_path / "crosscat").glob("*.npz"))
    assert len(old) == len(now) == 2 and len(set(old) & set(now)) == 1
    assert [n for n in now if n.startswith("beta-2-")] == [n for n in old if n.startswith("beta-2-")]
    assert len(changed.task_ids) == 29


def test_a_catalog_not_built_is_refused_by_name(vendor_catalogs):
    with pytest.raises(ValueError, match=r"scorer\.params\.catalogs: delta not built under"):
        loco.score_crosscat(_problem(), catalogs=("beta", "delta"), data_dir=vendor_catalogs)
    with pytest.raises(ValueError, match="expected a catalog other than 'alpha'"):
        loco.score_crosscat(_problem(), catalogs=("alpha",), data_dir=vendor_catalogs)
