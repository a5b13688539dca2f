"""The served model's bounds over a real socket (`mlflow models serve`, :mod:`camdf.runtime.serve_limits`).

A server of the model the train stage logs is started with small bounds (2 requests in flight, a 3 s read
timeout): a client that stalls or trickles its body is answered 408 and dropped within the timeout; a third
request while two are in flight gets a 503 at once (and ``/ping`` still answers: nothing holds the event
loop); after all of it the server's answers are those of a server with the default bounds.
"""

from __future__ import annotations

import json
import socket
import urllib.request
import time
from urllib.parse import urlsplit

import pytest

from camdf.runtime.http_guard import MAX_BODY_BYTES
from camdf.runtime.serve_limits import INFLIGHT_ENV, READ_TIMEOUT_ENV, serve_limits

from ..conftest import serve_model

INFLIGHT, READ_TIMEOUT = 2, 3.0


@pytest.fixture(scope="module")
def bounded(trained):
    """The URL of the trained model served with :data:`INFLIGHT` and :data:`READ_TIMEOUT`."""
    yield from serve_model(trained, **{INFLIGHT_ENV: str(INFLIGHT), READ_TIMEOUT_ENV: str(READ_TIMEOUT)})


@pytest.fixture(scope="module")
def body(trained) -> bytes:
    return json.dumps({"dataframe_records": [trained["requests"][0]]}).encode()


def _open(url: str, length: int, sent: bytes = b"") -> socket.socket:
    """A connection that has sent a POST's headers (declaring ``length`` body bytes) and ``sent`` of its body."""
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=30)
    sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (length, sent))
    return sock


def _answer(sock: socket.socket, closing: bool = True) -> tuple[int, dict, bytes, bool]:
    """Status, headers, body of the response on ``sock``, and (with ``closing``) whether the server then closed
    the connection within 5 s."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", 0))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    if not closing:
        return int(lines[0].split()[1]), headers, rest[:length], False
    try:
        sock.settimeout(5)
        closed = sock.recv(1) == b""
    except (TimeoutError, socket.timeout):
        closed = False
    except ConnectionResetError:  # closed with the client's unread bytes still queued: the kernel sends a reset
        closed = True
    return int(lines[0].split()[1]), headers, rest[:length], closed


def _post(url: str, data: bytes) -> tuple[int, dict, bytes]:
    sock = _open(url, len(data), data)
    try:
        status, headers, text, _ = _answer(sock, closing=False)
        return status, headers, text
    finally:
        sock.close()


def _one_line(text: bytes) -> str:
    assert b"\n" not in text.strip() and b"Traceback" not in text, text[:2000]
    return json.loads(text)["message"]


def test_the_settings_are_checked():
    assert serve_limits({}) == serve_limits({INFLIGHT_ENV: " ", READ_TIMEOUT_ENV: ""})
    assert serve_limits({INFLIGHT_ENV: "7", READ_TIMEOUT_ENV: "0.5"}).max_inflight == 7
    for env, name in [({INFLIGHT_ENV: "0"}, INFLIGHT_ENV), ({INFLIGHT_ENV: "2.5"}, INFLIGHT_ENV),
                      ({INFLIGHT_ENV: "99999"}, INFLIGHT_ENV), ({READ_TIMEOUT_ENV: "nan"}, READ_TIMEOUT_ENV),
                      ({READ_TIMEOUT_ENV: "-1"}, READ_TIMEOUT_ENV), ({READ_TIMEOUT_ENV: "inf"}, READ_TIMEOUT_ENV),
                      ({READ_TIMEOUT_ENV: "ten"}, READ_TIMEOUT_ENV)]:
        with pytest.raises(ValueError, match=f"^{name}=.*expected"):
            serve_limits(env)


@pytest.mark.parametrize("how", ["stalled", "trickling"])
def test_a_slow_client_is_answered_408_and_dropped_within_the_timeout(how, bounded, body):
    start = time.monotonic()
    sock = _open(bounded, len(body), body[:10])
    try:
        if how == "trickling":  # a byte every 0.5 s: never idle for long, still bounded as a whole
            sock.settimeout(0.5)
            sent = 10
            while True:
                try:
                    if sock.recv(1, socket.MSG_PEEK):
                        break
                except (TimeoutError, socket.timeout):
                    sock.sendall(body[sent:sent + 1])
                    sent += 1
            sock.settimeout(30)
        status, headers, text, closed = _answer(sock)
    finally:
        sock.close()
    seconds = time.monotonic() - start
    assert status == 408 and closed, (status, headers, text)
    assert "request body: not received within 3 s" in _one_line(text)
    assert READ_TIMEOUT - 0.5 < seconds < READ_TIMEOUT + 5, seconds


def test_a_request_over_the_bound_gets_503_at_once_and_the_answers_are_unchanged(bounded, served, body):
    before = _post(bounded, body)
    assert before[0] == 200, before
    held = [_open(bounded, len(body), body[:10]) for _ in range(INFLIGHT)]  # each holds a slot until its timeout
    try:
        time.sleep(0.5)  # the server has read their headers and admitted them
        start = time.monotonic()
        status, headers, text = _post(bounded, body)
        assert time.monotonic() - start < READ_TIMEOUT - 0.5  # refused at once, not after the held ones went
        assert status == 503 and headers.get("retry-after") == "1", (status, headers, text)
        assert f"server busy: {INFLIGHT} requests in flight" in _one_line(text)
        assert _post(bounded, b"")[0] == 503  # whatever the body: the bound comes first
        with urllib.request.urlopen(f"{bounded}/ping", timeout=5) as resp:  # the event loop is not held
            assert resp.status == 200
        for sock in held:
            assert _answer(sock)[0] == 408
    finally:
        for sock in held:
            sock.close()
    after = _post(bounded, body)
    default = _post(served, body)  # the session's server, default bounds
    assert after[0] == default[0] == 200
    assert json.loads(after[2]) == json.loads(before[2]) == json.loads(default[2])

