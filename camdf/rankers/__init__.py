"""Frozen ranking sources: score every candidate tool of every task, and judge the ranking.

Scorers (see each module): ``bm25`` (:mod:`.lexical`), ``dense`` (:mod:`.dense`),
``supervised`` and ``prior`` (:mod:`.supervised`, cross-fitted), ``hybrid``
(:mod:`.fusion`) and the control ``noisy_oracle`` (:mod:`.oracle`).

The names below are imported on first use (PEP 562), so that importing one scorer's module
(the run-time stopper's bm25) does not load every scorer and pandas.
"""

from __future__ import annotations

import importlib

#: Scorer name -> ``"module:function"`` in this package; :data:`camdf.rankers.scoring.SCORERS` imports them.
#: Named here without numpy or scikit-learn, so a config check reads the names in milliseconds.
SCORER_FUNCTIONS = {
    "bm25": "lexical:score_bm25",
    "dense": "dense:score_dense",
    "supervised": "supervised:score_supervised",
    "hybrid": "fusion:score_hybrid",
    "prior": "supervised:score_prior",
    "noisy_oracle": "oracle:score_noisy_oracle",
    "pairwise": "pairwise:score_pairwise",
}
_EXPORTS = {
    "SCORERS": "scoring", "score_domain": "scoring", "scorer_params": "scoring",
    "METRICS": "quality", "per_task_quality": "quality", "quality_table": "quality", "ranking_quality": "quality",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"camdf.rankers.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'camdf.rankers' has no attribute {name!r}")
