"""Cache files that carry a SHA-256 checksum of their content, checked on every read.

A cache is derived data: a file that fails its check (corrupted on disk, truncated, or
edited by hand) is never used. The reader logs one warning naming the file and returns
None, so the caller recomputes the entry and writes it again. The checksum guards
against accidents and plain edits, not against a writer who recomputes it: the cache
folder is trusted as the code is.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import zipfile
from pathlib import Path

import numpy as np

from camdf.common.files import write_atomic

log = logging.getLogger(__name__)

#: Name of the checksum entry of a checked ``.npz``.
CHECKSUM = "__sha256__"


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode() + b"\0" + str((a.dtype.str, a.shape)).encode() + b"\0")
        h.update(a.tobytes())
    return h.hexdigest()


def write_checked_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` (``.npz``, atomically) with their checksum as one more entry."""
    if CHECKSUM in arrays:
        raise ValueError(f"arrays: the name {CHECKSUM!r} is reserved for the checksum")
    buf = io.BytesIO()
    np.savez(buf, **arrays, **{CHECKSUM: np.frombuffer(bytes.fromhex(_arrays_digest(arrays)), dtype=np.uint8)})
    write_atomic(Path(path), buf.getvalue())


def read_checked_npz(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """The arrays of a :func:`write_checked_npz` file; None when it is missing or fails its check.

    A file that exists but cannot be read, has no checksum or whose arrays do not match it
    is reported by one warning naming it (the caller recomputes and rewrites the entry).
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        return _refuse(path, f"unreadable ({type(exc).__name__})")
    stored = arrays.pop(CHECKSUM, None)
    if stored is None:
        return _refuse(path, "has no checksum")
    if stored.tobytes().hex() != _arrays_digest(arrays):
        return _refuse(path, "does not match its checksum")
    return arrays


def _refuse(path: Path, why: str) -> None:
    log.warning("cache file %s %s: not used, recomputing it", path, why)
    return None
