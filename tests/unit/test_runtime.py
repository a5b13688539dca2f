"""The run-time stopper: tool formats, validation of every field, and a fuzz test."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camdf.runtime import StopPolicy

from .core.test_theory import _family


@pytest.fixture(scope="module")
def policy():
    return StopPolicy(method="camdf_lite", lam=0.2).fit(_family(60, True), costs={"x": 6.0})


def _openai(name):
    return {"type": "function", "function": {"name": name, "description": f"tool {name}", "parameters": {}}}


def test_openai_and_mcp_tools_give_the_same_decision(policy):
    names = ["a", "b", "c", "d"]
    scores = [0.9, 0.85, 0.2, 0.1]
    costs = [0.5, 0.5, 0.5, 0.5]
    openai = policy.select([_openai(n) for n in names], scores, costs, lam=0.2)
    mcp = policy.select([{"name": n, "description": f"tool {n}", "inputSchema": {}} for n in names], scores, costs,
                        lam=0.2)
    assert openai.depth == mcp.depth
    assert [t["function"]["name"] for t in openai.tools] == openai.ranked[: openai.depth]
    assert [t["name"] for t in mcp.tools] == mcp.ranked[: mcp.depth]


def test_ranking_follows_scores_not_list_order(policy):
    sel = policy.select([_openai(n) for n in ["d", "c", "b", "a"]], [0.1, 0.2, 0.85, 0.9], [0.5] * 4, lam=0.2)
    assert sel.ranked == ["a", "b", "c", "d"]


def test_costs_drive_the_decision_as_trained(policy):
    cheap = policy.select([_openai(n) for n in ["a", "b", "c", "d"]], [0.9, 0.85, 0.2, 0.1], [0.5] * 4, lam=0.2)
    dear = policy.select([_openai(n) for n in ["x", "b", "c", "d"]], [0.9, 0.85, 0.2, 0.1], [6.0, 0.5, 0.5, 0.5],
                         lam=0.2)
    assert cheap.depth == 2 and dear.depth == 0


def test_batch_equals_single_calls(policy):
    reqs = [{"tools": [_openai(n) for n in ["a", "b", "c", "d"]], "scores": [0.9, 0.85, 0.2, 0.1],
             "costs": c} for c in ([0.5] * 4, [6.0, 0.5, 0.5, 0.5], [0.5, 3.0, 0.5, 0.5])]
    batch = [s.depth for s in policy.select_batch(reqs, lam=0.2)]
    single = [policy.select(r["tools"], r["scores"], r["costs"], lam=0.2).depth for r in reqs]
    assert batch == single


def test_builtin_ranker_when_no_scores(policy):
    tools = [{"name": "get_weather", "description": "Weather forecast for a city."},
             {"name": "send_email", "description": "Send an email message."}]
    sel = policy.select(tools, query="what is the weather forecast in Paris", lam=0.2)
    assert sel.ranked[0] == "get_weather"


@pytest.mark.parametrize("request_, message", [
    ({"tools": [_openai("a"), _openai("b")], "scores": [1.0, float("nan")]}, r"scores\[1\]: must be finite"),
    ({"tools": [_openai("a"), _openai("b")], "scores": [1.0, float("inf")]}, r"scores\[1\]: must be finite"),
    ({"tools": [_openai("a"), _openai("b")], "scores": [1.0, 0.5], "costs": [1.0, 0.0]}, r"costs\[1\]: must be > 0"),
    ({"tools": [_openai("a"), _openai("b")], "scores": [1.0, 0.5], "costs": [-1.0, 1.0]}, r"costs\[0\]: must be > 0"),
    ({"tools": [_openai("a"), _openai("b")], "scores": [1.0]}, r"scores: length 1 does not match the 2 tools"),
    ({"tools": [_openai("a"), {"name": ""}], "scores": [1.0, 0.5]}, r"tools\[1\].name: must be a non-empty string"),
    ({"tools": [_openai("a"), _openai("a")], "scores": [1.0, 0.5]}, r"tools\[1\].name: duplicate tool name"),
    ({"tools": [_openai("a")], "scores": [1.0], "lam": -0.5}, r"lam: must be a finite number >= 0"),
    ({"tools": [], "scores": []}, r"tools: expected a non-empty list"),
    ({"tools": [_openai("a")]}, r"scores: missing; give scores or a `query`"),
    ({"tools": [_openai("a")], "scores": [1.0], "budget": 3}, r"budget: unknown field"),
    ({"tools": [_openai("a")], "scores": ["high"]}, r"scores\[0\]: expected a number"),
])
def test_bad_input_raises_value_error_naming_the_field(policy, request_, message):
    with pytest.raises(ValueError, match=message):
        policy.select_batch([request_])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=4),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
tool = st.one_of(
    st.fixed_dictionaries({"name": st.text(max_size=3)}, optional={"description": json_values}),
    st.fixed_dictionaries({"type": st.just("function"), "function": json_values}),
    json_values,
)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "tools": st.lists(tool, max_size=4) | json_values,
    "scores": st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3), max_size=4) | json_values,
    "costs": st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3), max_size=4) | json_values,
    "lam": json_values, "query": json_values,
}) | json_values)
def test_fuzz_only_value_errors(policy, request_):
    try:
        out = policy.select_batch([request_])
    except ValueError:
        return
    assert len(out) == 1 and 0 <= out[0].depth <= len(out[0].ranked)
    json.dumps(out[0].to_json())
