"""Cost regimes found by folder: each pricing module's COST_REGIMES, read from the source (nothing imported);
a regime's parameters are its function's keyword-only arguments."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from camdf.costs import COST_REGIME_FUNCTIONS, REGIMES, declared_params, declared_regimes
from camdf.costs.regimes import base_costs, costs, is_unscaled
from camdf.data import read_domain

CONF = Path(__file__).resolve().parents[3] / "conf" / "cost"


@pytest.fixture(scope="module")
def valid_user(fixture_domains):
    return read_domain(fixture_domains / "valid_user")


def test_the_package_declares_every_shipped_regime_and_each_has_its_config():
    assert set(REGIMES) == {"uniform", "tiers", "catalog", "permuted", "schema_tokens", "runtime_tokens"}
    assert COST_REGIME_FUNCTIONS["schema_tokens"] == "tokens:schema_token_costs"
    configured = {yaml.safe_load(p.read_text())["regime"] for p in CONF.glob("*.yaml")}
    assert set(REGIMES) <= configured  # and the measured one (execution) beside them
    assert [r for r in REGIMES if is_unscaled(r)] == ["runtime_tokens"]


def test_a_regimes_parameters_are_its_keyword_only_arguments_and_a_config_gives_only_those():
    assert declared_params("tiers") == ("weights", "assign", "default")
    assert declared_params("permuted") == ("of", "of_params")  # random_state and measures come from the call
    for path in CONF.glob("*.yaml"):
        cfg = yaml.safe_load(path.read_text())
        if cfg["regime"] in REGIMES:
            assert set(cfg["params"] or {}) <= set(declared_params(cfg["regime"])), path.name


def test_a_new_module_is_found_and_a_helper_is_not(tmp_path):
    (tmp_path / "flat.py").write_text('COST_REGIMES = {"flat": "flat_costs"}\n\ndef flat_costs(domain): ...\n')
    (tmp_path / "helper.py").write_text("X = 1\n")
    assert declared_regimes(tmp_path) == {"flat": "flat:flat_costs"}


def test_a_declaration_that_is_not_a_literal_is_refused_naming_the_line(tmp_path):
    (tmp_path / "bad.py").write_text("import x\nCOST_REGIMES = {'a': a}\n")
    with pytest.raises(ValueError, match="COST_REGIMES: expected a dict literal of cost regime names") as err:
        declared_regimes(tmp_path)
    assert f"{tmp_path / 'bad.py'}:2:" in str(err.value)


def test_an_unexpected_parameter_names_what_the_regime_accepts(valid_user):
    with pytest.raises(ValueError, match=r"cost regime catalog: unexpected parameter\(s\) \['bogus'\]; it accepts "
                                         r"missing"):
        base_costs(valid_user, "catalog", bogus=1)
    with pytest.raises(ValueError, match="it accepts none"):
        base_costs(valid_user, "uniform", random_state=3, weights={})


def test_the_unscaled_regime_keeps_its_unit_and_a_scaled_one_has_mean_one(valid_user):
    tokens = costs(valid_user, "runtime_tokens", 1.0)
    assert tokens.min() > 1 and (tokens == tokens.round()).all()  # token counts, never dispersed
    assert np.isclose(costs(valid_user, "schema_tokens", 1.0).mean(), 1.0)
