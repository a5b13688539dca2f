"""Frozen ranking sources: score every candidate tool of every task, and judge the ranking.

Scorers (see each module): ``bm25`` (:mod:`.lexical`), ``dense`` (:mod:`.dense`),
``supervised`` and ``prior`` (:mod:`.supervised`, cross-fitted), ``hybrid``
(:mod:`.fusion`) and the control ``noisy_oracle`` (:mod:`.oracle`).

The names below are imported on first use (PEP 562), so that importing one scorer's module
(the run-time stopper's bm25) does not load every scorer and pandas.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "SCORERS": "scoring", "score_domain": "scoring", "scorer_params": "scoring",
    "METRICS": "quality", "per_task_quality": "quality", "quality_table": "quality", "ranking_quality": "quality",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"camdf.rankers.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'camdf.rankers' has no attribute {name!r}")
