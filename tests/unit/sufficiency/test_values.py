"""Normalisation rules and value extraction (camdf.sufficiency.values), exact values on tiny inputs."""

import pytest

from camdf.sufficiency.values import (
    canonical_number,
    flatten,
    key,
    number_leaves,
    surface,
    text_surfaces,
    word_pattern,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("$1,093.50", "1093.5"),
        ("-17.99", "17.99"),
        ("60.0", "60"),
        ("481.50", "481.5"),
        ("19122", "19122"),
        ("02134", "02134"),  # plain digits stay verbatim: zip codes keep their leading zero
        ("abc", None),
    ],
)
def test_canonical_number(raw, expected):
    assert canonical_number(raw) == expected


def test_surface_and_key_rules():
    assert surface("  #W2378156 ") == "W2378156"
    assert key("#W2378156") == key("w2378156") == "w2378156"
    assert surface("943   Maple\n Drive") == "943 Maple Drive"
    assert key("Mastercard") == key("mastercard")
    assert surface(481.5) == surface("481.50") == "481.5"
    assert surface(1000) == "1000"


def test_text_surfaces_finds_ids_emails_numbers_and_strips_punctuation():
    text = "You received order #W2378156. Email: mia.garcia2723@example.com, budget $1,131 or 60.00!"
    got = text_surfaces(text)
    assert {"W2378156", "mia.garcia2723@example.com", "1131", "60"} <= got
    assert "W2378156." not in got


def test_flatten_leaves_keys_sizes_true_counts_and_names():
    out = {
        "name": {"first_name": "Mei", "last_name": "Kovacs"},
        "variants": {
            "1": {"item_id": "1", "available": True, "price": 10.5},
            "2": {"item_id": "2", "available": False, "price": 11},
            "3": {"item_id": "3", "available": True, "price": 12},
        },
        "status": "pending",
    }
    got = set(flatten(out))
    assert {"Mei Kovacs", "pending", "10.5", "11", "12", "variants", "item_id"} <= got
    assert {"3", "2"} <= got  # three variants, two of them available
    # A record that is not a collection does not announce its field count.
    assert "4" not in set(flatten({"a": "x", "b": "y", "c": "z", "d": "w"}))


def test_number_leaves_keeps_repeats_and_skips_strings():
    assert number_leaves({"p": [{"amount": 621}, {"amount": 621}], "id": "12345", "ok": True}) == ["621", "621"]


def test_word_pattern_matches_whole_words_only():
    assert word_pattern("camera").search("action camera\nt-shirt")
    assert not word_pattern("camera").search("cameras")
    assert word_pattern("20 hours").search("battery life 20 hours")
