"""The crosscat scorer: a domain ranked by crosscat fitted on the *other* built catalogs, never on its own labels;
featurised catalogs kept on disk and read back; a missing catalog refused by name."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from camdf.core.folds import assign_folds
from camdf.data.io import write_domain
from camdf.rankers import loco, score_domain
from camdf.rankers.problem import Problem
from tests.unit.rankers.test_crosscat import vendor_domain

NAMES = ("alpha", "beta", "gamma")


def _built(data: Path, name: str, seed: int, scrambled: bool = False) -> None:
    folder = data / name
    dom = vendor_domain(name, seed)
    if scrambled:  # every task's G_x a tool drawn at random: labels that teach nothing
        rng = np.random.default_rng(seed)
        dom = replace(dom, tasks=[replace(t, required=(dom.tools[int(rng.integers(len(dom.tools)))].name,))
                                  for t in dom.tasks])
    write_domain(dom, folder)
    manifest = {"config": {"acquirable_kinds": ["read"], "never_acquirable": []}, "summary": {"domain": name}}
    (folder / "manifest.json").write_text(json.dumps(manifest) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    for k, name in enumerate(NAMES):
        _built(root, name, k)
    _built(root, "scrambled", 1, scrambled=True)
    return root


def _problem(name: str = "alpha", seed: int = 0) -> Problem:
    dom = vendor_domain(name, seed)
    return Problem.from_domain(dom, np.zeros(len(dom.tasks), dtype=int))


def test_the_domains_own_labels_never_reach_its_scores(data, tmp_path):
    problem = _problem()
    base = loco.score_crosscat(problem, catalogs=NAMES, data_dir=data, cache_dir=tmp_path, rounds=20)
    assert base.shape == problem.mask.shape and np.isfinite(base).all()
    # Another G_x for every task of the scored domain: the same scores (its labels are not read).
    rng = np.random.default_rng(1)
    shuffled = replace(problem, membership=rng.permutation(problem.membership, axis=1))
    assert np.array_equal(loco.score_crosscat(shuffled, catalogs=NAMES, data_dir=data, cache_dir=tmp_path, rounds=20),
                          base)
    # The scored domain's own built folder is left out too: scoring without it gives the same scores.
    assert np.array_equal(loco.score_crosscat(problem, catalogs=("beta", "gamma"), data_dir=data, cache_dir=tmp_path,
                                              rounds=20), base)
    # What it learns from does matter: the same catalog with scrambled labels gives other scores.
    assert not np.array_equal(loco.score_crosscat(problem, catalogs=("scrambled",), data_dir=data, rounds=20),
                              loco.score_crosscat(problem, catalogs=("beta",), data_dir=data, rounds=20))


def test_the_scorer_ranks_the_gold_tools_above_most(data, tmp_path):
    dom = vendor_domain("alpha", 0)
    frame = score_domain(dom, "crosscat", assign_folds([t.id for t in dom.tasks], n_folds=3), cache_dir=tmp_path,
                         data_dir=data, catalogs=NAMES, rounds=20)
    required = {t.id: set(t.required) for t in dom.tasks}
    top = frame[frame["rank"] <= 2].groupby("task_id")["tool"].apply(set)
    hit = np.mean([bool(required[t] & top[t]) for t in top.index])
    assert hit > 0.8, hit


def test_featurised_catalogs_are_kept_on_disk_and_a_damaged_file_is_rebuilt(data, tmp_path):
    loco._KEPT.clear()  # this process's memory first: a kept catalog is not read or written again
    first = loco.built_catalog(data / "beta", cache_dir=tmp_path)
    files = sorted((tmp_path / "crosscat").glob("beta-*.npz"))
    assert len(files) == 1
    loco._KEPT.clear()
    again = loco.built_catalog(data / "beta", cache_dir=tmp_path)
    assert np.array_equal(again.features, first.features) and again.tools == first.tools
    files[0].write_bytes(b"not an npz")
    loco._KEPT.clear()
    rebuilt = loco.built_catalog(data / "beta", cache_dir=tmp_path)
    assert np.array_equal(rebuilt.features, first.features)
    assert np.load(files[0])["features"].shape == first.features.shape  # written again, whole


def test_a_catalog_not_built_is_refused_by_name(data):
    with pytest.raises(ValueError, match=r"scorer\.params\.catalogs: delta not built under"):
        loco.score_crosscat(_problem(), catalogs=("beta", "delta"), data_dir=data)
    with pytest.raises(ValueError, match="expected a catalog other than 'alpha'"):
        loco.score_crosscat(_problem(), catalogs=("alpha",), data_dir=data)
