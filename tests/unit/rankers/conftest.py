"""Domains for the ranker tests: the hand-made fixture and the real tau2/BFCL conversions (``builtin``,
from tests/unit/conftest.py)."""

import pytest

from camdf.data import read_domain

NEVER = ("transfer_to_human_agents",)


@pytest.fixture(scope="session")
def valid_user(fixture_domains):
    return read_domain(fixture_domains / "valid_user")




@pytest.fixture(scope="session")
def retail(builtin):
    return builtin[1]["retail"]
