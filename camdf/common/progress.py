"""Progress displays for long work: rich on a terminal, nothing under CI or without one.

:func:`quiet` is the one switch (``CI`` set to anything but ``false``/``0``, or standard
error not a terminal); :func:`tracked` wraps an iterable in a rich progress bar (done /
total, elapsed, ETA) unless quiet or another live display (a sweep's) is already showing;
:func:`no_download_bars` is the one place MLflow's per-download bars are turned off.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: MLflow's switch for the progress bar it draws per artifact download or upload.
MLFLOW_BARS = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


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


@contextmanager
def no_download_bars() -> Iterator[None]:
    """MLflow's artifact progress bars off inside the block, the setting before restored after (set or unset).

    A tables build reads dozens of small files, a policy load or log downloads a model folder: a bar
    each would bury the output (and a failure is one line, not a bar and a line).
    """
    saved = os.environ.get(MLFLOW_BARS)
    os.environ[MLFLOW_BARS] = "false"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(MLFLOW_BARS, None)
        else:
            os.environ[MLFLOW_BARS] = saved
