"""cv_set: every pool member ships and decides alike on the batch, one-task and lean (JSON) paths; the inner CV
picks the member of highest inner payoff; the pool is fixed in the code."""

import json
from functools import partial

import numpy as np
import pytest

from camdf.core.membership import MembershipModel
from camdf.policies import Card, StateBatch, make_policy, registered
from camdf.policies.cv_set import POOL, CVSet
from camdf.runtime import StopPolicy
from camdf.runtime.lean import LeanPolicy, lean_numbers

from ..core.test_features import _random_instances
from ..core.test_theory import _family
from .test_set_rules import _request


def _member_card(name: str) -> Card:
    def factory(rs, **params):
        return CVSet(pool=(name,), random_state=rs, **params)
    return Card(f"cv_only_{name.replace('/', '_').replace('-', '_')}", factory, family="camdf", ours=True,
                shippable=True, picks_prefix=False, portable=partial(_portable))


def _portable():
    from camdf.policies.plain import PortableCVSet
    return PortableCVSet


@pytest.mark.parametrize("name", [name for name, _, _ in POOL])
def test_every_member_decides_alike_on_the_batch_one_task_and_lean_paths(name):
    card = _member_card(name)
    with registered(card):
        policy = StopPolicy(method=card.name, lam=0.2).fit(_family(60, True), costs={"x": 6.0})
        assert policy.rule_.choice_ == name
        lean = LeanPolicy(json.loads(json.dumps(lean_numbers(policy))), full=lambda: policy)
        rng = np.random.default_rng(3)
        reqs = [_request(rng, int(rng.integers(1, 30))) for _ in range(25)]
        batch = policy.select_batch(reqs)
        for req, b in zip(reqs, batch):
            assert policy.select_batch([req])[0].exposed == b.exposed == lean.select_batch([req])[0].exposed


def test_the_inner_cv_picks_the_member_of_highest_inner_payoff_and_reports_it():
    inst = _random_instances(4, n_tasks=90)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    rule = make_policy("cv_set").fit(StateBatch.make(inst, p, 0.05, "exact", train=True))
    payoffs = rule.inner_payoffs_
    assert set(payoffs) == {name for name, _, _ in POOL}
    assert rule.choice_ == max(payoffs, key=lambda m: (payoffs[m], -list(payoffs).index(m)))
    assert rule.tuned_parameters()["params"] == rule.choice_
    with pytest.raises(ValueError, match="pool"):
        CVSet(pool=("plugin/unknown",)).fit(StateBatch.make(inst, p, 0.05, "exact", train=True))


def test_the_pool_is_frozen_and_dated():
    """cv_set's pool as of POOL_FROZEN: a change to it is a new rule (a new card), so this digest never moves."""
    import hashlib

    from camdf.policies.cv_set import POOL_FROZEN

    digest = hashlib.sha256(json.dumps(POOL, sort_keys=True).encode()).hexdigest()
    assert (POOL_FROZEN, digest) == ("2026-12-05", FROZEN_DIGEST)


FROZEN_DIGEST = "3a594ddaebf2d6fa9d7932914e45cdd8ebbbc7dc29be7fa1b9f429717085b2de"  # json.dumps(POOL, sort_keys=True), SHA-256
