"""Anthropic tool search: Messages API dicts in, tool_reference blocks for the policy's selection out."""

import pytest

from camdf.adapters.anthropic import ToolSearch
from camdf.runtime.toolset import FailOpenWarning

from .conftest import CATALOG, LAM, QUERY

TOOLS = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in CATALOG]


def _use(query):
    return {"type": "tool_use", "id": "toolu_1", "name": "camdf_tool_search", "input": {"query": query}}


def test_the_result_references_exactly_the_selection(policy_dir, expected):
    search = ToolSearch(str(policy_dir), lam=LAM, always_include=["get_weather"])
    tools = search.prepare(TOOLS)
    assert tools[0]["name"] == "camdf_tool_search"
    assert {t["name"] for t in tools[1:] if not t.get("defer_loading")} == {"get_weather"}
    block = search.result(_use(QUERY), TOOLS)
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert [c["type"] for c in block["content"]] == ["tool_reference"] * len(expected)
    assert {c["tool_name"] for c in block["content"]} == set(expected) - {"get_weather"}


def test_a_failing_policy_references_every_tool(tmp_path):
    with pytest.warns(FailOpenWarning):
        block = ToolSearch(str(tmp_path / "missing")).result(_use(QUERY), TOOLS)
    assert [c["tool_name"] for c in block["content"]] == [t["name"] for t in TOOLS]
    with pytest.raises(ValueError, match="tool_use: expected a tool_use block"):
        ToolSearch(str(tmp_path)).result({"name": "other", "id": "x"}, TOOLS)


def test_a_deferring_policy_preloads_for_the_task_and_the_search_covers_what_it_deferred():
    from camdf.runtime import StopPolicy
    from camdf.runtime.toolset import search_deferred

    from ..core.test_theory import _family

    policy = StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 3}).fit(
        _family(60, True), costs={"x": 6.0})
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    search = ToolSearch(policy, lam=LAM, search_k=2)
    tools = search.prepare(TOOLS, task=QUERY)
    assert {t["name"] for t in tools[1:] if not t.get("defer_loading")} == set(sel.exposed)
    assert {t["name"] for t in tools[1:] if t.get("defer_loading")} == set(sel.deferred)
    block = search.result(_use("send the invoice and a coupon"), TOOLS, task=QUERY)
    names = [c["tool_name"] for c in block["content"]]
    assert names == search_deferred("send the invoice and a coupon", CATALOG, sel.deferred, 2)
    assert names and set(names) <= {"get_invoice", "update_invoice", "get_coupon", "update_coupon"}
