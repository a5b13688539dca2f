"""CAM-DF-argmax: the plug-in estimate as its start, a learnt correction, and inner cross-validation."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from camdf.core.payoff import at_depth
from camdf.policies import StateBatch, make_policy
from camdf.policies.baselines import PluginArgmax
from camdf.policies.camdf_argmax import ARGMAX_GRID, CamDFArgmax

from .test_risk import synthetic_tasks


def _batch(inst, p, lam=0.1, train=True):
    return StateBatch.make(inst, p, lam, "exact", train=train)


@pytest.fixture(scope="module")
def tasks():
    rng = np.random.default_rng(7)
    return synthetic_tasks(rng, 150), synthetic_tasks(rng, 150)


def test_without_a_booster_it_is_the_plug_in_argmax(tasks):
    train, test = tasks
    p_tr, p_te = (np.clip(0.15 + 0.5 * (i.scores - np.nanmean(i.scores)) / 3, 0.01, 0.99) for i in (train, test))
    rule = CamDFArgmax(grid=ARGMAX_GRID[:1]).fit(_batch(train, p_tr))
    assert rule.model_ is None and rule.tuned_parameters() == {"params": {"n_estimators": 0}}
    plugin = PluginArgmax().fit(_batch(train, p_tr))
    assert (rule.decide(_batch(test, p_te, train=False)) == plugin.decide(_batch(test, p_te, train=False))).all()


def test_the_booster_corrects_an_uninformative_plug_in_estimate(tasks):
    train, test = tasks
    flat = lambda inst: np.where(inst.valid, 0.3, 0.0)  # noqa: E731  same p everywhere: plug-in depth is constant
    plugin = CamDFArgmax(grid=ARGMAX_GRID[:1]).fit(_batch(train, flat(train)))
    fixed = plugin.decide(_batch(test, flat(test), train=False))
    assert len(set(fixed.tolist())) == 1
    rule = CamDFArgmax(grid=ARGMAX_GRID[1:2]).fit(_batch(train, flat(train)))
    depth = rule.decide(_batch(test, flat(test), train=False))
    assert len(set(depth.tolist())) > 1 and ((depth >= 0) & (depth <= test.n)).all()
    u = _batch(test, flat(test)).u
    assert at_depth(u, depth).mean() > at_depth(u, fixed).mean()  # the scores it learnt from pay off out of sample


def test_inner_cv_picks_from_the_grid_and_is_deterministic(tasks):
    train, test = tasks
    p = np.where(train.valid, 0.3, 0.0)
    a = make_policy("camdf_argmax", random_state=3).fit(_batch(train, p))
    b = make_policy("camdf_argmax", random_state=3).fit(_batch(train, p))
    assert a.params_ in list(ARGMAX_GRID) and a.params_ == b.params_
    pt = np.where(test.valid, 0.3, 0.0)
    assert (a.decide(_batch(test, pt, train=False)) == b.decide(_batch(test, pt, train=False))).all()


def test_no_margin_and_no_booster_exposes_everything(tasks):
    train, test = tasks
    p = np.where(train.valid, 0.3, 0.0)
    rule = CamDFArgmax(base_margin=False, grid=ARGMAX_GRID[:1]).fit(_batch(train, p))
    assert (rule.decide(_batch(test, np.where(test.valid, 0.3, 0.0), train=False)) == test.n).all()


def test_unfitted_argmax_raises_not_fitted(tasks):
    _, test = tasks
    with pytest.raises(NotFittedError):
        CamDFArgmax().decide(_batch(test, np.where(test.valid, 0.3, 0.0), train=False))
