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

A value that is not a positive number (an integer for the first) stops the server at load: in the scoring
server's own process (MLflow's ``uvicorn`` child, which knows its model by :data:`SERVER_MODEL_ENV`) with one
line on stderr naming the variable, the value and what is expected, and exit status 2, not a traceback;
anywhere else (a model loaded in Python) with that line as a ValueError.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Mapping

INFLIGHT_ENV = "CAMDF_SERVE_MAX_INFLIGHT"
READ_TIMEOUT_ENV = "CAMDF_SERVE_READ_TIMEOUT"
#: Set by ``mlflow models serve`` for its scoring server process only (``mlflow.pyfunc.scoring_server``).
SERVER_MODEL_ENV = "__pyfunc_model_path__"
#: The exit status of a server stopped by a bad setting (a usage error, as the CLI's).
BAD_SETTING = 2
#: The audited load (32 concurrent clients) is admitted whole; 32 bodies of 4 MiB are 128 MiB at most.
DEFAULT_INFLIGHT = 32
#: A 4 MiB body at 2 Mbit/s arrives in about 17 s.
DEFAULT_READ_TIMEOUT = 30.0
#: Bounds on the settings themselves (a typo of 10**6 is refused, not taken).
MAX_INFLIGHT = 4096
MAX_READ_TIMEOUT = 3600.0


@dataclass(frozen=True)
class ServeLimits:
    """The two bounds of the served model (see the module docstring)."""

    max_inflight: int = DEFAULT_INFLIGHT
    read_timeout: float = DEFAULT_READ_TIMEOUT


def serve_limits(environ: Mapping[str, str] | None = None) -> ServeLimits:
    """The bounds set in ``environ`` (default: the process environment); ValueError naming the variable.

    Read from the environment of MLflow's scoring server process, a bad value ends that process: one line
    on stderr, exit status :data:`BAD_SETTING` (a traceback there would be the server's only answer).
    """
    if environ is None and os.environ.get(SERVER_MODEL_ENV):
        try:
            return _limits(os.environ)
        except ValueError as err:
            print(f"camdf served model: {err}", file=sys.stderr, flush=True)
            raise SystemExit(BAD_SETTING) from None
    return _limits(os.environ if environ is None else environ)


def _limits(env: Mapping[str, str]) -> ServeLimits:
    """:func:`serve_limits` of ``env``; ValueError naming the variable, its value and what is expected."""
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
