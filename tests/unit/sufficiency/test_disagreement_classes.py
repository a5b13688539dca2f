"""The four classes of disagreement between derived and annotated G_x, each on real tau2 retail tasks.

1. addresses the text does not state (retail-39: "your current address should be in your recent order");
2. order ids given without their ``W`` (retail-45, retail-46, retail-47: "provide 9502127 first");
3. an annotation's error the derivation gets right: a mistyped email finds no user (retail-37, retail-38);
4. two defensible sets, both recorded: a product reached through the user's orders or through the
   catalog of product types (retail-62).
"""

from __future__ import annotations

import pytest

from camdf.integrations.registry import get_executable
from camdf.sufficiency import relabel
from camdf.sufficiency.relabel import is_sufficient


def _needs(missing):
    return {(m["need"], m["value"]) for m in missing}


# --- 1. address facts ---------------------------------------------------------------------------


def test_an_address_the_text_does_not_state_requires_the_reads_that_reveal_it(results, probe, tasks):
    # retail-39: the user moved to Phoenix; the new street is "in your recent order" and not revealed.
    task = tasks["retail-39"]
    assert "157 Oak Street" not in task.text and "Phoenix" in task.text and "85033" in task.text
    r = results["retail-39"]
    assert {"get_user_details", "get_order_details"} <= set(r.required)
    assert r.checked["facts"] == 4  # address1, address2, city and zip of `modify_user_address`
    without = [t for t in r.required if t != "get_order_details"]
    missing = _needs(probe.missing("retail-39", without))
    assert ("fact", "157 Oak Street") in missing and ("fact", "Suite 258") in missing
    # The city and the zip code are in the text: never missing, whatever the tools.
    assert not {v for need, v in _needs(probe.missing("retail-39", [])) if need == "fact"} & {"Phoenix", "85033"}


def test_an_address_the_text_states_needs_no_read(probe, tasks):
    # retail-22: "change your user address and all order addresses to be 101 Highway, New York, 10001".
    task = tasks["retail-22"]
    assert "101 Highway, New York, 10001" in task.text
    facts = {v for need, v in _needs(probe.missing("retail-22", [])) if need == "fact"}
    assert not facts & {"101 Highway", "New York", "10001"}
    # The original address it changes back to is not in the text: that one must be read.
    assert {"667 Highland Drive", "Suite 865"} <= facts and "Denver" not in facts  # "you live in Denver"


def test_state_and_country_are_not_checked(probe):
    # retail-17 ships to "Suite 641" of the user's Austin address: TX and USA appear nowhere in the text.
    values = {v for m in probe.missing("retail-17", []) for v in [m["value"]] if m["need"] == "fact"}
    assert "123 Elm Street" in values and "Austin" in values
    assert not values & {"TX", "USA"}


# --- 2. identifier normalisation ------------------------------------------------------------------


@pytest.mark.parametrize("task_id", ["retail-45", "retail-46", "retail-47"])
def test_an_order_number_without_its_w_is_the_order_id(task_id, results, tasks):
    exe = get_executable("retail")
    task = tasks[task_id]
    assert "9502127" in task.text and "W9502127" not in task.text
    assert "W9502127" in exe.seed(task.text)
    r = results[task_id]
    # The agent completes the prefix: no listing of the user's orders to find the order.
    assert "get_user_details" not in r.required
    assert "get_order_details" in r.required


def test_the_completion_needs_seven_digits_standing_alone():
    exe = get_executable("retail")
    assert "W9502127" not in exe.seed("item 95021270 or $9502127.50")
    assert {"W9502126", "W9502127"} <= exe.seed("ids 9502126 and 9502127.")


def test_equal_to_the_gold_plan_once_the_w_is_completed(results):
    for task_id in ("retail-46", "retail-47"):
        r = results[task_id]
        assert set(r.required) == set(r.annotated), task_id


# --- 3. the annotation's error ------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", ["retail-37", "retail-38"])
def test_a_mistyped_email_finds_nobody_so_email_lookup_is_not_required(task_id, results, tasks):
    exe = get_executable("retail")
    task = tasks[task_id]
    email = task.meta["gold_actions"][0]["arguments"]["email"]
    assert email in task.text
    with pytest.raises(Exception, match="User not found"):
        exe.read_toolkit().use_tool("find_user_id_by_email", email=email)
    r = results[task_id]
    assert "find_user_id_by_email" in r.annotated and "find_user_id_by_email" not in r.required
    assert "find_user_id_by_name_zip" in r.required
    assert r.audit["dropped"]["find_user_id_by_email"] == "gold_read_failed"


# --- 4. both defensible -------------------------------------------------------------------------------


def test_a_product_reached_two_ways_records_both_sets(results, converted, derivations):
    r = results["retail-62"]
    through_orders = {"find_user_id_by_name_zip", "get_user_details", "get_order_details"}
    through_catalog = {"find_user_id_by_name_zip", "list_all_product_types", "get_product_details"}
    assert set(r.required) == through_orders
    assert [set(a) for a in r.alternatives] == [through_catalog]
    assert r.audit["dropped"] == {"get_product_details": "alternative"}
    # Relabelled, both are sufficient, and so is the annotated set (which contains the first).
    task = next(t for t in relabel(converted["retail"], derivations["retail"]).tasks if t.id == "retail-62")
    assert [set(a) for a in task.alternatives] == [through_catalog]
    for exposed in (through_orders, through_catalog, set(r.annotated)):
        assert is_sufficient(task, exposed)
    assert not is_sufficient(task, through_orders & through_catalog)


def test_every_minimal_set_is_recorded_up_to_the_cap(results):
    from camdf.sufficiency.derive import MAX_ALTERNATIVES, subset_index

    for r in results.values():
        recorded = [r.required, *r.alternatives] if r.required is not None else []
        assert len(r.alternatives) <= MAX_ALTERNATIVES
        for s in recorded:
            assert r.sufficient(s)
            # minimal: no tool can go
            assert not any(r.sufficient([t for t in s if t != drop]) for drop in s)
        n_minimal = sum(1 for m in range(1 << len(r.tools))
                        if r.mask >> m & 1 and not any(r.mask >> (m & ~(1 << i)) & 1
                                                       for i in range(len(r.tools)) if m >> i & 1))
        assert len(recorded) + r.alternatives_dropped == n_minimal, r.task_id
        assert len({subset_index(r.tools, s) for s in recorded}) == len(recorded)
