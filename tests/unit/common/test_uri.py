"""camdf.common.uri.safe_uri: what may be shown of a text (a message, a run name, a traced query)."""

import pytest

from camdf.common.uri import HIDDEN, safe_uri

#: (text with a secret, the secret): each shape the redaction knows.
SECRETS = [
    ("connect to https://ana:hunter2-Pa55@db.example/orders", "hunter2-Pa55"),
    ("call https://api.example/v1/refund?api_key=sk-live-51HxQzA9", "sk-live-51HxQzA9"),
    ("my password is hunter2-Pa55, thanks", "hunter2-Pa55"),
    ("password: hunter2-Pa55", "hunter2-Pa55"),
    ('{"api_key": "abcd1234efgh5678"}', "abcd1234efgh5678"),
    ("Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("my token is tok-9f8e7d6c5b", "tok-9f8e7d6c5b"),
    ("client_secret=Zq8vLm2pRt6w", "Zq8vLm2pRt6w"),
    ("use sk-proj-Abc123def456GHI789jk for it", "sk-proj-Abc123def456GHI789jk"),
    ("key sk-ant-api03-Abcdefghijklmnop1234", "sk-ant-api03-Abcdefghijklmnop1234"),
    ("pushed with ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("AWS id AKIAIOSFODNN7EXAMPLE in the log", "AKIAIOSFODNN7EXAMPLE"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0"),
]

#: Prose that names a secret's word without holding one: kept as it is.
PLAIN = [
    "I want a refund for my order 1234",
    "password successfully changed yesterday",
    "password reset for order W123",
    "the token is short",
    "learn about sk-learn and scikit-learn tokenizers",
    "the secret ingredient is love",
    "get_order_status(order_id: str) -> dict",
]


@pytest.mark.parametrize("text, secret", SECRETS, ids=[s[0][:30] for s in SECRETS])
def test_every_known_shape_of_secret_is_hidden(text, secret):
    shown = safe_uri(text)
    assert secret not in shown and (HIDDEN in shown or "@" not in shown), shown


@pytest.mark.parametrize("text", PLAIN)
def test_prose_without_a_secret_is_kept(text):
    assert safe_uri(text) == text
