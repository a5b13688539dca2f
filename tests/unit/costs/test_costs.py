"""The cost model: dispersion, the base-cost regimes, and measured execution costs."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import camdf.costs.tokens as cc
from camdf.costs.regimes import base_costs, coefficient_of_variation, costs, disperse
from camdf.integrations.registry import cost_measures
from camdf.integrations.tau2.execution import execution_section, measure_execution
from camdf.data import read_domain
from camdf.integrations.tau2.convert import convert_customer_service

CONF = Path(__file__).resolve().parents[3] / "conf" / "cost"


@pytest.fixture(scope="module")
def valid_user(fixture_domains):
    return read_domain(fixture_domains / "valid_user")


@pytest.fixture(scope="module")
def retail():
    return convert_customer_service("retail")


positive = st.lists(st.floats(0.01, 1000.0), min_size=2, max_size=30)


@settings(max_examples=60, deadline=None)
@given(positive, st.floats(0.0, 4.0))
def test_dispersed_costs_have_mean_one(values, d):
    c = disperse(pd.Series(values), d)
    assert c.mean() == pytest.approx(1.0, rel=1e-12)
    assert (c > 0).all()


@settings(max_examples=60, deadline=None)
@given(positive)
def test_d_zero_is_homogeneous_and_the_cv_grows_with_d(values):
    base = pd.Series(values)
    assert np.array_equal(disperse(base, 0.0).to_numpy(), np.ones(len(values)))
    cvs = [coefficient_of_variation(disperse(base, d)) for d in (0.0, 0.25, 0.5, 1.0, 2.0, 3.0)]
    assert all(b >= a - 1e-12 for a, b in zip(cvs, cvs[1:]))
    if np.ptp(np.log(values)) > 1e-6:
        assert cvs[1] > 0 and cvs[-1] > cvs[1]


def test_disperse_keeps_ratios_at_d_one_and_refuses_bad_input():
    c = disperse(pd.Series([1.0, 2.0, 5.0], index=list("abc")), 1.0)
    assert c.to_dict() == pytest.approx({"a": 0.375, "b": 0.75, "c": 1.875})
    assert disperse(pd.Series([1e-300, 1e300]), 4.0).mean() == pytest.approx(1.0)  # no overflow
    for bad in ([1.0, 0.0], [1.0, np.inf], []):
        with pytest.raises(ValueError, match="finite numbers > 0"):
            disperse(pd.Series(bad, dtype=float), 1.0)
    with pytest.raises(ValueError, match="d must be"):
        disperse(pd.Series([1.0, 2.0]), -1.0)


def test_permuted_keeps_the_multiset_of_costs(retail):
    original = base_costs(retail, "schema_tokens")
    seen = set()
    for seed in range(4):
        perm = base_costs(retail, "permuted", random_state=seed, of="schema_tokens")
        assert list(perm.index) == list(original.index)
        assert sorted(perm) == sorted(original)
        seen.add(tuple(perm))
        c = costs(retail, "permuted", 1.0, random_state=seed, of="schema_tokens")
        assert sorted(c) == pytest.approx(sorted(disperse(original, 1.0)))
    assert len(seen) > 1
    with pytest.raises(ValueError, match="another regime"):
        base_costs(retail, "permuted", of="permuted")


def test_uniform_and_schema_tokens(valid_user):
    assert base_costs(valid_user, "uniform").tolist() == [1.0] * 4
    tokens = base_costs(valid_user, "schema_tokens")
    defs = [json.dumps(cc.tool_definition(valid_user.tool_by_name[n]), ensure_ascii=False) for n in tokens.index]
    assert tokens.tolist() == cc.count_tokens(defs).tolist()
    assert tokens["lookup_account"] > tokens["convert_currency"]  # longer description and a schema
    assert cc.count_tokens(["hello world"]).tolist() == [2]


def test_catalog_costs_name_the_tools_without_one(valid_user):
    with pytest.raises(ValueError, match=r"no `cost` for \['search_help_center'\]"):
        base_costs(valid_user, "catalog")
    got = base_costs(valid_user, "catalog", missing="median")
    assert got.to_dict() == {"lookup_account": 1.0, "list_invoices": 2.5, "search_help_center": 1.0,
                             "convert_currency": 0.5}


def test_tiers_from_the_editable_yaml(retail, valid_user):
    params = yaml.safe_load((CONF / "tiers.yaml").read_text())["params"]
    got = base_costs(retail, "tiers", **params)
    assert got["find_user_id_by_email"] == params["weights"]["scalar"]
    assert got["get_order_details"] == params["weights"]["nested"]
    assert got["list_all_product_types"] == params["weights"]["listing"]
    assert base_costs(valid_user, "tiers", **params)["convert_currency"] == params["weights"]["record"]
    with pytest.raises(ValueError, match=r"tier\(s\) \['huge'\] have no weight"):
        base_costs(retail, "tiers", weights={"a": 1.0}, assign={"*": "huge"}, default="a")


def test_unknown_regimes_and_parameters_are_refused(valid_user):
    with pytest.raises(ValueError, match="unknown regime 'free'"):
        base_costs(valid_user, "free")
    with pytest.raises(ValueError, match="unexpected parameter"):
        base_costs(valid_user, "uniform", scale=2)


def test_execution_costs_come_from_real_tau2_calls_and_are_cached(retail, tmp_path, monkeypatch):
    small = dataclasses.replace(retail, tasks=retail.tasks[:8])
    frame = measure_execution(small, cache_dir=tmp_path)
    assert list(frame.index) == retail.acquirable
    called = {a["name"] for t in small.tasks for a in t.meta["gold_actions"]}
    for tool, row in frame.iterrows():
        assert row.mean_tokens > 0
        if tool in called:
            assert row.source == "gold calls"
    assert frame.loc["get_order_details", "source"] == "gold calls"
    assert frame.loc["get_order_details", "n_calls"] > 0
    assert frame.loc["list_all_product_types", "source"] == "task arguments"  # no required parameters
    assert frame.loc["calculate", "source"] == "median"  # never called, needs an expression
    assert frame.loc["calculate", "mean_tokens"] == frame[frame.source != "median"].mean_tokens.median()
    # Second run: read from the cache, no environment is built.
    monkeypatch.setattr("camdf.integrations.tau2.execution.get_environment", lambda name: pytest.fail("cache missed"))
    again = measure_execution(small, cache_dir=tmp_path)
    pd.testing.assert_frame_equal(frame, again, check_dtype=False)
    c = costs(small, "execution", 1.0, cache_dir=tmp_path, measures=cost_measures())
    assert c.mean() == pytest.approx(1.0) and c["get_order_details"] > c["find_user_id_by_name_zip"]
    section = execution_section({"retail": frame})
    assert section.startswith("## Measured execution costs") and "### retail" in section
    assert "| `get_order_details` |" in section


def test_execution_costs_need_gold_actions(valid_user):
    with pytest.raises(ValueError, match="no task with meta.gold_actions"):
        base_costs(valid_user, "execution", measures=cost_measures())


def test_measured_regimes_get_their_measure_from_the_caller(valid_user):
    measures = cost_measures()  # the integrations registry's table
    assert list(measures) == ["execution"] and measures["execution"].measure is measure_execution
    assert measures["execution"].section is execution_section
    for regime, params in (("execution", {}), ("permuted", {"of": "execution"})):
        with pytest.raises(ValueError, match=r"cost regime: unknown regime 'execution', expected one of .* \(a measured "
                                             r"regime needs measures=camdf.integrations.registry.cost_measures\(\)\)"):
            base_costs(valid_user, regime, **params)
    with pytest.raises(ValueError, match="no task with meta.gold_actions"):  # permuted hands its measures on
        base_costs(valid_user, "permuted", measures=cost_measures(), of="execution")
    with pytest.raises(ValueError, match=r"cost regime execution: unexpected parameter\(s\) \['bogus'\]"):
        base_costs(valid_user, "execution", measures=measures, bogus=1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retail", "airline"])
def test_execution_costs_of_retail_and_airline(name, tmp_path):
    dom = convert_customer_service(name)
    frame = measure_execution(dom, cache_dir=tmp_path)
    assert (frame.n_calls > 0).sum() >= 5 and (frame.mean_tokens > 0).all()
