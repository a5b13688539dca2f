"""Derived labels on a domain's tasks, and lookups of verified sufficiency.

:func:`relabel` writes the derivation into each task: with ``label_source``
``derived``, ``required`` and ``alternatives`` become the derived minimal sets
and the annotated set moves to ``meta.annotated_required``; with ``annotated``
they stay as annotated. Either way ``meta`` gains the derived sets and the
task's 2^n-subset sufficiency table (``meta.sufficiency``), which
:func:`is_sufficient` and :func:`sufficiency_table` read without running any tool.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Iterable

import numpy as np

from camdf.data.model import Domain, Task
from camdf.sufficiency.domain import ExecutableDomain
from camdf.sufficiency.derive import Derivation, TaskResult, derive, mask_to_row, subset_index

LABEL_SOURCES = ("annotated", "derived")


def _meta(task: Task, r: TaskResult) -> dict[str, Any]:
    meta = dict(task.meta)
    meta["annotated_required"] = list(r.annotated)
    meta["derived_required"] = r.required
    meta["derived_alternatives"] = [list(a) for a in r.alternatives]
    meta["sufficiency"] = {"tools": list(r.tools), "table": format(r.mask, "x")}
    meta["gold_executable"] = r.executable
    if r.needs_no_information:
        meta["needs_no_information"] = r.needs_no_information
    if r.required is None:
        meta["derived_missing"] = [{k: m[k] for k in ("need", "value", "what")} for m in r.missing_all]
    return meta


def relabel(domain: Domain, derivation: Derivation, label_source: str = "derived") -> Domain:
    """A copy of ``domain`` whose tasks carry the derivation (see the module docstring).

    A task that is not sufficient even with every tool has no derived set; it
    keeps its annotated labels and says so in ``meta.label_fallback``.
    """
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"label_source must be one of {', '.join(LABEL_SOURCES)}, got {label_source!r}")
    by_id = derivation.by_id
    missing = [t.id for t in domain.tasks if t.id not in by_id]
    if missing:
        raise ValueError(f"domain `{domain.name}`: no derivation for task(s) {missing[:5]}")
    tasks = []
    for task in domain.tasks:
        r = by_id[task.id]
        meta = _meta(task, r)
        if label_source == "derived" and r.required is not None:
            tasks.append(replace(task, required=tuple(r.required),
                                 alternatives=tuple(tuple(a) for a in r.alternatives), meta=meta))
        else:
            if label_source == "derived":
                meta["label_fallback"] = "annotated: no tool set is sufficient (see meta.derived_missing)"
            tasks.append(replace(task, meta=meta))
    return replace(domain, tasks=tasks)


def is_sufficient(task: Task, exposed: Iterable[str]) -> bool:
    """Whether exposing ``exposed`` (tool names; others are ignored) is verified sufficient for ``task``.

    Reads the table :func:`relabel` stored in ``task.meta["sufficiency"]``.
    """
    table = task.meta.get("sufficiency")
    if not table:
        raise ValueError(
            f"task `{task.id}` has no sufficiency table in meta (build its domain with label_source: derived)"
        )
    return bool(int(table["table"], 16) >> subset_index(table["tools"], exposed) & 1)


def sufficiency_table(
    domain: Domain, executable: ExecutableDomain | None = None, cache_dir: str | os.PathLike | None = None
) -> tuple[list[str], list[str], np.ndarray]:
    """Verified sufficiency of every subset of the acquirable tools, for every task.

    Parameters
    ----------
    domain : Domain
        A built domain whose tasks carry ``meta.sufficiency`` (read as is), or a
        converted one (derived by ``executable``, cached under ``cache_dir``).
    executable : ExecutableDomain, optional
        Runs the derivation; needed only when the tasks carry no tables.
    cache_dir : path, optional
        Cache folder for a derivation.

    Returns
    -------
    task_ids : list of str
    tools : list of str
        Bit i of a column index is ``tools[i]``.
    table : ndarray of bool, shape (n_tasks, 2 ** len(tools))
        ``table[t, m]``: the subset with index m is sufficient for task t.
    """
    if domain.tasks and all("sufficiency" in t.meta for t in domain.tasks):
        tools = domain.tasks[0].meta["sufficiency"]["tools"]
        if any(t.meta["sufficiency"]["tools"] != tools for t in domain.tasks):
            raise ValueError(f"domain `{domain.name}`: tasks disagree on the tool order of their sufficiency tables")
        rows = [mask_to_row(int(t.meta["sufficiency"]["table"], 16), len(tools)) for t in domain.tasks]
        return [t.id for t in domain.tasks], list(tools), np.stack(rows)
    if executable is None:
        raise ValueError(f"domain `{domain.name}`: its tasks carry no sufficiency tables (meta.sufficiency); "
                         "pass its ExecutableDomain to derive them")
    der = derive(domain, executable, cache_dir)
    return [r.task_id for r in der.results], list(der.tools), der.table()
