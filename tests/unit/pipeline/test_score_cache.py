"""A learned ranker's scores are fitted once per inputs and read back, identical, by every other cell."""

import logging

import numpy as np
import pytest

from camdf.core.folds import assign_folds
from camdf.pipeline.score_cache import cell_scores
from camdf.rankers import score_domain

DOMAIN_CFG = {"name": "retail", "acquirable_kinds": ["read", "generic"], "never_acquirable": ["transfer_to_human_agents"]}


@pytest.fixture(scope="module")
def retail(builtin):
    data, domains = builtin
    return data, domains["retail"]


def _folds(domain, seed=0):
    return assign_folds([t.id for t in domain.tasks], n_folds=5, random_state=seed)


def test_a_learned_scorer_is_fitted_once_and_read_back_identical(retail, tmp_path):
    data, domain = retail
    folds = _folds(domain)
    direct = score_domain(domain, "supervised", folds, cache_dir=tmp_path, random_state=3)
    first = cell_scores(domain, DOMAIN_CFG, "supervised", {}, folds, 3, data, tmp_path)
    (written,) = (tmp_path / "scores" / "retail" / "supervised").glob("*.parquet")
    stamp = written.stat().st_mtime_ns
    second = cell_scores(domain, DOMAIN_CFG, "supervised", {}, folds, 3, data, tmp_path)
    assert written.stat().st_mtime_ns == stamp  # read, not written again
    assert direct.equals(first) and first.equals(second)
    assert list(second.dtypes) == list(direct.dtypes)
    # Other folds or another seed are other inputs: another file.
    cell_scores(domain, DOMAIN_CFG, "supervised", {}, _folds(domain, 1), 3, data, tmp_path)
    cell_scores(domain, DOMAIN_CFG, "supervised", {}, folds, 4, data, tmp_path)
    assert len(list(written.parent.glob("*.parquet"))) == 3


def test_a_scorer_that_fits_nothing_is_not_cached(retail, tmp_path):
    data, domain = retail
    folds = _folds(domain)
    out = cell_scores(domain, DOMAIN_CFG, "bm25", {}, folds, 0, data, tmp_path)
    assert out.equals(score_domain(domain, "bm25", folds))
    assert not (tmp_path / "scores").exists()


def test_a_tampered_cache_file_is_not_read(retail, tmp_path, caplog):
    data, domain = retail
    folds = _folds(domain)
    clean = cell_scores(domain, DOMAIN_CFG, "supervised", {}, folds, 0, data, tmp_path)
    (path,) = (tmp_path / "scores" / "retail" / "supervised").glob("*.parquet")
    poisoned = clean.assign(score=np.roll(clean["score"].to_numpy(), 1))
    poisoned.to_parquet(path, index=False)  # other scores under the old checksum
    with caplog.at_level(logging.WARNING, logger="camdf.pipeline.score_cache"):
        again = cell_scores(domain, DOMAIN_CFG, "supervised", {}, folds, 0, data, tmp_path)
    assert again.equals(clean)
    assert any("does not match its checksum" in r.getMessage() for r in caplog.records)
