"""Instances a rule can learn from on one catalog and decide on another: no tool names, no score scale.

A rule that transfers across catalogs (A30, the default policy of the runtime) must not read what
names a catalog's tools (their identities) or what ties it to one ranker's scale (raw scores). Two
steps make any domain's instances portable:

- :func:`portable`: scores min-max normalised within each task (0.5 where all are equal), every tool
  id -1 and the vocabulary empty, so the membership model and the rules read ranks, score shape, costs,
  lambda and the query's length only;
- :func:`pool`: several domains' instances padded to one width and stacked, so one cross-fit
  learns from all of them (each keeps its own folds: -1 marks training-only rows).

The run-time side of :func:`portable` is :func:`normalise_scores`, applied by the front door of a
policy fitted this way (:mod:`camdf.runtime.door`), so both see the same numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from camdf.core.features import normalised_scores, task_normalised_scores
from camdf.core.instances import Instances


def portable(inst: Instances) -> Instances:
    """``inst`` with min-max normalised scores (NaN in padding), no tool ids (-1) and an empty vocabulary;
    a learned ranker's training views are made portable the same way."""
    valid = inst.valid
    scores = np.where(valid, normalised_scores(inst, valid), np.nan)
    return replace(inst, scores=scores, tool_ids=np.full(inst.tool_ids.shape, -1, dtype=np.int64), vocab=[],
                   train_views=inst.map_views(portable))


def normalise_scores(scores: Sequence[float]) -> list[float]:
    """One request's scores as :func:`portable` sees a task's (min-max within the request)."""
    return task_normalised_scores(list(scores))


def _pad(a: np.ndarray, width: int, fill, edge: bool = False) -> np.ndarray:
    """``a`` padded on its last axis to ``width`` with ``fill`` (``edge``: its last column repeated)."""
    extra = width - a.shape[-1]
    if extra <= 0:
        return a
    pad = [(0, 0)] * (a.ndim - 1) + [(0, extra)]
    return np.pad(a, pad, mode="edge") if edge else np.pad(a, pad, constant_values=fill)


def pool(parts: Sequence[Instances]) -> Instances:
    """Stack several domains' (portable) instances into one batch, padded to the widest list.

    Task ids are prefixed with their part's index (``"0:<id>"``) so that they stay unique; each part
    keeps its folds (training-only parts carry -1). The curves beyond a task's list repeat its last
    value (never read: :attr:`Instances.valid_depth`). The parts must be portable (empty vocabularies),
    have no learned ranker's training views and either all or none carry sufficient sets.
    """
    if not parts:
        raise ValueError("pool: expected at least one Instances")
    if any(p.vocab or p.train_views is not None for p in parts):
        raise ValueError("pool: expected portable instances without training views (camdf.core.portable.portable)")
    N = max(p.N for p in parts)
    sets = [p.sufficient() for p in parts]
    K = max(s.shape[1] for s, _ in sets)
    cat = lambda arrays: np.concatenate(arrays, axis=0)  # noqa: E731
    padded_sets = [np.pad(_pad(s, N, False), [(0, 0), (0, K - s.shape[1]), (0, 0)], constant_values=False)
                   for s, _ in sets]
    padded_present = [np.pad(pr, [(0, 0), (0, K - pr.shape[1])], constant_values=False) for _, pr in sets]
    return Instances(
        task_ids=cat([np.array([f"{k}:{t}" for t in p.task_ids], dtype=object) for k, p in enumerate(parts)]),
        tools=cat([_pad(p.tools, N, "") for p in parts]),
        scores=cat([_pad(p.scores, N, np.nan) for p in parts]),
        costs=cat([_pad(p.costs, N, 0.0) for p in parts]),
        member=cat([_pad(p.member, N, False) for p in parts]),
        success=cat([_pad(p.success, N + 1, False, edge=True) for p in parts]),
        partial=cat([_pad(p.partial, N + 1, 0.0, edge=True) for p in parts]),
        n=cat([p.n for p in parts]),
        folds=cat([p.folds for p in parts]),
        text_len=cat([p.text_len for p in parts]),
        tool_ids=cat([_pad(p.tool_ids, N, -1) for p in parts]),
        vocab=[],
        sets=cat(padded_sets),
        present=cat(padded_present),
    )
