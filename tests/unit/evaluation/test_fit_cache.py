"""A lambda-conditioned rule is fitted once per training batch; the cells that would refit it read it back and
decide exactly as the fitted rule does."""

import logging
from dataclasses import replace

import numpy as np
import pytest

from camdf.core.membership import MembershipModel
from camdf.evaluation.fit_cache import batch_key, fit_across
from camdf.policies import StateBatch, make_policy

from ..core.test_features import _random_instances

GRID = [0.02, 0.06, 0.12, 0.2, 0.3]


@pytest.fixture(scope="module")
def batches():
    inst = _random_instances(5, n_tasks=60)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    across = StateBatch.across_lambdas(inst, p, GRID, "exact")
    tests = [StateBatch.make(inst, p, lam, "exact", train=False) for lam in (0.05, 0.12, 0.25)]
    return inst, p, across, tests


def test_the_second_fit_is_read_back_and_decides_as_the_first(batches, tmp_path):
    inst, p, across, tests = batches
    fitted = fit_across(make_policy("camdf_lambda", 2), across, tmp_path)
    (stored,) = (tmp_path / "models").glob("*.npz")
    again = fit_across(make_policy("camdf_lambda", 2), across, tmp_path)
    assert list((tmp_path / "models").glob("*.npz")) == [stored]
    assert type(again) is type(fitted) and again is not fitted
    assert again.tuned_parameters() == fitted.tuned_parameters()
    for test in tests:  # every cell's lambda: the same depths
        assert np.array_equal(again.select(test), fitted.select(test))
    plain = make_policy("camdf_lambda", 2).fit(across)  # and as a fit without the cache
    assert all(np.array_equal(plain.select(t), fitted.select(t)) for t in tests)


def test_another_batch_or_another_rule_is_another_fit(batches, tmp_path):
    inst, p, across, _ = batches
    dearer = StateBatch.across_lambdas(replace(inst, costs=inst.costs * 1.5), p, GRID, "exact")
    keys = {batch_key(make_policy("camdf_lambda", 2), across), batch_key(make_policy("camdf_lambda", 3), across),
            batch_key(make_policy("camdf_lambda", 2), dearer),
            batch_key(make_policy("camdf_lambda", 2), StateBatch.across_lambdas(inst, p, GRID[:4], "exact"))}
    assert len(keys) == 4
    assert batch_key(make_policy("camdf_lambda", 2), across) == batch_key(make_policy("camdf_lambda", 2),
                                                                          StateBatch.across_lambdas(inst, p, GRID,
                                                                                                    "exact"))


def test_a_tampered_fit_is_refitted(batches, tmp_path, caplog):
    _, _, across, tests = batches
    fitted = fit_across(make_policy("camdf_lambda", 2), across, tmp_path)
    (stored,) = (tmp_path / "models").glob("*.npz")
    raw = bytearray(stored.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    stored.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="camdf.common.checked"):
        again = fit_across(make_policy("camdf_lambda", 2), across, tmp_path)
    assert caplog.records and str(stored) in caplog.records[0].getMessage()
    assert np.array_equal(again.select(tests[0]), fitted.select(tests[0]))


def test_without_a_cache_folder_the_rule_is_just_fitted(batches):
    _, _, across, _ = batches
    rule = make_policy("camdf_lambda", 2)
    assert fit_across(rule, across, None) is rule and hasattr(rule, "model_")
