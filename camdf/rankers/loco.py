"""Leave one catalog out: :mod:`camdf.rankers.crosscat` fitted on the other catalogs, as a scorer and as a table.

:class:`Catalog` is one catalog's queries as the ranker learns from them (each query's pool featurised, its gold
tools), :func:`fit` the booster over catalogs, :func:`score` a catalog's rankings by it.

The ``crosscat`` scorer ranks a domain's tasks by a booster fitted on every *other* catalog of ``catalogs``
(built folders under ``data_dir``): the domain's own labels never reach its model, so its scores are those of a
ranker on a catalog it has never seen, the runtime's situation. Scoring a domain fits no model on it, so it
needs no nested cross-fit (not :func:`~camdf.rankers.problem.learned`).

The featurised catalogs are kept on disk under ``<cache_dir>/crosscat/`` (one ``.npz`` per catalog, keyed by
the domain folder's bytes, its acquisition settings, the ranker's code and the packages; a new key's file
replaces the old one), and in memory for the
process, so a stage scoring five domains featurises each catalog once.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from camdf.rankers.crosscat import FEATURES, PARAMS, POOL, ROUNDS, CatalogIndex, fused, pooled_scores
from camdf.rankers.problem import Problem

SCORER_FUNCTIONS = {"crosscat": "score_crosscat"}
#: The catalogs the ranker learns from by default: every built-in domain with its queries' gold tools.
CATALOGS = ("airline", "apibank", "apibench", "bfcl_multi_turn", "metatool", "nestful", "retail", "stabletoolbench",
            "telecom", "toolalpaca")
_KEPT: dict[str, Catalog] = {}
_FITS: dict[tuple, object] = {}


@dataclass
class Catalog:
    """One catalog's queries as the ranker sees them: features of each query's pool and the gold tools.

    Attributes
    ----------
    name : str
    tools : list of str, length A
    task_ids : list of str, length Q
        The tasks with a gold tool among the acquirable ones (the others have nothing to rank for).
    features, columns, first_rank : ndarray
        :meth:`CatalogIndex.features` of the tasks' texts (tasks offered part of the catalog are indexed
        over their own candidates: their other columns rank last).
    gold : ndarray of bool, shape (Q, A)
    bm25 : ndarray, shape (Q, A)
        bm25 over the task's candidates (``-inf`` elsewhere).
    """

    name: str
    tools: list[str]
    task_ids: list[str]
    features: np.ndarray
    columns: np.ndarray
    first_rank: np.ndarray
    gold: np.ndarray
    bm25: np.ndarray

    @classmethod
    def from_domain(cls, domain, pool: int = POOL) -> "Catalog":
        """Index ``domain``'s acquirable tools (once per distinct candidate list) and featurise its tasks with a
        gold tool among them."""
        from camdf.rankers.text import parameter_names

        tools = list(domain.acquirable)
        col = {n: j for j, n in enumerate(tools)}
        by_name = {t.name: t for t in domain.tools}
        tasks = [t for t in domain.tasks if any(r in col for r in t.required)]
        offered = np.zeros((len(tasks), len(tools)), dtype=bool)
        gold = np.zeros_like(offered)
        for i, t in enumerate(tasks):
            offered[i, list(col.values()) if t.candidates is None else [col[c] for c in t.candidates if c in col]] = 1
            gold[i, [col[r] for r in t.required if r in col]] = True
        return cls.build(domain.name, tools, [by_name[n].description for n in tools],
                         [parameter_names(by_name[n]) for n in tools], [t.text for t in tasks], [t.id for t in tasks],
                         offered, gold, pool)

    @classmethod
    def build(cls, name: str, tools: Sequence[str], descriptions: Sequence[str], parameters: Sequence[Sequence[str]],
              texts: Sequence[str], task_ids: Sequence[str], offered: np.ndarray, gold: np.ndarray,
              pool: int = POOL) -> "Catalog":
        """Index the tools (once per distinct candidate list: ``offered`` (Q, A) marks each query's) and featurise
        the queries ``texts``; ``gold`` (Q, A) marks each query's G_x."""
        q, a, p = len(texts), len(tools), min(pool, len(tools))
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in range(q):
            groups.setdefault(tuple(np.flatnonzero(offered[i]).tolist()), []).append(i)
        features = np.zeros((q, p, len(FEATURES)))
        columns = np.zeros((q, p), dtype=np.int64)
        first_rank = np.full((q, a), float(a + 1))
        bm25 = np.full((q, a), -np.inf)
        for cols, rows in groups.items():
            if not cols:  # nothing offered: the query's pool points at tools never offered
                columns[rows] = np.arange(p)
                continue
            idx = CatalogIndex.build([tools[j] for j in cols], [descriptions[j] for j in cols],
                                     [parameters[j] for j in cols])
            f, c, r, b = idx.features([texts[i] for i in rows], pool=p)
            bm25[np.ix_(rows, cols)] = b
            width = f.shape[1]
            offered_arr = np.asarray(cols)
            features[rows, :width], columns[rows, :width] = f, offered_arr[c]
            if width < p:  # a shorter candidate list: the pool's rest points at tools never offered, zero features
                columns[rows, width:] = np.asarray([np.setdiff1d(np.arange(a), offered_arr)[: p - width]] * len(rows))
            first_rank[np.ix_(rows, offered_arr)] = r
        return cls(name, list(tools), list(task_ids), features, columns, first_rank, np.asarray(gold, dtype=bool),
                   bm25)

    def offered(self) -> np.ndarray:
        """Which pool entries are tools the query was offered, shape (Q, P)."""
        return np.take_along_axis(self.first_rank, self.columns, axis=1) <= self.first_rank.shape[1]


def fit(catalogs: Sequence[Catalog], rounds: int = ROUNDS, params: dict | None = None):
    """A LightGBM booster of ``1{tool in G_x}`` over the pooled (query, tool) pairs of ``catalogs`` (queries whose
    pool holds a gold tool; each catalog's queries weigh alike in total, so a big catalog does not drown the small
    ones; each pair carries its query's weight)."""
    import lightgbm as lgb

    X, y, sizes, weight = [], [], [], []
    for cat in catalogs:
        labels = np.take_along_axis(cat.gold, cat.columns, axis=1)
        ok = cat.offered()
        keep = [i for i in range(len(labels)) if labels[i][ok[i]].any()]
        for i in keep:
            X.append(cat.features[i][ok[i]])
            y.append(labels[i][ok[i]].astype(np.float64))
            sizes.append(int(ok[i].sum()))
        weight += [1.0 / max(len(keep), 1)] * len(keep)
    weight = np.asarray(weight) * len(weight) / max(sum(weight), 1e-12)
    data = lgb.Dataset(np.concatenate(X), np.concatenate(y), weight=np.repeat(weight, sizes))
    return lgb.train({**PARAMS, **(params or {})}, data, num_boost_round=rounds)


def score(booster, catalog: Catalog) -> np.ndarray:
    """The ranking of every tool for every query of ``catalog``, shape (Q, A): the reciprocal-rank fusion of the
    booster's order (on the pool, the first stage's below it) with the first stage's own, so the model re-orders
    what the lexical match found rather than replacing it, scored by :func:`fused`; tools never offered:
    ``-inf``."""
    feats = catalog.features
    raw = booster.predict(feats.reshape(-1, feats.shape[-1]), raw_score=True).reshape(catalog.columns.shape)
    return fused(pooled_scores(raw, catalog.columns, catalog.first_rank, catalog.offered()), catalog.first_rank)


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
            _prune(path, Path(folder).name)
    _KEPT[key] = cat
    return cat


def _prune(kept: Path, name: str) -> None:
    """Remove the catalog ``name``'s other featurised files beside ``kept`` (older data, settings or code: never
    read again), so the cache holds one file per catalog."""
    for old in kept.parent.glob(f"{name}-*.npz"):
        if old != kept and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]+\.npz", old.name):
            old.unlink(missing_ok=True)


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
