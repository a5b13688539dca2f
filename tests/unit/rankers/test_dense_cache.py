"""dense: offline from the packaged MiniLM, and a second run reads every embedding from the cache."""

import numpy as np

import camdf.rankers.dense as dense
from camdf.core.folds import assign_folds
from camdf.rankers import score_domain


def test_dense_runs_offline_and_the_second_run_hits_the_embedding_cache(retail, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loads = []
    real_load = dense._load_model

    def counting_load(model_path, n_threads):
        loads.append(model_path)
        return real_load(model_path, n_threads)

    monkeypatch.setattr(dense, "_load_model", counting_load)
    folds = assign_folds([t.id for t in retail.tasks], n_folds=5)
    n_texts = len({t.text for t in retail.tasks}) + len(retail.acquirable)

    first_stats: dict = {}
    first = score_domain(retail, "dense", folds, cache_dir=tmp_path, stats=first_stats)
    assert loads == [str(dense.default_model_path())]
    assert first_stats == {"hits": 0, "encoded": n_texts}
    assert len(list((tmp_path / "embeddings").rglob("*.npz"))) == n_texts

    second_stats: dict = {}
    second = score_domain(retail, "dense", folds, cache_dir=tmp_path, stats=second_stats)
    assert second_stats == {"hits": n_texts, "encoded": 0}
    assert len(loads) == 1, "the encoder must not be loaded when every text is cached"
    assert first.equals(second)
    assert first.score.between(-1, 1).all()


def test_embeddings_are_unit_norm_and_keyed_by_text(tmp_path):
    stats: dict = {}
    vecs = dense.embed(["refund my order", "refund my order", "list products"], cache_dir=tmp_path, stats=stats)
    assert vecs.shape == (3, 384) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vecs[0], vecs[1]) and stats == {"hits": 0, "encoded": 2}
    dense.embed(["list products", "something new"], cache_dir=tmp_path, stats=stats)
    assert stats == {"hits": 1, "encoded": 3}


def test_concurrent_processes_encode_each_text_once(tmp_path):
    """Two cells of a sweep needing the same texts at once: one encodes, the other reads what it wrote."""
    import json
    import subprocess
    import sys

    from camdf.common.files import exclusive

    texts = ["refund my order", "list products", "cancel the flight", "change my plan"]
    script = (
        "import json, sys; import camdf.rankers.dense as d; s = {}; print('ready', flush=True); "
        f"d.embed({texts!r}, cache_dir=sys.argv[1], stats=s); print(json.dumps(s))"
    )
    # The test holds the lock until both processes are ready to embed: from there, without the lock in embed(),
    # both would find the cache empty and encode every text (loading the model alone takes seconds).
    with exclusive(tmp_path / "embeddings" / ".encode.lock"):
        procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
                 for _ in range(2)]
        assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
    stats = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(s["encoded"] for s in stats) == len(texts)
    assert sum(s["hits"] for s in stats) == len(texts)
