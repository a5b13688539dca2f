"""The process's edges, before and after a command's own error boundary: Ctrl-C while it starts, a closed stdout.

A command (``python -m pipelines.<stage>``, ``camdf``) calls :func:`guard_start` first thing,
before its imports (a second or more): Ctrl-C then ends the process at once with one line and
exit 130, as nothing has been written yet. The command's boundary calls :func:`release_start`
when it is in place and handles Ctrl-C itself from there on (runs end KILLED, job folders are
removed). A reader that closes the pipe on standard output (``camdf select ... | head -c1``) is
:func:`closed_stdout`: one line on stderr and exit 141 (128 + SIGPIPE, what a shell reports for
a pipe's writer), never Python's "Exception ignored ... BrokenPipeError" at exit.

Kept free of heavy imports: it runs before numpy is imported (``pipelines`` pins BLAS first).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import NoReturn

#: Exit codes: Ctrl-C, and a standard output whose reader went away.
INTERRUPTED, BROKEN_PIPE = 130, 141


def _interrupted_at_start(signum, frame) -> None:  # noqa: ARG001  a signal handler's signature
    os.write(2, b"error: interrupted (Ctrl-C) while starting: nothing was written; rerun the same command\n")
    os._exit(INTERRUPTED)


def guard_start() -> None:
    """Until :func:`release_start`, Ctrl-C ends the process with one line and exit 130 (the main thread only)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_at_start)


def release_start() -> None:
    """The command's boundary is in place: Ctrl-C raises KeyboardInterrupt again, for the boundary to handle."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is _interrupted_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def exit_interrupted() -> NoReturn:
    """End the process with :data:`INTERRUPTED` after a boundary handled Ctrl-C and printed its line: the exit
    handlers run (``atexit``: logging, MLflow's), the standard streams are flushed, then ``os._exit``. CPython
    would otherwise exit by SIGINT (status -2) whatever code it is given when the KeyboardInterrupt had ended a
    C-level ``PyRun_*`` call first (an extension module's import): a flag the interpreter never clears."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(INTERRUPTED)


def started_as_command() -> bool:
    """Whether this process is a command being started (``python -m ...`` while importing, or the ``camdf`` script)."""
    first = sys.argv[0] if sys.argv else ""
    return first == "-m" or os.path.basename(first) == "camdf"


def closed_stdout() -> tuple[str, int]:
    """Standard output's reader went away: stdout now writes to ``/dev/null`` (the exit's flush stays quiet);
    the line to print and :data:`BROKEN_PIPE`."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass
    return ("standard output was closed before everything was written (broken pipe: the reading command "
            "ended); nothing else was affected"), BROKEN_PIPE


def flush_stdout() -> int | None:
    """Flush standard output; on a broken pipe print the one line and return :data:`BROKEN_PIPE` (else None)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        line, code = closed_stdout()
        print(f"error: {line}", file=sys.stderr)
        return code
    return None
