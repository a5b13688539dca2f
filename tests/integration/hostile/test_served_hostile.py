"""Hostile bodies to the served stopper (`mlflow models serve`): a 4xx with the field's own message, never a
500 or a stack trace.

The server is the session's ``served`` (tests/integration/conftest.py: the model the train stage logs).
"""

import json
import urllib.error
import urllib.request

import pytest



@pytest.fixture(scope="module")
def good(trained) -> dict:
    return trained["requests"][0]


def _post(url: str, body, content_type: str = "application/json") -> tuple[int, str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"{url}/invocations", data=data, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def _records(**fields):
    return lambda good: {"dataframe_records": [{**good, **fields}]}


def _raw(text: bytes):
    return lambda good: text


def _deep(n: int) -> bytes:
    return b'{"dataframe_records": [{"tools": ' + b"[" * n + b"]" * n + b"}]}"


def _tools(good, k=None):
    return good["tools"] if k is None else good["tools"][:k]


# (id, body from the good request, HTTP status, phrases the message must hold)
BODIES = [
    ("invalid-json", _raw(b'{"dataframe_records": ['), 400, ["request body: line 1 column", "invalid JSON"]),
    ("empty-body", _raw(b""), 400, ["request body: line 1 column 1", "invalid JSON"]),
    ("100k-deep", _raw(_deep(100_000)), 400, ["request body: line 1 column", "nested deeper than 100"]),
    ("101-deep", _raw(_deep(100)), 400, ["nested deeper than 100"]),
    ("5000-digit-number", _raw(b'{"dataframe_records": [{"scores": [' + b"9" * 5000 + b"]}]}"), 400,
     ["request body: line 1", "digits"]),
    ("not-utf8", _raw(b'{"dataframe_records": [{"query": "caf\xe9"}]}'), 400, ["request body", "not UTF-8"]),
    ("bom", _raw(b'\xef\xbb\xbf{"dataframe_records": []}'), 400, ["request body: line 1 column 1", "BOM"]),
    ("scores-too-short", _records(scores=[1.0]), 400, ["scores: length 1 does not match"]),
    ("costs-negative", lambda g: {"dataframe_records": [{**g, "costs": [-1.0] * len(g["tools"])}]}, 400,
     ["costs[0]: must be > 0"]),
    ("costs-zero", lambda g: {"dataframe_records": [{**g, "costs": [0.0] * len(g["tools"])}]}, 400,
     ["costs[0]: must be > 0"]),
    ("tools-empty", _records(tools=[]), 400, ["tools"]),
    ("tool-without-name", lambda g: {"dataframe_records": [{**g, "tools": [{"description": "x"}] + g["tools"][1:]}]},
     400, ["tools[0].name: must be a non-empty string"]),
    ("duplicate-names", lambda g: {"dataframe_records": [{**g, "tools": [g["tools"][0]] * 2,
                                                          "scores": [1.0, 0.5], "costs": [1.0, 1.0]}]},
     400, ["tools[1].name: duplicate tool name"]),
    ("scores-strings", lambda g: {"dataframe_records": [{**g, "scores": ["high"] * len(g["tools"])}]}, 400,
     ["scores"]),
    ("missing-tools-column", _raw(b'{"dataframe_records": [{"query": "x"}]}'), 400, ["missing inputs ['tools']"]),
    ("lam-negative", lambda g: {"dataframe_records": [g], "params": {"lam": -1.0}}, 400,
     ["lam: must be a finite number >= 0"]),
    ("alpha-two", lambda g: {"dataframe_records": [g], "params": {"alpha": 2.0}}, 400,
     ["alpha: must be a number in (0, 1)"]),
    ("alpha-zero", lambda g: {"dataframe_records": [g], "params": {"alpha": 0.0}}, 400,
     ["alpha: must be a number in (0, 1)"]),
    ("lam-a-word", lambda g: {"dataframe_records": [g], "params": {"lam": "high"}}, 400,
     ["lam", "Can not safely convert"]),
    ("a-list-body", _raw(b"[1, 2]"), 400, ["Received a list"]),
    ("records-not-a-list", _raw(b'{"dataframe_records": 7}'), 400, []),
    ("no-known-key", _raw(b'{"rows": []}'), 400, []),
    ("text-plain", lambda g: b"tools", 415, []),
]


SIGNATURE_CHECKS = {"missing inputs ['tools']", "lam"}


@pytest.mark.parametrize("make,status,phrases", [b[1:] for b in BODIES], ids=[b[0] for b in BODIES])
def test_hostile_body_gets_a_4xx_naming_the_field(make, status, phrases, served, good):
    url = served
    body = make(good)
    got, text = _post(url, body, "text/plain" if status == 415 else "application/json")
    assert got == status, (got, text[:2000])
    assert "Traceback" not in text and "stack_trace" not in text, text[:2000]
    assert len(text) < 2000, text[:2000]  # the body is not echoed back
    if status == 400:
        message = json.loads(text)["message"]
        for phrase in phrases:
            assert phrase in message, message
        # MLflow's own signature check (a missing column, a param of the wrong type) answers before the
        # model runs, under its "Failed to predict data" heading; every other refusal is the field's own line.
        if phrases and phrases[0] not in SIGNATURE_CHECKS:
            assert not message.startswith("Failed to predict data"), message


def test_the_server_still_decides_after_the_hostile_bodies(served, good):
    url = served
    for make, _, _ in [b[1:] for b in BODIES[:6]]:
        _post(url, make(good))
    status, text = _post(url, {"dataframe_records": [good]})
    assert status == 200, text
    pred = json.loads(text)["predictions"][0]
    assert pred["exposed"] == pred["ranked"][: pred["depth"]]
