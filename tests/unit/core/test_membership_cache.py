"""The membership probabilities' cache: reused when intact, recomputed (one warning naming it) when tampered."""

import logging

import numpy as np

from camdf.core.membership import fold_probabilities
from camdf.policies.risk import CamDFRisk  # noqa: F401  (the policies' import order, as the cell has it)
from tests.unit.policies.test_risk import synthetic_tasks


def test_a_tampered_membership_cache_is_recomputed(tmp_path, caplog):
    inst = synthetic_tasks(np.random.default_rng(0), 60)
    first = fold_probabilities(inst, inst.member, [0, 1, 2, 3, 4], cache_dir=tmp_path)
    (path,) = (tmp_path / "membership").glob("*.npz")
    stamp = path.stat().st_mtime_ns
    assert fold_probabilities(inst, inst.member, [0, 1, 2, 3, 4], cache_dir=tmp_path)[2][0].tobytes() == \
        first[2][0].tobytes() and path.stat().st_mtime_ns == stamp  # read, not rewritten
    with np.load(path) as z:
        arrays = dict(z)
    arrays["te2"] = np.where(arrays["te2"] > 0, 0.99, 0.0)  # poisoned probabilities under the old checksum
    np.savez(path, **arrays)
    with caplog.at_level(logging.WARNING, logger="camdf.common.checked"):
        again = fold_probabilities(inst, inst.member, [0, 1, 2, 3, 4], cache_dir=tmp_path)
    (record,) = caplog.records
    assert str(path) in record.getMessage() and "checksum" in record.getMessage()
    assert all(np.array_equal(again[f][i], first[f][i]) for f in first for i in (0, 1))
