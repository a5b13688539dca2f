"""The owner of every wait (:mod:`camdf.common.waits`): each primitive against what would hold it forever.

A tarpit (a socket that accepts and never answers), a refused port, a FIFO nobody writes, a device, a hung child, a
coroutine that never ends: each returns or raises within its bound plus a margin for a loaded machine.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import sys
import threading
import time

import anyio
import pytest

from camdf.common import waits

#: Seconds past a bound a loaded 2-core machine may take to notice it.
SLACK = 3.0


class Tarpit:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url, self.held = f"http://127.0.0.1:{self.sock.getsockname()[1]}/", []
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


def _timed(fn):
    start = time.monotonic()
    try:
        return fn(), time.monotonic() - start
    except Exception as err:  # noqa: BLE001 - the test reads what was raised
        return err, time.monotonic() - start


def _refused_url() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


@pytest.fixture
def tarpit():
    pit = Tarpit()
    yield pit
    pit.close()


# --- network --------------------------------------------------------------------------------------------------

def test_http_get_gives_up_on_a_tarpit(tarpit):
    got, took = _timed(lambda: waits.http_get(tarpit.url, 0.5, "the tarpit"))
    assert isinstance(got, Exception) and not isinstance(got, AssertionError), got
    assert took < 2.5 * 0.5 + SLACK, took


def test_http_get_on_a_refused_port_fails_at_once():
    got, took = _timed(lambda: waits.http_get(_refused_url(), 2.0, "nothing"))
    assert isinstance(got, Exception) and "refused" in repr(got).lower(), repr(got)
    assert took < 2.0 + SLACK, took


def test_http_waits_bound_mlflow_unless_the_environment_says(monkeypatch):
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
    waits.http_waits()
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == f"{waits.HTTP_TIMEOUT:g}"
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "3"  # the user's setting stays


# --- a call, a coroutine, an anyio scope ----------------------------------------------------------------------

def test_call_returns_raises_or_expires():
    assert waits.call(lambda: 42, 1.0, "x") == 42
    with pytest.raises(KeyError):
        waits.call(lambda: {}["k"], 1.0, "x")
    never = threading.Event()
    got, took = _timed(lambda: waits.call(never.wait, 0.3, "an event nobody sets"))
    assert isinstance(got, waits.WaitExpired) and str(got) == "an event nobody sets: no answer within 0.3 s"
    assert took < 0.3 + SLACK


def test_within_cancels_what_never_ends():
    async def forever():
        await asyncio.Event().wait()

    got, took = _timed(lambda: asyncio.run(waits.within(forever(), 0.2, "a body")))
    assert isinstance(got, waits.WaitExpired) and got.what == "a body" and took < 0.2 + SLACK


def test_deadline_ends_an_anyio_wait():
    async def main():
        with waits.deadline(0.2):
            await anyio.Event().wait()

    got, took = _timed(lambda: anyio.run(main))
    assert isinstance(got, TimeoutError) and took < 0.2 + SLACK


# --- a child --------------------------------------------------------------------------------------------------

def test_run_kills_a_hung_child():
    got, took = _timed(lambda: waits.run([sys.executable, "-c", "import time; time.sleep(60)"], 0.5, "a child"))
    assert isinstance(got, waits.WaitExpired) and took < 0.5 + SLACK


def test_run_returns_a_child_that_ends():
    done = waits.run([sys.executable, "-c", "print('ok')"], 60, "a child", capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok"


# --- reads ----------------------------------------------------------------------------------------------------

def _fifo(p):
    os.mkfifo(p)


def _big(p):
    p.write_bytes(b"x" * 101)


def _folder(p):
    p.mkdir()


def _dangling(p):
    p.symlink_to(p.parent / "gone")


def _device(p):
    p.symlink_to("/dev/zero")  # endless: a read without a bound never ends


READS = {"fifo": (_fifo, "not a regular file"), "device": (_device, "not a regular file"),
         "too large": (_big, "file of 101 bytes (expected at most 100 bytes)"),
         "folder": (_folder, "a folder, not a file"), "broken link": (_dangling, "broken symbolic link to `"),
         "missing": (lambda p: None, "missing file")}


@pytest.mark.parametrize("kind", list(READS))
def test_read_regular_refuses_without_waiting(kind, tmp_path):
    path = tmp_path / "x.json"
    make, phrase = READS[kind]
    make(path)
    got, took = _timed(lambda: waits.call(lambda: waits.read_regular(path, 100, "a small file", "x.json"), 10, "read"))
    assert isinstance(got, waits.NotRegular), got
    assert str(got).startswith("x.json:1: ") and phrase in str(got), str(got)
    assert took < SLACK


def test_read_regular_reads_a_regular_file(tmp_path):
    (tmp_path / "ok").write_bytes(b"x" * 100)
    assert waits.read_regular(tmp_path / "ok", 100, "a small file") == b"x" * 100


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_open_sqlite_refuses_what_is_not_a_store_file(kind, tmp_path):
    path = tmp_path / "mlflow.db"
    READS[kind][0](path)
    got, took = _timed(lambda: waits.call(lambda: waits.open_sqlite(path), 10, "open"))
    assert isinstance(got, sqlite3.OperationalError) and took < SLACK, got


def test_open_sqlite_opens_a_store_read_only(tmp_path):
    with waits.open_sqlite(tmp_path / "s.db") as con:
        con.execute("create table t (x)")
    con.close()
    ro = waits.open_sqlite(tmp_path / "s.db", read_only=True)
    with pytest.raises(sqlite3.OperationalError):
        ro.execute("insert into t values (1)")
    ro.close()


# --- fan-out --------------------------------------------------------------------------------------------------

def test_cores_and_memory_are_the_machines():
    assert 1 <= waits.cores() <= (os.cpu_count() or 1)
    assert waits.memory_bytes() > 2**27
