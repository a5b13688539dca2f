"""Frozen ranking sources: score every candidate tool of every task, and judge the ranking.

Scorers (see each module): ``bm25`` (:mod:`.lexical`), ``dense`` (:mod:`.dense`),
``supervised`` and ``prior`` (:mod:`.supervised`, cross-fitted), ``hybrid``
(:mod:`.fusion`) and the control ``noisy_oracle`` (:mod:`.oracle`).
"""

from camdf.rankers.scoring import SCORERS, score_domain, scorer_params
from camdf.rankers.quality import METRICS, per_task_quality, quality_table, ranking_quality

__all__ = [
    "METRICS", "SCORERS", "per_task_quality", "quality_table", "ranking_quality", "score_domain", "scorer_params",
]
