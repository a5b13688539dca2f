"""Leave one catalog out: :mod:`camdf.rankers.crosscat` fitted on the other catalogs, as a scorer and as a table.

The ``crosscat`` scorer ranks a domain's tasks by a booster fitted on every *other* catalog of ``catalogs``
(built folders under ``data_dir``): the domain's own labels never reach its model, so its scores are those of a
ranker on a catalog it has never seen, the runtime's situation. Scoring a domain fits no model on it, so it
needs no nested cross-fit (not :func:`~camdf.rankers.problem.learned`).

The featurised catalogs are kept on disk under ``<cache_dir>/crosscat/`` (one ``.npz`` per catalog, keyed by
the domain folder's bytes, its acquisition settings, the ranker's code and the packages), and in memory for the
process, so a stage scoring five domains featurises each catalog once.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from camdf.rankers.crosscat import POOL, ROUNDS, Catalog, fit, score
from camdf.rankers.problem import Problem

SCORER_FUNCTIONS = {"crosscat": "score_crosscat"}
#: The catalogs the ranker learns from by default: every built-in domain with its queries' gold tools.
CATALOGS = ("airline", "apibank", "apibench", "bfcl_multi_turn", "metatool", "nestful", "retail", "stabletoolbench",
            "telecom", "toolalpaca")
_KEPT: dict[str, Catalog] = {}
_FITS: dict[tuple, object] = {}


def _config(folder: Path) -> dict:
    manifest = Path(folder, "manifest.json")
    try:
        return json.loads(manifest.read_text(encoding="utf-8"))["config"]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{manifest}: not a built domain ({type(err).__name__}: {err}); run `make data`") from None


def catalog_key(folder: str | Path, pool: int = POOL) -> str:
    """The content key of a built catalog's features (module docstring)."""
    from camdf.common.fingerprint import code_version, hash_json, hash_paths, package_versions
    from camdf.data.io import CATALOG, TASKS

    config = _config(Path(folder))
    return hash_json({"data": hash_paths([Path(folder, CATALOG), Path(folder, TASKS)]), "pool": pool,
                      "acquisition": {k: config.get(k) for k in ("acquirable_kinds", "never_acquirable")},
                      "code": code_version("camdf.rankers.crosscat", "camdf.rankers.chargrams", "camdf.rankers.text",
                                           "camdf.rankers.lexical", "camdf.rankers.rerank", "camdf.rankers.loco",
                                           "camdf.data.io"),
                      "packages": package_versions(["numpy", "scipy", "scikit-learn", "bm25s"])})


def built_catalog(folder, pool: int = POOL, cache_dir: str | Path | None = None) -> Catalog:
    """:meth:`Catalog.from_domain` of a built domain folder (``data/<domain>/``: its manifest says which tools
    are acquirable), read back from ``cache_dir`` (or this process's memory) when featurised before."""
    from camdf.data.io import read_domain

    key = catalog_key(folder, pool)
    if key in _KEPT:
        return _KEPT[key]
    path = Path(cache_dir, "crosscat", f"{Path(folder).name}-{key}.npz") if cache_dir is not None else None
    cat = _read(path) if path is not None and path.exists() else None
    if cat is None:
        config = _config(Path(folder))
        domain = read_domain(folder, acquirable_kinds=tuple(config["acquirable_kinds"]),
                             never_acquirable=tuple(config.get("never_acquirable") or ()))
        cat = Catalog.from_domain(domain, pool=pool)
        if path is not None:
            _write(path, cat)
    _KEPT[key] = cat
    return cat


def _write(path: Path, cat: Catalog) -> None:
    from camdf.common.files import write_atomic

    buf = io.BytesIO()
    np.savez(buf, features=cat.features, columns=cat.columns, first_rank=cat.first_rank, gold=cat.gold, bm25=cat.bm25,
             names=np.array(json.dumps({"name": cat.name, "tools": cat.tools, "task_ids": cat.task_ids})))
    write_atomic(path, buf.getvalue())


def _read(path: Path) -> Catalog | None:
    """A kept catalog, or None when the file cannot be read as one (it is then featurised again)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            names = json.loads(str(z["names"]))
            return Catalog(names["name"], names["tools"], names["task_ids"], z["features"], z["columns"],
                           z["first_rank"], z["gold"], z["bm25"])
    except (OSError, ValueError, KeyError):
        return None


def fitted(catalogs: Sequence[Catalog], rounds: int = ROUNDS):
    """:func:`~camdf.rankers.crosscat.fit` on ``catalogs``, kept for the process (a stage that scores a domain and
    tabulates the same catalog left out fits its booster once)."""
    key = (tuple(id(c) for c in catalogs), rounds)
    if key not in _FITS:  # the entry keeps the catalogs alive, so their ids name them while it is kept
        if len(_FITS) >= 16:
            _FITS.pop(next(iter(_FITS)))
        _FITS[key] = (list(catalogs), fit(catalogs, rounds=rounds))
    return _FITS[key][1]


def leave_one_out(catalogs: Sequence[Catalog], rounds: int = ROUNDS) -> dict[str, dict[str, np.ndarray]]:
    """Each catalog ranked by a booster fitted on the others only (its own labels never reach the model), beside
    the unlearned rankings on the same candidates: catalog name -> ranker (``bm25``, ``lexical_hybrid``: the
    first stage, ``crosscat``) -> scores (Q, A)."""
    from camdf.common.progress import tracked

    out = {}
    for cat in tracked(catalogs, len(catalogs), "crosscat: each catalog left out"):
        booster = fitted([c for c in catalogs if c is not cat], rounds=rounds)
        out[cat.name] = {
            "bm25": cat.bm25,
            "lexical_hybrid": np.where(cat.first_rank > cat.first_rank.shape[1], -np.inf, -cat.first_rank),
            "crosscat": score(booster, cat),
        }
    return out


def training_catalogs(data_dir: str | Path, names: Sequence[str], leave_out: str = "", pool: int = POOL,
                      cache_dir: str | Path | None = None) -> list[Catalog]:
    """The built catalogs ``names`` under ``data_dir`` but ``leave_out``; ValueError naming a missing one."""
    missing = [n for n in names if not Path(data_dir, n, "manifest.json").is_file()]
    if missing:
        raise ValueError(f"scorer.params.catalogs: {', '.join(missing)} not built under {data_dir} (run `make data`)")
    from camdf.common.progress import tracked

    keep = [n for n in names if n != leave_out]
    return [built_catalog(Path(data_dir, n), pool, cache_dir)
            for n in tracked(keep, len(keep), "crosscat: featurising the catalogs")]


def score_crosscat(problem: Problem, *, catalogs: Sequence[str] = CATALOGS, rounds: int = ROUNDS,
                   data_dir: str | Path = "data", cache_dir: str | Path | None = None, random_state: int = 0
                   ) -> np.ndarray:
    """Scores (T, A) of ``problem``'s tasks by crosscat fitted on ``catalogs`` but the problem's own domain
    (``problem.name``), over each task's candidates (0 elsewhere: ignored); ``random_state`` is unused (the fit is
    deterministic)."""
    if problem.descriptions is None or problem.parameters is None:
        raise ValueError("crosscat: the problem carries no tool descriptions (build it with Problem.from_domain)")
    others = training_catalogs(data_dir, list(catalogs), problem.name, cache_dir=cache_dir)
    if not others:
        raise ValueError(f"scorer.params.catalogs: expected a catalog other than {problem.name!r} to learn from")
    cat = Catalog.build(problem.name, problem.tools, problem.descriptions, problem.parameters, problem.texts,
                        problem.task_ids, problem.mask, problem.membership)
    scores = score(fitted(others, rounds=rounds), cat)
    return np.where(problem.mask & np.isfinite(scores), scores, 0.0)
