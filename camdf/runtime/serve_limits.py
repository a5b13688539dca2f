"""The served model's bounds: how many requests it takes at once, and how long a request body may take to arrive.

MLflow's scoring server decides each request in a worker thread (``asyncio.to_thread``), off its event loop;
the door (:func:`camdf.runtime.http_guard.guard_scoring_server`) adds two bounds in front of it, both set by
environment variables of the ``mlflow models serve`` process and read once when the model loads:

- :data:`INFLIGHT_ENV` (default :data:`DEFAULT_INFLIGHT`): the requests admitted at once, from the first
  byte of the body to the answer. One more is answered at once with a 503 (one JSON line, ``Retry-After``),
  never queued without end; so at most that many bodies of at most 4 MiB are held in memory.
- :data:`READ_TIMEOUT_ENV` (default :data:`DEFAULT_READ_TIMEOUT` seconds): the whole body must arrive within
  that time after the headers; a client that stalls or trickles gets a 408 (one JSON line) and its connection
  is closed, so it holds an admission slot for at most that long.

A value that is not a positive number (an integer for the first) stops the server at load with one line
naming the variable.
"""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass
from typing import Awaitable, Mapping, TypeVar

INFLIGHT_ENV = "CAMDF_SERVE_MAX_INFLIGHT"
READ_TIMEOUT_ENV = "CAMDF_SERVE_READ_TIMEOUT"
#: The audited load (32 concurrent clients) is admitted whole; 32 bodies of 4 MiB are 128 MiB at most.
DEFAULT_INFLIGHT = 32
#: A 4 MiB body at 2 Mbit/s arrives in about 17 s.
DEFAULT_READ_TIMEOUT = 30.0
#: Bounds on the settings themselves (a typo of 10**6 is refused, not taken).
MAX_INFLIGHT = 4096
MAX_READ_TIMEOUT = 3600.0

T = TypeVar("T")


@dataclass(frozen=True)
class ServeLimits:
    """The two bounds of the served model (see the module docstring)."""

    max_inflight: int = DEFAULT_INFLIGHT
    read_timeout: float = DEFAULT_READ_TIMEOUT


def serve_limits(environ: Mapping[str, str] | None = None) -> ServeLimits:
    """The bounds set in ``environ`` (default: the process environment); ValueError naming the variable."""
    env = os.environ if environ is None else environ
    inflight, timeout = env.get(INFLIGHT_ENV, "").strip(), env.get(READ_TIMEOUT_ENV, "").strip()
    limits = ServeLimits()
    if inflight:
        if not inflight.isdigit() or not 1 <= int(inflight) <= MAX_INFLIGHT:
            raise ValueError(f"{INFLIGHT_ENV}={inflight[:40]!r}: expected an integer in [1, {MAX_INFLIGHT}] "
                             f"(requests admitted at once; default {DEFAULT_INFLIGHT})")
        limits = ServeLimits(int(inflight), limits.read_timeout)
    if timeout:
        try:
            seconds = float(timeout)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and 0 < seconds <= MAX_READ_TIMEOUT):
            raise ValueError(f"{READ_TIMEOUT_ENV}={timeout[:40]!r}: expected seconds in (0, {MAX_READ_TIMEOUT:g}] "
                             f"(the time a request body may take to arrive; default {DEFAULT_READ_TIMEOUT:g})")
        limits = ServeLimits(limits.max_inflight, seconds)
    return limits


class Admission:
    """A count of the requests in flight, at most ``limit``; used from the event loop only (no lock needed)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.inflight = 0

    def enter(self) -> bool:
        """Admit one more request (True) or refuse it (False: ``limit`` are in flight)."""
        if self.inflight >= self.limit:
            return False
        self.inflight += 1
        return True

    def leave(self) -> None:
        self.inflight -= 1


class BodyTimeout(Exception):
    """The request body did not arrive within the read timeout."""


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``awaitable``'s result, or :class:`BodyTimeout` once ``seconds`` have passed (the read is cancelled)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise BodyTimeout from None
