"""The run-time stopper: tool formats, validation of every field, and a fuzz test."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camdf.runtime import StopPolicy

from ..core.test_theory import _family


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


@pytest.fixture(scope="module")
def camdf_policy():
    return StopPolicy(method="camdf", lam=0.2).fit(_family(60, True), costs={"x": 6.0})


@pytest.mark.parametrize("which", ["policy", "camdf_policy"])
def test_single_request_path_decides_as_the_vectorised_batch(which, request):
    """One short request takes the plain-Python path; inside a batch the same request is vectorised."""
    pol = request.getfixturevalue(which)
    rng = np.random.default_rng(5)
    vocab = ["a", "b", "c", "d", "x"]
    depths = []
    for k in range(150):
        n = int(rng.integers(1, 80))  # beyond SHORT_RANKING too
        names = vocab[: min(n, 5)] + [f"new{j}" for j in range(n - min(n, 5))]
        names = list(rng.permutation(names))
        scores = np.round(rng.normal(0.5, 0.3, n), 1).tolist()  # rounded: ties occur
        costs = rng.uniform(0.1, 7.0, n).tolist()
        req = {"tools": [_openai(m) for m in names], "scores": scores, "costs": costs,
               "lam": float(rng.choice([0.0, 0.05, 0.2, 1.0]))}
        one = pol.select_batch([req])[0]
        batched = pol.select_batch([req, {"tools": [_openai("a")], "scores": [1.0]}])[0]
        assert (one.depth, one.ranked, one.tools) == (batched.depth, batched.ranked, batched.tools), k
        depths.append(one.depth)
    assert len(set(depths)) > 2  # the comparison covers several depths, not one constant answer


valid_request = st.fixed_dictionaries({
    "tools": st.just([_openai(n) for n in ["a", "b", "c"]]),
    "scores": st.lists(st.floats(-5, 5) | st.integers(-3, 3), min_size=3, max_size=3),
}, optional={"costs": st.lists(st.floats(0.1, 5), min_size=3, max_size=3), "lam": st.floats(0, 1)})
any_request = valid_request | st.fixed_dictionaries({
    "tools": st.just([_openai(n) for n in ["a", "b", "c"]]),
    "scores": st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3) | json_values,
                       min_size=2, max_size=4),
}, optional={"costs": st.lists(st.floats(allow_nan=True) | st.integers(-3, 3), min_size=3, max_size=3),
             "lam": json_values}) | json_values


@settings(max_examples=200, deadline=None)
@given(st.lists(any_request, min_size=2, max_size=4))
def test_a_batch_names_the_first_bad_request_as_one_by_one_checks_do(policy, requests):
    """A batch checks its numbers all at once; its error must still be the first request's own."""
    first_bad = message = None
    for k, r in enumerate(requests):
        try:
            policy.select_batch([r])
        except ValueError as alone:
            first_bad, message = k, str(alone)
            break
    if first_bad is None:
        out = policy.select_batch(requests)
        assert [s.depth for s in out] == [policy.select_batch([r])[0].depth for r in requests]
        return
    with pytest.raises(ValueError) as err:
        policy.select_batch(requests)
    expected = (f"requests[{first_bad}]{message[len('request'):]}" if message.startswith("request:")
                else f"requests[{first_bad}].{message}")
    assert str(err.value) == expected


@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint8, np.float64])
def test_numpy_scalars_of_any_numeric_type_are_numbers(policy, dtype):
    names = ["a", "b", "c", "d"]
    plain = policy.select([_openai(n) for n in names], [9, 8, 2, 1], [1, 1, 1, 1], lam=0.2)
    scalars = policy.select([_openai(n) for n in names], [dtype(v) for v in (9, 8, 2, 1)],
                            [dtype(1)] * 4, lam=0.2)
    batch = policy.select_batch([{"tools": [_openai(n) for n in names], "scores": [dtype(v) for v in (9, 8, 2, 1)],
                                  "costs": [dtype(1)] * 4}] * 2, lam=0.2)
    assert scalars.depth == plain.depth == batch[0].depth and scalars.ranked == plain.ranked
