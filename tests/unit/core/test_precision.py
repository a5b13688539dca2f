"""Floats handed from one stage to a model are rounded at fixed precision, so a BLAS kernel's last bits stay out."""

import numpy as np
import pandas as pd

from camdf.core.features import normalised_scores
from camdf.core.membership import PROBA_DECIMALS, MembershipModel
from camdf.costs.regimes import COST_DIGITS, disperse

from .test_features import _random_instances


def test_membership_probabilities_are_rounded_on_both_paths():
    inst = _random_instances(5, n_tasks=60)
    model = MembershipModel().fit(inst, inst.member)
    p = model.predict_proba(inst)
    assert np.array_equal(p, np.round(p, PROBA_DECIMALS))
    z = normalised_scores(inst)
    for i in range(5):
        k = int(inst.n[i])
        one = model.predict_task(z[i, :k].tolist(), inst.scores[i, :k].tolist(), inst.tool_ids[i, :k].tolist())
        assert one == p[i, :k].tolist()  # the run-time path gives the very same numbers


def test_a_perturbation_below_the_precision_does_not_move_a_cost():
    base = pd.Series(np.random.default_rng(0).lognormal(0, 1.5, 40))
    c = disperse(base, 1.5)
    mantissa, _ = np.frexp(c.to_numpy())
    assert np.array_equal(mantissa, np.round(mantissa, COST_DIGITS))
    nudged = base.copy()
    nudged.iloc[3] *= 1 + 4e-16  # the size of an AVX2-vs-AVX-512 difference in exp/log
    z, zn = np.log(base) - np.log(base).mean(), np.log(nudged) - np.log(nudged).mean()
    assert not np.array_equal(np.exp(1.5 * z), np.exp(1.5 * zn))  # unrounded, the last bits move
    assert np.array_equal(c.to_numpy(), disperse(nudged, 1.5).to_numpy())


def test_extreme_dispersion_keeps_every_cost_positive():
    c = disperse(pd.Series([1.0, 1e6, 1e12]), 3.0)
    assert (c > 0).all() and c.iloc[0] < 1e-30
