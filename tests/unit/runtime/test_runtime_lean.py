"""The lean camdf_risk stopper (camdf.runtime.lean): the full policy's decisions and refusals from plain numbers,
loaded without scikit-learn."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camdf.runtime import StopPolicy
from camdf.runtime.lean import LeanPolicy, lean_numbers

from ..core.test_theory import _family
from .test_runtime import _openai, json_values


@pytest.fixture(scope="module")
def risk():
    return StopPolicy(method="camdf_risk", lam=0.2, dials={"alpha": 0.2}).fit(_family(80, True), costs={"x": 6.0})


@pytest.fixture(scope="module")
def lean(risk):
    numbers = json.loads(json.dumps(lean_numbers(risk)))  # as logged: through JSON
    return LeanPolicy(numbers, full=lambda: risk)


def _request(rng, n):
    vocab = ["a", "b", "c", "d", "x"]
    names = list(rng.permutation(vocab[: min(n, 5)] + [f"new{j}" for j in range(n - min(n, 5))]))
    return {"tools": [_openai(m) for m in names], "scores": np.round(rng.normal(0.5, 0.3, n), 1).tolist(),
            "costs": rng.uniform(0.1, 7.0, n).tolist()}


@pytest.mark.parametrize("alpha", [None, 0.05, 0.2, 0.5])
def test_lean_decides_as_the_full_policy(risk, lean, alpha):
    rng = np.random.default_rng(11)
    depths = []
    for k in range(200):
        req = _request(rng, int(rng.integers(1, 64)))
        full = risk.select_batch([req], alpha=alpha)[0]
        got = lean.select_batch([req], alpha=alpha)[0]
        assert (got.depth, got.ranked, got.tools) == (full.depth, full.ranked, full.tools), k
        depths.append(got.depth)
    assert len(set(depths)) > 2


def test_a_request_of_its_own_alpha_and_the_builtin_ranker(risk, lean):
    tools = [{"name": "get_weather", "description": "Weather forecast for a city."},
             {"name": "send_email", "description": "Send an email message."}, _openai("a")]
    for req in ({"tools": tools, "query": "weather in Paris"}, {"tools": tools, "query": "email", "alpha": 0.5}):
        assert lean.select_batch([req])[0].to_json() == risk.select_batch([req])[0].to_json()


def test_batches_and_long_rankings_go_to_the_full_policy(risk, lean):
    rng = np.random.default_rng(3)
    assert lean.select_batch([_request(rng, 4), _request(rng, 4)]) is None
    assert lean.select_batch([_request(rng, 65)]) is None
    assert lean.full() is risk


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "tools": st.lists(st.fixed_dictionaries({"name": st.text(max_size=3)}), max_size=4) | json_values,
    "scores": st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3), max_size=4) | json_values,
    "costs": st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3), max_size=4) | json_values,
    "lam": json_values, "alpha": json_values, "query": json_values,
}) | json_values)
def test_lean_refuses_what_the_full_policy_refuses_with_its_message(risk, lean, request_):
    def outcome(pol):
        try:
            return pol.select_batch([request_])[0].to_json()
        except ValueError as err:
            return f"ValueError: {err}"
    assert outcome(lean) == outcome(risk)


def test_other_rules_have_no_lean_numbers():
    assert lean_numbers(StopPolicy(method="camdf_lite", lam=0.2).fit(_family(40, True))) is None


def test_the_lean_module_loads_without_scikit_learn_or_pandas():
    code = ("import sys, camdf.runtime.lean, camdf.runtime.loading, camdf.runtime.publish, camdf.runtime.signature, camdf.cli.commands; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'pandas', 'lightgbm', 'scipy'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
