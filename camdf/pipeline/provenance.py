"""Provenance of a run: the code's commit and the config as flat params (without the machine's paths)."""

from __future__ import annotations

import os
from typing import Any

from camdf.common.waits import GIT, WaitExpired, run


#: What `make default-policy` rewrites in the package (the shipped policy and ranker, and their manifests naming the
#: commit they were fitted at): not what makes a checkout dirty, since `make reproduce` itself writes them before
#: the tables are stamped.
SHIPPED = (":(exclude)camdf/runtime/default_policy", ":(exclude)camdf/runtime/ranker_model")


def git_commit(root: str | os.PathLike) -> str:
    """HEAD's commit (suffixed ``-dirty`` when tracked files other than :data:`SHIPPED` differ), or ``unknown``
    outside git."""
    try:
        head = run(["git", "rev-parse", "HEAD"], GIT, "git rev-parse", cwd=root, capture_output=True, text=True)
        dirty = run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *SHIPPED], GIT,
                    "git status", cwd=root, capture_output=True, text=True)
    except (OSError, WaitExpired):
        return "unknown"
    if head.returncode or dirty.returncode:
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
