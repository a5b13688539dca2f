"""A30's cells: the rules learn on every other domain and decide on the cell's own, none of it naming a tool.

A cell with ``transfer.leave_out: true`` decides its domain's tasks (all of them, one evaluated fold) with
rules fitted on the other domains of ``transfer.domains`` (training-only rows, fold -1), every domain's
instances made portable first (:func:`camdf.core.portable.portable`: normalised scores, no tool
identities) and pooled into one batch (:func:`camdf.core.portable.pool`). The cell's scorer, cost regime,
lambda and candidate cut apply to every domain alike. ``transfer.leave_out: false`` is the domain's own
in-domain cell (its folds, its tool identities): the ceiling a transferred rule is measured against.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from camdf.core.instances import Instances
from camdf.core.portable import pool, portable
from camdf.data.model import Domain
from camdf.pipeline.assembly import Paths, cell_costs, cell_instances, load_domain


def leaves_out(cfg: dict[str, Any]) -> bool:
    """Whether the cell is a leave-one-domain-out transfer cell (``transfer.leave_out``)."""
    return bool((cfg.get("transfer") or {}).get("leave_out"))


def training_domains(cfg: dict[str, Any]) -> dict[str, dict]:
    """The domain configs the cell's rules are fitted on: ``transfer.domains`` but the cell's own, by name."""
    from camdf.pipeline.checks.values import plain_name

    own = cfg["domain"]["name"]
    domains = dict((cfg.get("transfer") or {}).get("domains") or {})
    for key, d in domains.items():
        if not isinstance(d, dict) or not {"name", "acquirable_kinds", "never_acquirable"} <= d.keys():
            raise ValueError(f"transfer.domains.{key}: expected a domain config (a file of conf/domain/, "
                             f"e.g. `- /domain@transfer.domains.{key}: {key}` in the defaults)")
        plain_name(f"transfer.domains.{key}.name", d["name"])
    others = {name: d for name, d in domains.items() if d["name"] != own}
    if not others:
        raise ValueError(f"transfer.domains: no domain to train on besides {own} (expected at least one other)")
    return others


def capped(inst: Instances, max_tasks: int | None, random_state: int) -> Instances:
    """``inst`` with at most ``max_tasks`` tasks (a seeded subsample, in the original order), so that one large
    training domain does not outweigh the others; None: every task."""
    if max_tasks is None or inst.T <= int(max_tasks):
        return inst
    keep = np.sort(np.random.default_rng(random_state).choice(inst.T, size=int(max_tasks), replace=False))
    return inst.subset(keep)


def training_part(cfg: dict[str, Any], dom: dict, paths: Paths, repeat: int = 0) -> Instances:
    """One domain a portable rule learns from: its instances at the cell's scorer, costs and candidate cut, capped
    at ``transfer.max_tasks`` (:func:`capped`, seeded ``seed + repeat``) and made portable; its folds as they are."""
    sub = {**cfg, "domain": dom}
    domain = load_domain(sub, paths.data_dir)
    inst, *_ = cell_instances(sub, paths, repeat=repeat, domain=domain, catalog_costs=cell_costs(sub, domain, paths))
    return portable(capped(inst, cfg["transfer"].get("max_tasks"), int(cfg["seed"]) + repeat))


def transfer_instances(cfg: dict[str, Any], paths: Paths, repeat: int = 0
                       ) -> tuple[Instances, Domain, pd.Series, pd.DataFrame]:
    """The pooled portable instances of a transfer cell: its domain's tasks first (fold 0, every task
    evaluated), then each training domain's (fold -1, training only); the cell's domain, costs and scores.

    Returns what :func:`camdf.pipeline.assembly.cell_instances` returns, the instances pooled.
    """
    test, domain, costs, scores = cell_instances(cfg, paths, repeat=repeat)
    parts = [replace(portable(test), folds=np.zeros(test.T, dtype=np.int64))]
    for dom in training_domains(cfg).values():
        inst = training_part(cfg, dom, paths, repeat)
        parts.append(replace(inst, folds=np.full(inst.T, -1, dtype=np.int64)))
    return pool(parts), domain, costs, scores
