"""Recovered arithmetic (camdf.sufficiency.arithmetic.find_expression) on tiny hand-made groups."""

from camdf.sufficiency.arithmetic import find_expression


def test_sum_within_one_record_is_found():
    assert find_expression("1093.34", [["1", "2"], ["500.5", "592.84", "10"]]) == "592.84 + 500.5"


def test_difference_magnitude_matches():
    # A price difference of -17.99 is communicated as 17.99.
    assert find_expression("17.99", [["135.24", "153.23"]]) == "135.24 - 153.23"


def test_four_terms_with_signs():
    assert find_expression("41.92", [["155.33", "147.05", "268.77", "235.13"]]) == (
        "268.77 + 155.33 - 235.13 - 147.05"
    )


def test_fewest_terms_win_and_sums_before_differences():
    assert find_expression("25", [["10.5", "14.5", "40", "15"]]) == "14.5 + 10.5"
    assert find_expression("30", [["40", "10", "11", "19"]]) == "19 + 11"


def test_repeated_values_are_separate_terms_across_records():
    # Two bookings of 621 and a top-up of 44 (airline-23's 1286).
    assert find_expression("1286", [["500", "198"], ["621"], ["621", "44"]]) == "621 + 621 + 44"


def test_small_counts_are_not_operands_and_none_when_absent():
    assert find_expression("13", [["3", "10", "11", "2.5", "0.5"]]) == "11 + 2.5 - 0.5"
    assert find_expression("99.99", [["1.5", "2.5"]]) is None
