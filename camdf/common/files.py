"""Atomic file writes: a reader (or a second process) sees the old file or the new one, never half of one."""

from __future__ import annotations

import io
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # the frame is the caller's: pandas is not imported here (the run-time stopper loads without it)
    import pandas as pd


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one step.

    The temporary file is unique to this writer (concurrent writers never share one),
    is removed if the body raises, and ends with the ordinary 0644 permissions.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return Path(path)


def parquet_bytes(df: pd.DataFrame) -> bytes:
    """A frame as parquet bytes, without its index (an artifact or a cache file)."""
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


@contextmanager
def exclusive(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if absent) for the body: concurrent local processes
    run the body one at a time. Where ``fcntl`` is missing (Windows) or the file system refuses locks, the body
    runs unlocked (the work is then at worst done twice, never wrong: every cache write is atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh, _flocked(fh.fileno()):
        yield


@contextmanager
def exclusive_folder(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the folder ``path`` itself for the body (nothing is created in it: a store's
    folder stays as its owner left it). Without ``fcntl`` or locks on the file system the body runs unlocked."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with _flocked(fd):
            yield
    finally:
        os.close(fd)


@contextmanager
def _flocked(fd: int) -> Iterator[None]:
    """An exclusive ``flock`` on the open descriptor ``fd`` for the body (none where locks are unavailable)."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    locked = False
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:
            pass
    try:
        yield
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)
