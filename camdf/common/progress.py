"""Progress displays for long work: rich on a terminal, nothing under CI or without one.

:func:`quiet` is the one switch (``CI`` set to anything but ``false``/``0``, or standard
error not a terminal); :func:`tracked` wraps an iterable in a rich progress bar (done /
total, elapsed, ETA) unless quiet or another live display (a sweep's) is already showing.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def quiet() -> bool:
    """Whether progress displays are off: under CI (``CI`` set, not ``false``/``0``) or without a terminal."""
    ci = os.environ.get("CI", "").strip().lower()
    return (ci not in ("", "false", "0")) or not sys.stderr.isatty()


def tracked(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """``items`` with a progress bar on standard error (see the module); the items themselves unchanged."""
    if quiet() or total < 2:
        yield from items
        return
    from rich.console import Console
    from rich.errors import LiveError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=Console(stderr=True), transient=True)
    try:
        progress.start()
    except LiveError:  # a sweep's display is live in this process: it shows the progress
        yield from items
        return
    try:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)
    finally:
        progress.stop()
