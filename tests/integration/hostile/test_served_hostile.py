"""Hostile bodies and headers to the served stopper (`mlflow models serve`): a 4xx with one line naming what is
wrong (the field, the content type, the size limit), never a 500, a stack trace or a server path.

The server is the session's ``served`` (tests/integration/conftest.py: the model the train stage logs).
"""

import http.client
import json
import re
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from camdf.runtime.http_guard import MAX_BODY_BYTES

#: A file system path of two segments or more (``/tmp/x``, ``/work/.../site-packages``): none may reach a client.
_PATH = re.compile(r"(?<![\w./:])/[\w.-]+/[\w./-]+")


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
    # The champion is whichever candidate the train stage picks: a risk rule refuses the value, any other the dial.
    ("alpha-two", lambda g: {"dataframe_records": [g], "params": {"alpha": 2.0}}, 400, ["alpha: "]),
    ("alpha-zero", lambda g: {"dataframe_records": [g], "params": {"alpha": 0.0}}, 400, ["alpha: "]),
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
    assert not _PATH.search(text), text[:2000]
    if status == 400:
        message = json.loads(text)["message"]
        for phrase in phrases:
            assert phrase in message, message
        if message.startswith("alpha: "):  # the value refused by a risk rule, the dial by any other
            assert "must be a number in (0, 1)" in message or "has a target miss rate" in message, message
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
    assert pred["exposed"] and set(pred["exposed"]) <= set(pred["ranked"])
    if pred["depth"] is not None:  # a prefix rule; a set rule's depth is null
        assert pred["exposed"] == pred["ranked"][: pred["depth"]]


def _send(url: str, body, headers: dict, chunked: bool = False) -> tuple[int, str, float]:
    """POST ``body`` to ``/invocations`` with exactly ``headers`` (http.client adds none but Host, and
    Content-Length for a bytes body unless ``chunked``); the status, the text and the seconds it took.

    ``body=None`` with a Content-Length header sends the headers alone: the server must answer from them.
    """
    host = urlsplit(url)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    start = time.time()
    try:
        conn.putrequest("POST", "/invocations", skip_accept_encoding=True)
        for key, value in headers.items():
            conn.putheader(key, value)
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        elif body is not None and "Content-Length" not in headers:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        if chunked:
            step = 64 * 1024
            try:
                for i in range(0, len(body), step):
                    part = body[i:i + step]
                    conn.send(b"%x\r\n%s\r\n" % (len(part), part))
                conn.send(b"0\r\n\r\n")
            except OSError:  # the server answered and closed before the whole body was sent
                pass
        elif body is not None:
            conn.send(body)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace"), time.time() - start
    finally:
        conn.close()


def _csv(good) -> bytes:
    return ("tools,scores\n" + "".join(f"{t['name'] if 'name' in t else t['function']['name']},1.0\n"
                                        for t in good["tools"])).encode()


def _json(good) -> bytes:
    return json.dumps({"dataframe_records": [good]}).encode()


JSON = {"Content-Type": "application/json"}

# (id, body from the good request (None: headers alone), headers, chunked, HTTP status, phrases of the message)
HEADERS = [
    ("text-csv", _csv, {"Content-Type": "text/csv"}, False, 415, ["Content-Type", "text/csv", "application/json"]),
    ("no-content-type", _json, {}, False, 415, ["Content-Type: missing", "application/json"]),
    ("form-urlencoded", _json, {"Content-Type": "application/x-www-form-urlencoded"}, False, 415,
     ["Content-Type", "x-www-form-urlencoded"]),
    ("parquet", lambda g: b"PAR1", {"Content-Type": "application/vnd.apache.parquet"}, False, 415,
     ["Content-Type", "parquet"]),
    ("octet-stream", _json, {"Content-Type": "application/octet-stream"}, False, 415, ["Content-Type"]),
    ("json-latin1", _json, {"Content-Type": "application/json; charset=latin-1"}, False, 415,
     ["Content-Type", "latin-1", "UTF-8"]),
    ("json-unknown-parameter", _json, {"Content-Type": "application/json; format=pandas-split"}, False, 415,
     ["Content-Type", "format=pandas-split"]),
    ("21MB-declared", None, {**JSON, "Content-Length": str(21 * 2**20)}, False, 413,
     [f"{21 * 2**20} bytes exceeds the limit of {MAX_BODY_BYTES} bytes"]),
    ("over-limit-sent", lambda g: b" " * (MAX_BODY_BYTES + 1), JSON, False, 413,
     [f"{MAX_BODY_BYTES + 1} bytes exceeds the limit of {MAX_BODY_BYTES} bytes"]),
    ("over-limit-chunked", lambda g: b" " * (MAX_BODY_BYTES + 1), JSON, True, 413,
     [f"more than the limit of {MAX_BODY_BYTES} bytes"]),
]


@pytest.mark.parametrize("make,headers,chunked,status,phrases", [h[1:] for h in HEADERS], ids=[h[0] for h in HEADERS])
def test_hostile_header_gets_a_4xx_line_naming_it(make, headers, chunked, status, phrases, served, good):
    body = None if make is None else make(good)
    got, text, seconds = _send(served, body, headers, chunked)
    assert got == status, (got, text[:2000])
    assert "Traceback" not in text and "stack_trace" not in text, text[:2000]
    assert not _PATH.search(text), text[:2000]
    assert "\n" not in text.strip(), text[:2000]
    error = json.loads(text)
    message = error["message"]
    assert error["error_code"] and "\n" not in message, error
    for phrase in phrases:
        assert phrase in message, message
    # Refused from the headers (or the first bytes past the limit), before anything is parsed.
    assert seconds < 10, seconds


def test_a_body_under_the_limit_is_decided(served, good):
    """A request padded to just under the limit (whitespace JSON allows) is read, parsed and decided."""
    body = _json(good)
    got, text, _ = _send(served, body + b" " * (MAX_BODY_BYTES - len(body)), JSON)
    assert got == 200, text[:2000]
    assert json.loads(text)["predictions"][0]["exposed"]


def _as_ints(good) -> dict:
    """``good`` with integer scores (its ranking, best first) and integer costs, as a client may send them."""
    n = len(good["tools"])
    return {**good, "scores": [n - i for i in range(n)], "costs": [1 + i % 3 for i in range(n)]}


def _as_floats(request) -> dict:
    return {**request, "scores": [float(v) for v in request["scores"]], "costs": [float(v) for v in request["costs"]]}


FORMATS = {
    "dataframe_records": lambda r: {"dataframe_records": [r]},
    "dataframe_split": lambda r: {"dataframe_split": {"columns": list(r), "data": [list(r.values())]}},
    "inputs": lambda r: {"inputs": [r]},
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_integer_scores_and_costs_decide_as_floats(fmt, served, good):
    """``[2, 1]`` is taken as ``[2.0, 1.0]`` (as `camdf select` takes it), in every input format."""
    ints = _as_ints(good)
    got_int, text_int = _post(served, FORMATS[fmt](ints))
    got_float, text_float = _post(served, FORMATS[fmt](_as_floats(ints)))
    assert (got_int, got_float) == (200, 200), (text_int[:2000], text_float[:2000])
    assert json.loads(text_int) == json.loads(text_float)
    assert json.loads(text_int)["predictions"][0]["ranked"][0] == json.loads(text_float)["predictions"][0]["ranked"][0]


def test_an_integer_beyond_a_float_is_refused_as_not_finite(served, good):
    ints = _as_ints(good)
    body = json.dumps({"dataframe_records": [ints]}).encode().replace(b'"scores": [%d' % ints["scores"][0],
                                                                      b'"scores": [1' + b"0" * 400, 1)
    got, text = _post(served, body)
    assert got == 400, text[:2000]
    assert "scores[0]: must be finite" in json.loads(text)["message"], text[:2000]
