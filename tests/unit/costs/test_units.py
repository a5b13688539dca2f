"""Costs in the harness builder's units: schema tokens counted offline, lambda from a task's value in tokens."""

import json

import numpy as np
import pytest

from camdf.costs.regimes import base_costs, costs
from camdf.costs.units import (DEFAULT_TASK_VALUE, count_text_tokens, definition, lam_from_task_value,
                               schema_tokens)
from camdf.data.model import Domain, Task, Tool


def _tool(name, description, props=None):
    params = None if props is None else {"type": "object", "properties": {p: {"type": "string"} for p in props}}
    return {"name": name, "description": description, "parameters": params}


def test_a_word_is_one_token_a_long_identifier_several_and_digits_go_in_threes():
    assert count_text_tokens("get the order") == 3
    assert count_text_tokens("internationalization") == 4  # 20 letters: ceil(20 / 6)
    assert count_text_tokens("12345678") == 3  # 123 456 78
    assert count_text_tokens('{"a":1}') == 5  # {" a ": 1 }


def test_schema_tokens_grow_with_the_definition_and_are_at_least_one():
    short = _tool("get_order", "Get an order.")
    long = _tool("get_order", "Get an order with its items, payment, shipping address and delivery status.",
                 ["order_id", "include_items", "currency"])
    got = schema_tokens([short, long, _tool("x", "")])
    assert got.dtype == np.float64 and got[1] > got[0] >= got[2] >= 1
    # The definition is the agent's view: its JSON, compact and with sorted keys, so key order cannot move a cost.
    shuffled = {"parameters": long["parameters"], "description": long["description"], "name": "get_order"}
    assert schema_tokens([shuffled])[0] == got[1]
    assert definition(short) == {"type": "function", "function": {"name": "get_order", "description": "Get an order."}}
    assert schema_tokens([short])[0] == count_text_tokens(json.dumps(definition(short), separators=(",", ":"),
                                                                     sort_keys=True))


def test_lambda_is_one_over_the_task_value():
    assert lam_from_task_value(DEFAULT_TASK_VALUE) == pytest.approx(1 / DEFAULT_TASK_VALUE)
    assert lam_from_task_value(2_000) == 0.0005


@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), True, "5000", None])
def test_a_task_value_that_is_not_a_positive_number_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="task_value: expected the tokens one solved task is worth"):
        lam_from_task_value(bad)


def _domain():
    tools = [Tool("get_order", "Get an order.", None, kind="read"),
             Tool("refund", "Refund a delivered order to the card it was paid with.",
                  {"type": "object", "properties": {}}, kind="read")]
    return Domain("toy", "test", tools, [Task("t1", "refund my order", ("refund",))])


def test_the_runtime_tokens_regime_gives_the_runtime_counts_unscaled():
    dom = _domain()
    got = costs(dom, "runtime_tokens", 1.0)
    views = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in dom.tools]
    np.testing.assert_array_equal(got.to_numpy(), schema_tokens(views))
    assert got.index.tolist() == ["get_order", "refund"]
    np.testing.assert_array_equal(base_costs(dom, "runtime_tokens").to_numpy(), got.to_numpy())


def test_the_runtime_tokens_regime_refuses_a_dispersion():
    with pytest.raises(ValueError, match="d must be 1"):
        costs(_domain(), "runtime_tokens", 0.5)
