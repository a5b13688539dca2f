"""The hostile cases' minimal valid user folder (3 tools, 3 tasks), the folder snapshot they compare
before and after a refusal (every entry, links not followed) and the FIFO mutation both suites use."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Callable

NAME = "mini"
TOOLS = [
    {"name": "lookup", "description": "Look up an account by email.",
     "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
     "kind": "read", "cost": 1.0},
    {"name": "search", "description": "Search the help center.", "kind": "generic", "cost": 2.5},
    {"name": "refund", "description": "Refund an invoice.", "kind": "write"},
]
TASKS = [
    {"id": "t-1", "text": "My email is ana@example.com, what is my status?", "required": ["lookup"],
     "split": "train", "group": "g1", "meta": {}},
    {"id": "t-2", "text": "How do I reset my password?", "required": ["search"], "split": "test", "group": "g1"},
    {"id": "t-3", "text": "Find my account and the article.", "required": ["lookup", "search"],
     "candidates": ["lookup", "search"], "alternatives": [["lookup"]], "meta": {"note": "x"}},
]


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


def fifo(fname: str) -> Callable[[Path], None]:
    """A mutation: ``fname`` in the folder replaced by a FIFO (reading it would block)."""
    def mutate(folder: Path) -> None:
        (folder / fname).unlink()
        os.mkfifo(folder / fname)
    return mutate
