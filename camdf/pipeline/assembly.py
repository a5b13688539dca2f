"""Config -> cell inputs: load the domain, score it, price it and pad it into :class:`Instances`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from camdf.core.folds import assign_folds
from camdf.core.instances import Instances, build_instances
from camdf.data import read_domain
from camdf.data.model import CELL_LABEL_SOURCES, Domain


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
    if label_source not in CELL_LABEL_SOURCES:
        raise ValueError(f"label_source: expected one of {CELL_LABEL_SOURCES}, got {label_source!r}")
    req, alts = {}, {}
    for t in domain.tasks:
        if label_source == "annotated" and "annotated_required" in t.meta:
            req[t.id], alts[t.id] = list(t.meta["annotated_required"]), []
        else:
            req[t.id], alts[t.id] = list(t.required), [list(a) for a in t.alternatives]
    return req, alts


def cell_costs(cfg: dict[str, Any], domain: Domain, paths: Paths) -> pd.Series:
    """The catalog's costs c_j(d) under the config's cost regime (before any list-cost normalisation)."""
    from camdf.costs.regimes import costs as cost_model
    from camdf.integrations.registry import cost_measures

    cost = cfg["cost"]
    params = dict(cost.get("params") or {})
    measures = cost_measures()
    if cost["regime"] in measures:
        params = measures[cost["regime"]].with_defaults(params, cfg["domain"], domain.name, str(paths.cache_dir))
    return cost_model(domain, cost["regime"], float(cost["d"]), random_state=int(cost.get("random_state", 0)),
                      measures=measures, **params)


def task_groups(domain: Domain, group_by: str | None = None) -> list[str | None]:
    """Each task's fold group: its ``group`` (``group_by`` None) or its ``meta`` field ``group_by = "meta.<field>"``.

    A domain may record several groupings (StableToolBench: the tool and the category a query's
    gold APIs share, for the unseen-tool and unseen-category protocols); a task without the
    field is a group of its own.
    """
    if group_by is None:
        return [t.group for t in domain.tasks]
    field = group_by.removeprefix("meta.")
    values = [t.meta.get(field) for t in domain.tasks]
    if all(v is None for v in values):
        raise ValueError(f"folds.group_by: no task of domain `{domain.name}` has the meta field `{field}`")
    return [None if v is None else str(v) for v in values]


def cell_folds(cfg: dict[str, Any], domain: Domain, repeat: int = 0) -> np.ndarray:
    """Fold of every task for one repeat: ``folds.protocol`` seeded ``seed + repeat`` (repeat 0: the seed itself)."""
    folds_cfg = cfg["folds"]
    protocol = folds_cfg["protocol"]
    extra = {"groups": task_groups(domain, folds_cfg.get("group_by"))} if protocol == "group" else {}
    return assign_folds(
        [t.id for t in domain.tasks], [t.split for t in domain.tasks],
        n_folds=int(folds_cfg["n_folds"]), protocol=protocol, random_state=int(cfg["seed"]) + repeat, **extra,
    )


def scored_instances(
    scores: pd.DataFrame, domain: Domain, costs: pd.Series | dict[str, float], label_source: str = "data",
    group_by: str | None = None,
) -> Instances:
    """A scorer's frame padded into :class:`Instances`, with a learned ranker's training views.

    Parameters
    ----------
    scores : DataFrame
        From :func:`camdf.rankers.score_domain`; with a ``view`` column (a learned ranker)
        the instances hold each task's test scores and ``train_views[f]`` the rankings the
        fold-f stopper is trained on (the nested cross-fit), sharing the tool ids.
    domain : Domain
    costs : mapping tool -> cost
    label_source : str
        See :func:`required_sets`.
    group_by : str, optional
        The tasks' fold groups (:func:`task_groups`), carried as :attr:`Instances.groups` for the rules'
        inner cross-validation.
    """
    from camdf.rankers.problem import VIEW, evaluation_view, training_view

    req, alts = required_sets(domain, label_source)
    texts = {t.id: t.text for t in domain.tasks}
    groups = {t.id: g for t, g in zip(domain.tasks, task_groups(domain, group_by))}
    inst = build_instances(evaluation_view(scores), req, costs, alternatives=alts, texts=texts, groups=groups)
    if VIEW in scores.columns:
        inst.train_views = {int(f): build_instances(training_view(scores, int(f)), req, costs, alternatives=alts,
                                                    texts=texts, vocab=inst.vocab, groups=groups)
                            for f in sorted(scores[VIEW].unique())}
    return inst


def cell_instances(
    cfg: dict[str, Any], paths: Paths, repeat: int = 0, domain: Domain | None = None,
    catalog_costs: pd.Series | None = None,
) -> tuple[Instances, Domain, pd.Series, pd.DataFrame]:
    """Load the domain, score it, price it and pad it into :class:`Instances` (one repeat's folds).

    ``candidates.top_k`` (when set) keeps each task's top-k ranked candidates; ``list_cost``
    (when set) scales every cost so that the domain's mean candidate list costs ``list_cost``
    (7.0: what retail's seven tools cost at mean cost 1), which makes lambda the same pressure
    in catalogs of different size. Returns the costs actually used.

    With a learned ranker the instances carry ``train_views`` (one per evaluated fold, from
    the nested cross-fit of :func:`camdf.rankers.score_domain`); ``scores`` is the scorer's
    whole frame (with its ``view`` column then).
    """
    from camdf.core.instances import truncate
    from camdf.pipeline.score_cache import cell_scores

    domain = domain if domain is not None else load_domain(cfg, paths.data_dir)
    folds = cell_folds(cfg, domain, repeat)
    scorer = cfg["scorer"]
    scores = cell_scores(domain, cfg["domain"], scorer["name"], dict(scorer.get("params") or {}), folds,
                         int(cfg["seed"]) + repeat, Path(paths.data_dir), Path(paths.cache_dir))
    c = catalog_costs if catalog_costs is not None else cell_costs(cfg, domain, paths)
    inst = scored_instances(scores, domain, c, cfg.get("label_source", "data"), cfg["folds"].get("group_by"))
    inst = truncate(inst, (cfg.get("candidates") or {}).get("top_k"))
    list_cost = cfg.get("list_cost")
    if list_cost is not None:
        # One scale for every view: the test rankings' mean list cost is list_cost.
        scale = float(list_cost) / float(inst.costs.sum(axis=1).mean())
        c = c * scale
        inst = replace(inst, costs=inst.costs * scale,
                       train_views=inst.map_views(lambda v: replace(v, costs=v.costs * scale)))
    return inst, domain, c, scores
