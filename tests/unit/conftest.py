"""Unit-test fixtures shared across packages: the built-in domains converted from the pinned packages."""

import pytest

from camdf.data import write_domain
from camdf.data.distractors import with_distractors
from camdf.integrations.bfcl.convert import convert_multi_turn
from camdf.integrations.tau2.convert import convert_customer_service, convert_telecom

NEVER = ("transfer_to_human_agents",)


@pytest.fixture(scope="session")
def builtin(tmp_path_factory):
    """The four built-in domains and retail_d100, written to a data folder as the data stage would."""
    data = tmp_path_factory.mktemp("data")
    domains = {
        "retail": convert_customer_service("retail"),
        "airline": convert_customer_service("airline"),
        "telecom": convert_telecom(),
        "bfcl_multi_turn": convert_multi_turn(),
    }
    for name, dom in domains.items():
        write_domain(dom, data / name, validate=False)
    domains["retail_d100"] = with_distractors(
        "retail", 100, 0, data, ["airline", "telecom", "bfcl_multi_turn"], ("read", "generic"), NEVER
    )
    write_domain(domains["retail_d100"], data / "retail_d100", validate=False)
    return data, domains
