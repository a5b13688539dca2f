"""Provenance of a run: the code's commit and the config as flat params (without the machine's paths)."""

from __future__ import annotations

import os
import subprocess
from typing import Any


def git_commit(root: str | os.PathLike) -> str:
    """HEAD's commit (suffixed ``-dirty`` when tracked files differ), or ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def short_commit(root: str | os.PathLike) -> str:
    """:func:`git_commit` shortened to 12 hex digits (``-dirty`` kept)."""
    commit = git_commit(root)
    return commit if commit == "unknown" else commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")


#: Config keys that say where a run was recorded, not what it computed: not logged as params
#: (they are machine paths; the store itself is where the run is).
NOT_PARAMS = ("paths.root_dir", "paths.output_dir", "paths.cache_dir", "paths.log_dir", "tracking.uri",
              "tracking.artifact_root")


def flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> flat ``a.b.c -> str(value)`` params (MLflow caps values at 6000 chars), without
    :data:`NOT_PARAMS`."""
    out: dict[str, str] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if name in NOT_PARAMS:
            continue
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:6000]
    return out
