"""Config -> cell inputs: load the domain, score it, price it and pad it into :class:`Instances`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from camdf.core.folds import assign_folds
from camdf.core.instances import Instances, build_instances
from camdf.data import read_domain
from camdf.data.model import Domain

LABEL_SOURCES = ("data", "annotated", "partial")


@dataclass
class Paths:
    """Where a cell reads data and keeps caches."""

    data_dir: Path
    cache_dir: Path


def load_domain(cfg: dict[str, Any], data_dir: Path) -> Domain:
    dom = cfg["domain"]
    folder = Path(data_dir, dom["name"])
    if not (folder / "catalog.json").is_file():
        raise FileNotFoundError(
            f"domain {dom['name']!r}: {folder} is not built; run `make data` or "
            f"`python -m pipelines.data domain={dom['name']}` first"
        )
    return read_domain(folder, dom["acquirable_kinds"], dom["never_acquirable"])


def required_sets(domain: Domain, label_source: str) -> tuple[dict, dict]:
    """G_x and alternatives per task for the chosen label source.

    ``data`` uses the sets in tasks.jsonl (the execution-derived ones where the
    domain derives them); ``annotated`` uses ``meta.annotated_required`` where a
    task has it (the gold-action annotation), with no alternatives; ``partial``
    uses the ``data`` sets but trains on partial-payoff labels (see :func:`run_cell`).
    """
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"label_source: expected one of {LABEL_SOURCES}, got {label_source!r}")
    req, alts = {}, {}
    for t in domain.tasks:
        if label_source == "annotated" and "annotated_required" in t.meta:
            req[t.id], alts[t.id] = list(t.meta["annotated_required"]), []
        else:
            req[t.id], alts[t.id] = list(t.required), [list(a) for a in t.alternatives]
    return req, alts


def cell_instances(cfg: dict[str, Any], paths: Paths) -> tuple[Instances, Domain, pd.Series, pd.DataFrame]:
    """Load the domain, score it, price it and pad it into :class:`Instances`."""
    from camdf.costs.regimes import costs as cost_model
    from camdf.rankers import score_domain

    domain = load_domain(cfg, paths.data_dir)
    seed = int(cfg["seed"])
    folds_cfg = cfg["folds"]
    folds = assign_folds(
        [t.id for t in domain.tasks], [t.split for t in domain.tasks],
        n_folds=int(folds_cfg["n_folds"]), protocol=folds_cfg["protocol"], random_state=seed,
    )
    scorer = cfg["scorer"]
    scores = score_domain(domain, scorer["name"], folds, cache_dir=paths.cache_dir, random_state=seed,
                          **dict(scorer.get("params") or {}))
    cost = cfg["cost"]
    params = dict(cost.get("params") or {})
    if cost["regime"] == "execution":
        params.setdefault("cache_dir", str(paths.cache_dir))
        params.setdefault("environment", cfg["domain"].get("environment", domain.name))
    c = cost_model(domain, cost["regime"], float(cost["d"]), random_state=int(cost.get("random_state", 0)), **params)
    req, alts = required_sets(domain, cfg.get("label_source", "data"))
    inst = build_instances(scores, req, c, alternatives=alts, texts={t.id: t.text for t in domain.tasks})
    return inst, domain, c, scores
