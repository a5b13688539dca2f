"""Catalog scale: add real tool definitions from other domains as distractors.

tau2 catalogs are small (7 acquirable tools in retail) while real harnesses
offer 100 to 1,000+ tools.  :func:`with_distractors` reads an already-built
domain and adds ``n`` tools drawn (seeded) from other built domains' catalogs:
real names, descriptions and schemas, acquirable, and required by no task.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from camdf.data.io import read_domain
from camdf.data.model import DEFAULT_ACQUIRABLE_KINDS, TOOL_KINDS, Domain, Task, Tool

SEPARATOR = "__"


def distractor_name(source: str, name: str) -> str:
    """``airline`` + ``get_user_details`` -> ``airline__get_user_details`` (unique across sources)."""
    return f"{source}{SEPARATOR}{name}"


def _signature(tool: Tool) -> str:
    return json.dumps([tool.description, tool.parameters], sort_keys=True)


def _pool(dom: Domain, data_dir: Path, sources: list[str], never: tuple[str, ...]) -> list[tuple[str, Tool]]:
    """(source, tool) of every source tool, in source then catalog order, less those named in ``never`` and
    definitions identical to a base tool or an earlier pool entry."""
    seen = {_signature(t) for t in dom.tools}
    pool: list[tuple[str, Tool]] = []
    for source in sources:
        for tool in read_domain(data_dir / source, TOOL_KINDS).tools:
            sig = _signature(tool)
            if tool.name in never or sig in seen:
                continue
            seen.add(sig)
            pool.append((source, tool))
    return pool


def _drawn(pool: list[tuple[str, Tool]], picks, kinds: tuple[str, ...], names: set[str], base: str) -> list[Tool]:
    """The picked pool entries (in pool order) as distractors: renamed ``<source>__<name>``, kind made acquirable."""
    distractors = []
    for i in sorted(picks):
        source, tool = pool[i]
        kind = tool.kind if tool.kind in kinds else ("generic" if "generic" in kinds else kinds[0])
        name = distractor_name(source, tool.name)
        if name in names:
            raise ValueError(f"distractors: name `{name}` already in the catalog of `{base}`")
        distractors.append(Tool(name=name, description=tool.description, parameters=tool.parameters, kind=kind))
    return distractors


def with_distractors(
    base: str,
    n: int,
    seed: int,
    data_dir: str | os.PathLike,
    sources: list[str],
    acquirable_kinds: Iterable[str] = DEFAULT_ACQUIRABLE_KINDS,
    never_acquirable: Iterable[str] = (),
) -> Domain:
    """The domain ``data_dir/base`` with ``n`` distractor tools from ``data_dir/<sources>``.

    Pool: every tool of the source catalogs, in source then catalog order, less
    tools named in ``never_acquirable`` (by their own name, e.g. a transfer to a
    human acquires no information in any domain) and less definitions identical
    to a base tool or to an earlier pool entry (a copy of a required tool would
    be an equally sufficient alternative, not a distractor).  ``n`` of them are
    drawn without replacement with ``numpy.random.default_rng(seed)``, renamed
    ``<source>__<name>`` and inserted at seeded positions among the base tools,
    so tie-breaking by catalog order favours neither group.  A distractor keeps
    its kind when that kind is acquirable, else becomes ``generic`` (or the first
    acquirable kind).  Tasks are unchanged except that a task with an explicit
    ``candidates`` list also gets every distractor.

    Parameters
    ----------
    base : str
        Folder name of the built domain under ``data_dir``.
    n : int
        Number of distractors (>= 0, at most the pool size).
    seed : int
    data_dir : path
        Folder of built domains (``data/``).
    sources : list of str
        Built domains whose catalogs supply the distractors.
    acquirable_kinds, never_acquirable
        The acquisition settings of the result (and of reading ``base``).

    Returns
    -------
    Domain
    """
    data_dir = Path(data_dir)
    kinds = tuple(acquirable_kinds)
    never = tuple(never_acquirable)
    if n < 0:
        raise ValueError(f"distractors: n must be >= 0, got {n}")
    if base in sources:
        raise ValueError(f"distractors: sources {list(sources)} must not include the base domain `{base}`")
    dom = read_domain(data_dir / base, kinds, never)
    pool = _pool(dom, data_dir, sources, never)
    if n > len(pool):
        raise ValueError(f"distractors: asked for {n} but the sources {list(sources)} offer only {len(pool)} tools")
    rng = np.random.default_rng(seed)
    distractors = _drawn(pool, rng.choice(len(pool), size=n, replace=False), kinds, {t.name for t in dom.tools}, base)
    # Seeded interleaving: a random arrangement of base and distractor slots, each group in its own order.
    slots = rng.permutation(np.r_[np.zeros(len(dom.tools), bool), np.ones(n, bool)])
    it_base, it_new = iter(dom.tools), iter(distractors)
    tools = [next(it_new) if is_new else next(it_base) for is_new in slots]
    added = tuple(t.name for t in distractors)
    tasks = [
        t if t.candidates is None else Task(
            id=t.id, text=t.text, required=t.required, candidates=t.candidates + added,
            alternatives=t.alternatives, split=t.split, meta=t.meta, group=t.group,
        )
        for t in dom.tasks
    ]
    return Domain(
        name=f"{dom.name}_d{n}",
        source=f"{dom.source}; plus {n} distractors (seed {seed}) from {', '.join(sources)}",
        tools=tools,
        tasks=tasks,
        acquirable_kinds=kinds,
        never_acquirable=never,
        dropped_required=dict(dom.dropped_required),
    )
