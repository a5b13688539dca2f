"""Every wait and every fan-out of camdf, each with its bound: the one module that may block.

What can hold a camdf process without end goes through a function here, with a bound named here:

- **a network peer**: MLflow's HTTP client (:func:`http_waits`: a timeout per call, no retries, unless the
  environment sets them), a one-off call that can stall anywhere, name resolution included (:func:`call`: a
  daemon thread, given up after its bound), an awaited read or an upstream's answer (:func:`within` for
  asyncio, :func:`deadline` for anyio);
- **a read of what is not a regular file**: :func:`read_regular` opens without blocking (a FIFO's open would
  wait for a writer), checks the open file (no window for a swap between a check and the open) and reads at
  most its bound; :func:`open_sqlite` opens a store only when it is a regular file, with a bounded lock wait;
- **a child process**: :func:`run`, always with a timeout, the child killed at the bound;
- **a thread at exit** (the trace exporter's flush): :func:`call` too;
- **fan-out**: :func:`cores` is what a launcher's workers and a model's threads are capped by, and
  :func:`memory_bytes` what the jobs' memory shares divide (``camdf.pipeline.checks.bounds`` applies both to a config;
  config composition is bounded there, before Hydra reads a file).

A layout test (``tests/unit/layout/test_waits_owner.py``) refuses the blocking primitives anywhere else in
``camdf/``: ``subprocess``, ``asyncio.wait_for``, ``anyio.fail_after``, ``requests``, ``urllib.request``,
``socket.create_connection``, ``sqlite3.connect``, ``os.cpu_count``, and a ``join()`` or ``wait()`` with no
bound. The hostile family ``tests/integration/hostile/test_waits_hostile.py`` tries each owner against a
tarpit, a FIFO, a silent server, a hung child, an alias expansion and a huge ``n_jobs``.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")

#: Seconds MLflow's HTTP client waits to connect and for each answer, and its retries, unless the environment
#: sets ``MLFLOW_HTTP_REQUEST_TIMEOUT`` / ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``: MLflow's own defaults (120 s, 7
#: retries with back-off) hang a command for minutes on a server that stalls.
HTTP_TIMEOUT = 5.0
HTTP_RETRIES = 0
#: Seconds a tracking server's probe may take to connect, and then to answer (the whole probe: 2.5 times this).
PROBE = 3.0
#: Seconds a trace store's one-time check may take (decisions never wait on it again).
STORE_CHECK = 1.5
#: Seconds a SQLite store's lock is waited for.
SQLITE_LOCK = 5.0
#: Seconds the trace exporter may spend at exit on what is still queued.
EXIT_FLUSH = 5.0
#: Seconds an adapter waits for one page of an MCP server's tool list before it fails open (every tool, a warning).
TOOL_LIST = 10.0
#: Seconds for one ``git`` query of the checkout (a run's commit).
GIT = 10.0
#: Seconds for a child that builds (the camdf wheel a logged model carries).
BUILD = 300.0
#: Seconds for a child that recomputes the Results from the store.
RECOMPUTE = 1800.0


class WaitExpired(TimeoutError):
    """A wait reached its bound; ``str()`` is one line: what was waited for and the bound."""

    def __init__(self, what: str, seconds: float):
        self.what, self.seconds = what, seconds
        super().__init__(f"{what}: no answer within {seconds:g} s")


class NotRegular(ValueError):
    """A path that :func:`read_regular` will not read; ``str()`` is ``<name>:1: <why> (expected ...)``."""


def http_waits() -> None:
    """Bound every MLflow HTTP call of this process (:data:`HTTP_TIMEOUT`, :data:`HTTP_RETRIES`) unless the
    environment already says; idempotent."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", f"{HTTP_TIMEOUT:g}")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(HTTP_RETRIES))


def call(fn: Callable[[], T], seconds: float, what: str) -> T:
    """``fn()`` in a daemon thread, its result or its exception; :class:`WaitExpired` after ``seconds`` (the
    thread is left to end on its own; it holds nothing the caller waits for)."""
    got: dict[str, Any] = {}

    def target() -> None:
        try:
            got["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the caller as it was raised
            got["error"] = err

    thread = threading.Thread(target=target, name=f"camdf-wait {what}"[:60], daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise WaitExpired(what, seconds)
    if "error" in got:
        raise got["error"]
    return got["value"]


def http_get(url: str, seconds: float, what: str, **kwargs: Any):
    """``requests.get(url, timeout=seconds, **kwargs)`` with the whole request, name resolution included, bounded
    by :func:`call` at 2.5 x ``seconds`` (requests bounds connecting and each read, not the lookup)."""
    import requests

    return call(lambda: requests.get(url, timeout=seconds, **kwargs), 2.5 * seconds, what)


async def within(awaitable: Awaitable[T], seconds: float, what: str) -> T:
    """``awaitable``'s result (asyncio), or :class:`WaitExpired` once ``seconds`` have passed (it is cancelled)."""
    import asyncio

    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise WaitExpired(what, seconds) from None


def deadline(seconds: float):
    """A scope (anyio) cancelled after ``seconds``, raising ``TimeoutError`` at its end: an MCP session's calls."""
    import anyio

    return anyio.fail_after(seconds)


def run(argv: list[str], seconds: float, what: str, **kwargs: Any):
    """``subprocess.run(argv, timeout=seconds, **kwargs)``: the child is killed at the bound and
    :class:`WaitExpired` raised; other outcomes as ``subprocess.run`` returns or raises them."""
    import subprocess

    try:
        return subprocess.run(argv, timeout=seconds, **kwargs)  # noqa: PLW1510 - callers read returncode
    except subprocess.TimeoutExpired:
        raise WaitExpired(what, seconds) from None


def read_regular(path: str | os.PathLike, limit: int, expected: str, name: str | None = None) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; :class:`NotRegular` otherwise, as
    ``<name>:1: <why> (expected <expected>)`` (a missing file, a broken link, a folder, a FIFO or device, a file
    too large or unreadable). A FIFO or device is never waited on: the open does not block and the open file is
    what is checked, so a path swapped after a check cannot make the read block."""
    name = str(path) if name is None else name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            target = os.readlink(path)
            target = target if target.isprintable() else repr(target)[1:-1]
            raise NotRegular(f"{name}:1: broken symbolic link to `{target[:120]}` (expected {expected})") from None
        raise NotRegular(f"{name}:1: missing file (expected {expected})") from None
    except IsADirectoryError:
        raise NotRegular(f"{name}:1: a folder, not a file (expected {expected})") from None
    except OSError as err:  # unreadable, a link loop, a path through a file
        raise NotRegular(f"{name}:1: cannot read: {err.strerror} (expected {expected})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotRegular(f"{name}:1: a folder, not a file (expected {expected})")
        if not stat.S_ISREG(st.st_mode):  # a pipe or a device would block or never end
            raise NotRegular(f"{name}:1: not a regular file (expected {expected})")
        if st.st_size > limit:
            raise NotRegular(f"{name}:1: file of {st.st_size:,} bytes (expected at most {limit:,} bytes)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # the file object closes it
            data = fh.read(limit + 1)
    except OSError as err:
        raise NotRegular(f"{name}:1: cannot read: {err.strerror} (expected a file the reader may open)") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:  # grew after the check
        raise NotRegular(f"{name}:1: file of more than {limit:,} bytes (expected at most {limit:,} bytes)")
    return data


def open_sqlite(path: str | os.PathLike, read_only: bool = False):
    """A ``sqlite3`` connection to the store file ``path``, waiting at most :data:`SQLITE_LOCK` seconds for its
    lock; ``sqlite3.OperationalError`` when the path exists and is not a regular file (a FIFO named
    ``mlflow.db``) or cannot be opened. ``read_only`` opens it read-only (``mode=ro``)."""
    import sqlite3

    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise sqlite3.OperationalError(f"{path}: cannot read: {err.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise sqlite3.OperationalError(f"{path}: not a regular file (expected an SQLite store)")
    if read_only:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=SQLITE_LOCK)
    return sqlite3.connect(path, timeout=SQLITE_LOCK)


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else the machine's): the cap
    of a local launcher's workers and of a model's prediction threads."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def memory_bytes() -> int:
    """The machine's physical memory (bytes): what the jobs' memory shares divide."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
