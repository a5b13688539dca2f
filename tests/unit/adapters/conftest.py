"""Adapter fixtures: a real fitted policy (CAM-DF's LightGBM rule) exported to a folder, and a 20-tool catalog."""

import pytest

from camdf.runtime import StopPolicy
from camdf.runtime.export import export_policy

from ..core.test_theory import _family

TOPICS = ["order", "refund", "shipping", "weather", "flight", "user", "invoice", "coupon", "review", "address"]
#: 20 tools: two per topic, named for it.
CATALOG = [{"name": f"{verb}_{topic}", "description": f"{verb.capitalize()} a {topic} of the customer by its id",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}
           for topic in TOPICS for verb in ("get", "update")]
QUERY = "I want a refund for my order and to update the shipping address"
LAM = 0.05


@pytest.fixture(scope="session")
def fitted_policy():
    return StopPolicy(method="camdf", lam=0.2).fit(_family(60, True), costs={"x": 6.0})


@pytest.fixture(scope="session")
def policy_dir(fitted_policy, tmp_path_factory):
    return export_policy(fitted_policy, tmp_path_factory.mktemp("export") / "policy",
                         source={"uri": "fixture://camdf", "version": "7"})


@pytest.fixture(scope="session")
def expected(fitted_policy):
    """The policy's own selection for QUERY over CATALOG at LAM (names): what every adapter must expose."""
    names = fitted_policy.select(CATALOG, query=QUERY, lam=LAM).exposed
    assert 0 < len(names) < len(CATALOG), names  # a selection that tells "filtered" from "everything"
    return names
