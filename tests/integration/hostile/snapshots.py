"""What the hostile cases compare before and after a refusal: every entry of a folder, links not followed."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def snapshot(folder: Path) -> dict:
    """Every entry under ``folder`` (not following links): type, size, mtime; a regular file's sha256."""
    out = {}
    if not os.path.lexists(folder):
        return out
    for base, dirs, files in os.walk(folder, followlinks=False):
        for name in [*dirs, *files, "."]:
            p = os.path.join(base, name)
            st = os.lstat(p)
            digest = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                digest = os.readlink(p)
            out[os.path.relpath(p, folder)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, digest)
    return out
