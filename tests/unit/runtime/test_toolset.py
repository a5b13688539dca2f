"""ToolChooser: the caller's scorer, the min_tools floor, the decision's warnings, and refusals of bad settings."""

import logging

import numpy as np
import pytest

from camdf.runtime import StopPolicy
from camdf.runtime.requests import Selection
from camdf.runtime.toolset import FailOpenWarning, ToolChooser

from ..core.test_theory import _family

TOOLS = [{"name": f"{verb}_{topic}", "description": f"{verb.capitalize()} a {topic} of the customer",
          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}
         for topic in ("order", "refund", "weather", "flight", "invoice") for verb in ("get", "update")]
QUERY = "I want a refund for my order"


class Noted(Selection):
    """A selection with ``warnings`` (another change adds them to Selection itself; read with getattr)."""


class Fixed:
    """A policy (the duck-typed interface: ``select``) exposing the first ``depth`` of a reversed ranking."""

    def __init__(self, depth, warnings=None):
        self.depth, self.warnings, self.calls = depth, warnings, []

    def select(self, tools, query=None, lam=None, scores=None, **dials):
        self.calls.append(scores)
        ranked = [t["name"] for t in tools][::-1]
        sel = Noted(tools[::-1][: self.depth], self.depth, ranked)
        if self.warnings is not None:
            sel.warnings = self.warnings
        return sel


@pytest.fixture(scope="module")
def policy():
    return StopPolicy(method="camdf", lam=0.2).fit(_family(60, True), costs={"x": 6.0})


def test_the_scorer_ranks_the_tools(policy):
    def scorer(query, tools):
        assert query == QUERY and [t["name"] for t in tools] == [t["name"] for t in TOOLS[1:]]
        return [float(i) for i in range(len(tools))]  # the last tool best

    choice = ToolChooser(policy, lam=0.05, scorer=scorer, always_include=["get_order"]).choose(TOOLS, QUERY)
    want = policy.select(TOOLS[1:], scores=list(map(float, range(9))), query=QUERY, lam=0.05)
    assert choice.ranked == tuple(want.ranked) and choice.ranked[0] == TOOLS[-1]["name"]
    assert set(choice.names) == {*want.exposed, "get_order"} and not choice.failed_open


@pytest.mark.parametrize("scorer, says", [
    (lambda q, tools: 1 / 0, r"scorer: raised ZeroDivisionError"),
    (lambda q, tools: [1.0] * (len(tools) - 1), r"scorer: expected 10 finite numbers \(one per tool\), got shape"),
    (lambda q, tools: [float("nan")] * len(tools), r"scorer: expected 10 finite numbers .*not finite"),
    (lambda q, tools: ["high"] * len(tools), r"scorer: expected 10 finite numbers .*dtype"),
    (lambda q, tools: None, r"scorer: expected 10 finite numbers .*dtype object"),
])
def test_a_failing_scorer_fails_open_with_one_warning(policy, scorer, says):
    with pytest.warns(FailOpenWarning, match=says) as caught:
        choice = ToolChooser(policy, scorer=scorer).choose(TOOLS, QUERY)
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1
    assert choice.failed_open and choice.names == tuple(t["name"] for t in TOOLS)


def test_min_tools_adds_the_best_ranked_and_says_so(caplog):
    chooser = ToolChooser(Fixed(0))
    with caplog.at_level(logging.WARNING, logger="camdf"):
        choice = chooser.choose(TOOLS, QUERY)
        assert chooser.choose(TOOLS, QUERY) is choice  # a cached decision is not logged again
    assert choice.names == ("update_invoice",)  # the best-ranked tool
    assert choice.warnings == ("the policy exposed 0 of 10 tools; added the top 1 (min_tools=1)",)
    assert [r.getMessage() for r in caplog.records if r.name == "camdf"] == [f"camdf: {choice.warnings[0]}"]
    three = ToolChooser(Fixed(1), min_tools=3, always_include=["get_order"]).choose(TOOLS, QUERY)
    assert set(three.names) == {"update_invoice", "get_invoice", "update_flight", "get_order"}
    assert three.warnings == ("the policy exposed 1 of 9 tools; added the top 2 (min_tools=3)",)
    assert ToolChooser(Fixed(0), min_tools=0).choose(TOOLS, QUERY).names == ()  # no floor asked for
    assert ToolChooser(Fixed(2)).choose(TOOLS, QUERY).warnings == ()
    assert len(ToolChooser(Fixed(0), min_tools=20).choose(TOOLS, QUERY).names) == 10  # all there is


def test_the_policys_own_warnings_are_carried_and_logged_once(caplog):
    with caplog.at_level(logging.WARNING, logger="camdf"):
        choice = ToolChooser(Fixed(0, ["the request is unlike the training data"])).choose(TOOLS, QUERY)
    assert choice.warnings == ("the request is unlike the training data",
                               "the policy exposed 0 of 10 tools; added the top 1 (min_tools=1)")
    assert len([r for r in caplog.records if r.name == "camdf"]) == 2


def test_the_scores_reach_a_duck_typed_policy_as_floats():
    fixed = Fixed(1)
    ToolChooser(fixed, scorer=lambda q, tools: np.arange(len(tools), dtype=np.int32)).choose(TOOLS, QUERY)
    assert fixed.calls[0].dtype == np.float64 and fixed.calls[0].tolist() == list(map(float, range(10)))
    plain = Fixed(1)
    ToolChooser(plain).choose(TOOLS, QUERY)
    assert plain.calls == [None]  # no scorer: the policy ranks with its own


@pytest.mark.parametrize("kwargs, says", [
    ({"min_tools": -1}, r"^min_tools: expected a non-negative integer, got -1"),
    ({"min_tools": 1.5}, r"^min_tools: expected a non-negative integer, got 1.5"),
    ({"min_tools": True}, r"^min_tools: expected a non-negative integer, got True"),
    ({"max_tools": -2}, r"^max_tools: expected a non-negative integer or None, got -2"),
    ({"min_tools": 3, "max_tools": 2}, r"^min_tools: 3 is more than max_tools \(2\)"),
    ({"scorer": "bm25"}, r"^scorer: expected a callable \(query, tools\) -> scores, got str"),
    ({"always_include": "get_order"}, r"^always_include: expected a list of tool names"),
])
def test_bad_settings_are_refused_naming_the_field(kwargs, says):
    with pytest.raises(ValueError, match=says):
        ToolChooser(Fixed(1), **kwargs)
