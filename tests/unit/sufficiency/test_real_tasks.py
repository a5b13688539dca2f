"""Hand-checked real tau2 tasks: each expectation was worked out by reading the task text, its gold
actions and the database records named below (the comment says why it holds)."""

RETAIL_ALL = [
    "calculate", "find_user_id_by_name_zip", "find_user_id_by_email", "get_order_details",
    "get_product_details", "get_user_details", "list_all_product_types",
]
AIRLINE_ALL = [
    "calculate", "get_reservation_details", "get_user_details", "list_all_airports",
    "search_direct_flight", "search_onestop_flight", "get_flight_status",
]


def without(tools, *drop):
    return [t for t in tools if t not in drop]


def test_retail_40_email_without_zip_authenticates_by_email_alone(results, probe):
    # "You are Isabella Lopez, and your email address is isabella.lopez3271@example.com": no zip
    # code anywhere in the text (her zip is 85034), so name + zip cannot authenticate; the email can.
    # The order to change (#W4923227) is not in the text: her profile lists it (get_user_details),
    # and its status must be checked (get_order_details) before modify_pending_order_payment.
    r = results["retail-40"]
    assert r.required == ["find_user_id_by_email", "get_order_details", "get_user_details"]
    assert all("find_user_id_by_name_zip" not in m for m in r.minimal)
    assert not r.sufficient(["find_user_id_by_name_zip", "get_order_details", "get_user_details"])
    # Without the email lookup nothing reaches her user id: no authentication, no profile, no order.
    missing = probe.missing("retail-40", without(RETAIL_ALL, "find_user_id_by_email"))
    assert {"authenticate", "identifier", "look_up"} <= {m["need"] for m in missing}


def test_retail_0_exchange_to_new_variants_fails_without_get_product_details(results, probe):
    # Exchange the keyboard and the thermostat of #W2378156 for other variants: the new item ids
    # 7706410293 and 7747408585 are variants listed only by get_product_details (the order lists
    # what was bought; list_all_product_types lists product ids, not item ids).
    r = results["retail-0"]
    assert r.required == ["find_user_id_by_name_zip", "get_order_details", "get_product_details"]
    assert not r.sufficient(without(RETAIL_ALL, "get_product_details"))
    missing = {m["value"] for m in probe.missing("retail-0", without(RETAIL_ALL, "get_product_details"))}
    assert missing == {"7706410293", "7747408585"}


def test_retail_5_order_action_fails_without_get_order_details_when_text_has_no_item_ids(results, probe):
    # "return the water bottle": the text names no order and no item id; the water bottle is item
    # 8538875209 of order #W6390527. The profile lists order ids, not items, so with the lookups and
    # the profile alone the item id is missing; the product catalog lists it as a variant, but the
    # order's status must still be checked before the return, which only get_order_details does.
    r = results["retail-5"]
    assert "get_order_details" in r.required
    assert not r.sufficient(without(RETAIL_ALL, "get_order_details"))
    missing = probe.missing("retail-5", ["find_user_id_by_name_zip", "get_user_details"])
    assert {("identifier", "8538875209"), ("look_up", "#W6390527")} <= {(m["need"], m["value"]) for m in missing}
    missing = probe.missing("retail-5", without(RETAIL_ALL, "get_order_details"))
    assert [(m["need"], m["value"]) for m in missing] == [("look_up", "#W6390527")]


def test_retail_5_user_id_and_zip_authenticate_by_name_but_not_by_a_looked_up_email(results, probe):
    # "You are mei_kovacs_8020 in zipcode 28236": the user knows her name (Mei Kovacs, as the gold
    # plan uses it), so name + zip authenticates. Her email (mei.kovacs8232@example.com) is only
    # known from get_user_details, and authenticating with a value the agent looked up is not
    # authentication, so the email route fails even with get_user_details exposed.
    r = results["retail-5"]
    assert r.required == ["find_user_id_by_name_zip", "get_order_details", "get_user_details"]
    assert not r.sufficient(["find_user_id_by_email", "get_order_details", "get_user_details"])
    missing = probe.missing("retail-5", ["find_user_id_by_email", "get_order_details", "get_user_details"])
    assert [m["need"] for m in missing] == ["authenticate"]


def test_retail_36_wrong_email_in_text_and_gold_without_reads(results, tasks):
    # The gold plan lists only modify_pending_order_items (annotated G_x empty). The text's email
    # daikisanchez1479@example.com is not the user's (the database has daiki.sanchez1479@...), so
    # only name + zip (Daiki Sanchez, 46236) authenticates; the order and its items come from the
    # profile and the order, the cheaper variants from the products.
    assert tasks["retail-36"].meta["gold_lists_no_read"]
    r = results["retail-36"]
    assert r.annotated == []
    assert r.required == ["find_user_id_by_name_zip", "get_order_details", "get_product_details", "get_user_details"]
    assert all("find_user_id_by_email" not in m for m in r.minimal)


def test_retail_57_no_gold_action_still_needs_authentication(results):
    # No gold action and nothing to communicate, but the policy authenticates every user first:
    # "You are ivan_hernandez_6923 living in San Diego, 92133" gives Ivan Hernandez + 92133.
    r = results["retail-57"]
    assert r.required == ["find_user_id_by_name_zip"]
    assert r.needs_no_information is None
    assert not r.sufficient([])


def test_retail_16_total_refund_needs_calculate(results, probe):
    # "the total amount you can get back" is 8276.23 = 3131.1 + 4777.75 (the two pending orders)
    # + 367.38 (the watch), the gold plan's own calculate expression; no tool returns that sum.
    r = results["retail-16"]
    assert r.required == ["calculate", "find_user_id_by_name_zip", "get_order_details", "get_user_details"]
    missing = probe.missing("retail-16", without(RETAIL_ALL, "calculate"))
    assert [(m["need"], m["value"]) for m in missing] == [("communicate", "8276.23")]


def test_retail_33_refund_total_is_recovered_as_the_office_items_sum(results):
    # The office items of #W1845024 are the Office Chair 511.24, Headphones 346.97 and Mechanical
    # Keyboard 235.13 (the hiking items stay): 1093.34, which the gold plan communicates without a
    # calculate call. The recovered expression is exactly that sum.
    r = results["retail-33"]
    assert r.expressions == ["511.24 + 346.97 + 235.13"]
    assert "calculate" in r.required


def test_airline_24_destination_named_as_a_region_needs_list_all_airports(results):
    # "cheapest direct flight round trip from New York (either EWR or JFK) to anywhere West Coast":
    # the text names JFK and EWR but no destination airport; SEA (HAT069 out, HAT276 back) is only
    # reached by searching from JFK to airports the agent lists with list_all_airports.
    r = results["airline-24"]
    assert "list_all_airports" in r.required
    assert all("list_all_airports" in m for m in r.minimal)
    assert not r.sufficient(without(AIRLINE_ALL, "list_all_airports"))


def test_airline_9_cancel_needs_the_reservation_checked_though_the_gold_never_reads_it(results):
    # The user gives NQNU5R; the gold plan cancels it without reading it (annotated G_x: only
    # search_direct_flight). The policy says the API does not check the cancellation rules, so the
    # agent must read the reservation first.
    r = results["airline-9"]
    assert r.annotated == ["search_direct_flight"]
    assert r.required == ["get_reservation_details"]
    assert [(m["need"], m["value"]) for m in r.missing_annotated] == [("look_up", "NQNU5R")]


def test_airline_36_refusal_rests_on_the_reservation(results):
    # A date change of basic-economy reservation EUJUY6 (flown in part on May 14): the gold plan only
    # reads the reservation and the right outcome is a refusal, which rests on that record.
    r = results["airline-36"]
    assert r.required == ["get_reservation_details"]
    assert not r.sufficient([])


def test_airline_12_bag_update_needs_the_profile_for_the_membership(results):
    # Adding 2 bags to YAX4DR "using your Gold membership": the free allowance depends on the
    # membership in chen_lee_6825's profile, which the gold plan never reads.
    r = results["airline-12"]
    assert r.required == ["get_reservation_details", "get_user_details"]
    assert ("look_up", "chen_lee_6825") in {(m["need"], m["value"]) for m in r.missing_annotated}
