"""Frozen ranking sources: score every candidate tool of every task, and judge the ranking.

Scorers, found by folder: each module that scores declares ``SCORER_FUNCTIONS`` (name -> its function there):
``bm25`` (:mod:`.lexical`), ``dense`` (:mod:`.dense`), ``supervised`` and ``prior`` (:mod:`.supervised`,
cross-fitted), ``hybrid`` (:mod:`.fusion`), ``pairwise`` (:mod:`.pairwise`), ``rerank`` (:mod:`.rerank`) and the
control ``noisy_oracle`` (:mod:`.oracle`). A new ranker is one module here and its ``conf/scorer/<name>.yaml`` (docs/layout.md).

The names below are imported on first use (PEP 562), so that importing one scorer's module
(the run-time stopper's bm25) does not load every scorer and pandas.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from camdf.common.declared import declared


def declared_scorers(folder: Path | None = None) -> dict[str, str]:
    """Scorer name -> ``"module:function"``: the ``SCORER_FUNCTIONS`` each module of the folder (default this
    package's) declares (:func:`camdf.common.declared.declared`: read from the source, nothing imported)."""
    return declared(folder or Path(__file__).parent, "SCORER_FUNCTIONS", "scorer")


#: Scorer name -> ``"module:function"`` in this package, found by folder (:func:`declared_scorers`);
#: :data:`camdf.rankers.scoring.SCORERS` imports them.
SCORER_FUNCTIONS = declared_scorers()
_EXPORTS = {
    "SCORERS": "scoring", "score_domain": "scoring", "scorer_params": "scoring",
    "METRICS": "quality", "per_task_quality": "quality", "quality_table": "quality", "ranking_quality": "quality",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"camdf.rankers.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'camdf.rankers' has no attribute {name!r}")
