"""Stoppers and StopPolicy follow scikit-learn's estimator conventions (params, clone, repr, fitted checks)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from camdf.core.membership import MembershipModel
from camdf.policies import REGISTRY, StateBatch, make_policy
from camdf.runtime import StopPolicy

from ..core.test_features import _random_instances
from ..core.test_theory import _family


@pytest.fixture(scope="module")
def batches():
    inst = _random_instances(11, n_tasks=60)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    return StateBatch.make(inst, p, 0.05, "exact", train=True), StateBatch.make(inst, p, 0.05, "exact", train=False)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_stopper_clones_and_reads_as_its_parameters(name):
    rule = make_policy(name, random_state=3)
    params = rule.get_params()
    twin = clone(rule)
    assert type(twin) is type(rule) and twin.get_params().keys() == params.keys()
    for key, value in params.items():
        assert repr(getattr(twin, key)) == repr(value)
    assert " object at 0x" not in repr(rule)
    assert repr(rule).startswith(type(rule).__name__ + "(")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_stopper_that_learns_refuses_to_decide_unfitted(name, batches):
    train, test = batches
    rule = make_policy(name, random_state=0)
    decide_on = train if rule.needs_truth else test
    if rule.requires_fit:
        with pytest.raises(NotFittedError, match=type(rule).__name__):
            rule.select(decide_on)
        with pytest.raises(NotFittedError):
            rule.tuned_parameters()
    else:
        assert rule.select(decide_on).shape == test.inst.tools.shape
    exposed = rule.fit(train).select(decide_on)
    assert exposed.shape == test.inst.tools.shape and not (exposed & ~test.inst.valid).any()
    if rule.picks_prefix:  # a prefix rule's selection is the prefix of its depth
        depth = rule.decide(decide_on)
        assert depth.shape == (test.inst.T,) and (depth >= 0).all() and (depth <= test.inst.n).all()
        assert (exposed == (np.arange(test.inst.N)[None, :] < depth[:, None])).all()
    else:
        assert not hasattr(rule, "decide")  # a set rule has no depth to give
    assert isinstance(rule.tuned_parameters(), dict)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_unknown_dial_is_refused_with_its_name_and_the_rule(name, batches):
    train, test = batches
    rule = make_policy(name, random_state=0).fit(train)
    with pytest.raises(ValueError, match=rf"^cap: not a dial of {type(rule).__name__} \(its dials: "):
        rule.select(train if rule.needs_truth else test, cap=2)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_card_holds_what_its_rule_declares(name):
    """The card's dials, kind and deferring are the class's (the lean loader reads the card without importing the
    rule)."""
    from camdf.policies import card

    rule = make_policy(name)
    assert card(name).dials == type(rule).dials  # name, range and default
    assert card(name).picks_prefix == type(rule).picks_prefix
    assert card(name).defers == type(rule).defers  # a deferring rule's selection names the tools it defers
    params = rule.get_params()
    for dial in type(rule).dials:  # the dial's default is the rule's own
        assert params[dial.name] == dial.default and dial.check(dial.default) == dial.default
    portable = card(name).portable
    if portable is not None:
        assert portable().dials == type(rule).dials
        assert portable().picks_prefix == type(rule).picks_prefix  # the lean path reads the kind off it


def test_set_params_changes_what_the_rule_does(batches):
    train, test = batches
    lite = make_policy("camdf_lite")
    strong = clone(lite).set_params(C=1e-6).fit(train).coefficients()
    weak = lite.fit(train).coefficients()
    assert np.abs(strong.drop("intercept")).sum() < np.abs(weak.drop("intercept")).sum()


def test_best_prefix_without_true_payoffs_names_what_is_missing(batches):
    _, test = batches
    with pytest.raises(ValueError, match="batch.u"):
        make_policy("best_prefix").decide(test)


def test_stop_policy_is_an_estimator():
    policy = StopPolicy(method="camdf_lite", lam=0.2)
    assert repr(policy).startswith("StopPolicy(") and "lam=0.2" in repr(policy)
    assert clone(policy).get_params() == policy.get_params()
    request = {"tools": [{"name": "a"}, {"name": "b"}], "scores": [0.9, 0.1], "costs": [1.0, 1.0]}
    with pytest.raises(NotFittedError, match="StopPolicy"):
        policy.select(**request)
    with pytest.raises(NotFittedError):
        policy.coefficients()
    fitted = policy.fit(_family(60, True), costs={"x": 6.0})
    assert fitted.coefficients() is not None
    assert fitted.select(**request).depth in (0, 1, 2)
