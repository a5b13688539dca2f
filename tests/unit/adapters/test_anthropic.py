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
