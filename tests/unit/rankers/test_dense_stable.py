"""dense: the same text gives the same bytes in two processes, whatever else is encoded with it and whatever
CPU kernel, BLAS kernel or thread count computes it; a tampered cache file is not read."""

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np

import camdf.rankers.dense as dense

TEXTS = ["I want to return the blue jacket from order #W123", "list products",
         "Can you change the shipping address of my pending order to 10 Main Street, Springfield?"]
OTHERS = ["a much longer text that pads every batch it shares " * 6, "x"]

SCRIPT = """
import sys
import numpy as np
from camdf.rankers.dense import embed
texts = sys.argv[2:]
np.save(sys.argv[1], embed(texts))
"""


def _embed_in_process(out: Path, texts: list[str]) -> np.ndarray:
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", SCRIPT, str(out), *texts], check=True, cwd=root,
                   env={**__import__("os").environ, "PYTHONPATH": str(root)}, timeout=600)
    return np.load(out)


def test_two_processes_give_the_same_bytes_in_any_company(tmp_path):
    first = _embed_in_process(tmp_path / "a.npy", TEXTS)
    # The second process encodes the texts in another order, among others that would pad a shared batch.
    second = _embed_in_process(tmp_path / "b.npy", [OTHERS[0], TEXTS[2], OTHERS[1], TEXTS[0], TEXTS[1]])
    assert first.tobytes() == second[[3, 4, 1]].tobytes()


SCORES = """
import sys
import numpy as np
from camdf.rankers.dense import embed, score_dense
from camdf.rankers.problem import Problem
texts, docs = sys.argv[3:6], sys.argv[6:]
vecs = embed(texts + docs, n_threads=int(sys.argv[2]))
np.save(sys.argv[1], vecs[:3] @ vecs[3:].T)
"""

#: Two numeric settings of one machine: torch's CPU kernel (ATEN_CPU_CAPABILITY), the BLAS kernel numpy's
#: OpenBLAS picks (OPENBLAS_CORETYPE) and the thread counts. In float32 these gave vectors up to 1.5e-7 apart.
SETTINGS = [{"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Prescott", "OMP_NUM_THREADS": "1",
             "OPENBLAS_NUM_THREADS": "1", "threads": "1"},
            {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "2",
             "OPENBLAS_NUM_THREADS": "2", "threads": "2"}]
DOCS = ["return_delivered_order_items: return some items of a delivered order",
        "modify_pending_order_address: change the shipping address of a pending order", "list_all_product_types"]


def test_two_cpu_and_blas_settings_give_the_same_cosines(tmp_path):
    root = Path(__file__).resolve().parents[3]
    got = []
    for n, setting in enumerate(SETTINGS):
        env = {**__import__("os").environ, "PYTHONPATH": str(root), **setting}
        threads = env.pop("threads")
        subprocess.run([sys.executable, "-c", SCORES, str(tmp_path / f"{n}.npy"), threads, *TEXTS, *DOCS],
                       check=True, cwd=root, env=env, timeout=600)
        got.append(np.load(tmp_path / f"{n}.npy"))
    assert got[0].shape == (3, 3) and got[0].tobytes() == got[1].tobytes()
    grid = got[0] / dense.GRID ** 2  # exact products of grid vectors: whole multiples of GRID**2
    assert np.array_equal(grid, np.round(grid))


def test_a_tampered_embedding_is_not_read_and_is_encoded_again(tmp_path, caplog):
    clean = dense.embed(TEXTS[:1], cache_dir=tmp_path)
    (path,) = (tmp_path / "embeddings").rglob("*.npz")
    with np.load(path) as z:
        arrays = dict(z)
    arrays["vector"] = np.roll(arrays["vector"], 1)  # a poisoned vector under the old checksum
    np.savez(path, **arrays)
    stats: dict = {}
    with caplog.at_level(logging.WARNING, logger="camdf.common.checked"):
        again = dense.embed(TEXTS[:1], cache_dir=tmp_path, stats=stats)
    assert again.tobytes() == clean.tobytes() and stats == {"hits": 0, "encoded": 1}
    (record,) = caplog.records
    assert str(path) in record.getMessage() and "checksum" in record.getMessage()
    assert dense.embed(TEXTS[:1], cache_dir=tmp_path, stats=stats).tobytes() == clean.tobytes()
    assert stats == {"hits": 1, "encoded": 1}  # the file was rewritten
