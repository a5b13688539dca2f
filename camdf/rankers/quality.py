"""Ranking quality against G_x: recall@k, nDCG@10, MRR and the shares with G_x in the top 3, 10, 20 and list.

Per task (binary relevance: rel = tool in G_x; ranks within the task's candidates):

- recall@k = |G_x in top k| / |G_x|
- nDCG@10 = sum_{rel, rank <= 10} 1 / log2(rank + 1)  /  sum_{i=1}^{min(|G_x|, 10)} 1 / log2(i + 1)
- MRR = 1 / (rank of the best-ranked tool of G_x)
- all_in_top3 = 1[G_x lies in the top 3]
- coverage@10, coverage@20 = 1[G_x lies in the top 10, 20] (the share of tasks a
  stopping rule can still make sufficient when candidates are cut to the top K)
- coverage = 1[G_x lies in the task's candidate list]

Means are over evaluated tasks (fold >= 0) with a non-empty G_x; tasks with an
empty G_x have nothing to retrieve and are left out of the means and counted in
``n_empty_excluded``.  Training-only tasks (fold -1) are not evaluated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from camdf.common.markdown import markdown_table
from camdf.data.model import Domain
from camdf.rankers.problem import evaluation_view

METRICS = ["recall@1", "recall@3", "recall@5", "ndcg@10", "mrr", "all_in_top3", "coverage@10", "coverage@20", "coverage"]


def per_task_quality(scores: pd.DataFrame, domain: Domain) -> pd.DataFrame:
    """Each metric per task (index task_id, in domain order), plus ``n_required`` and ``fold``.

    Tasks with an empty G_x get NaN metrics. A learned scorer's frame is judged on its
    test scores (:func:`~camdf.rankers.problem.evaluation_view`).
    """
    scores = evaluation_view(scores)
    required = {t.id: set(t.required) for t in domain.tasks}
    missing = set(scores["task_id"].unique()) - set(required)
    if missing:
        raise ValueError(f"scores: task ids not in domain `{domain.name}`: {sorted(missing)[:5]}")
    pairs = [(tid, tool) for tid, tools in required.items() for tool in tools]
    rel = pd.MultiIndex.from_arrays([scores["task_id"], scores["tool"]]).isin(pairs) if pairs \
        else np.zeros(len(scores), dtype=bool)
    rank = scores["rank"].to_numpy(np.float64)
    frame = pd.DataFrame(
        {
            "task_id": scores["task_id"].to_numpy(),
            "hit1": rel & (rank <= 1),
            "hit3": rel & (rank <= 3),
            "hit5": rel & (rank <= 5),
            "hit10": rel & (rank <= 10),
            "hit20": rel & (rank <= 20),
            "hit": rel,
            "dcg": np.where(rel & (rank <= 10), 1.0 / np.log2(rank + 1.0), 0.0),
            "first": np.where(rel, rank, np.inf),
        }
    )
    agg = frame.groupby("task_id", sort=False).agg(
        hit1=("hit1", "sum"), hit3=("hit3", "sum"), hit5=("hit5", "sum"), hit10=("hit10", "sum"),
        hit20=("hit20", "sum"), hit=("hit", "sum"), dcg=("dcg", "sum"), first=("first", "min"),
    )
    order = [t.id for t in domain.tasks if t.id in agg.index]
    agg = agg.loc[order]
    n_req = np.array([len(required[t]) for t in order], dtype=np.float64)
    discounts = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, 12)))])
    idcg = discounts[np.minimum(n_req, 10).astype(int)]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = pd.DataFrame(
            {
                "recall@1": agg["hit1"] / n_req,
                "recall@3": agg["hit3"] / n_req,
                "recall@5": agg["hit5"] / n_req,
                "ndcg@10": agg["dcg"] / idcg,
                "mrr": 1.0 / agg["first"],
                "all_in_top3": (agg["hit3"] == n_req).astype(np.float64),
                "coverage@10": (agg["hit10"] == n_req).astype(np.float64),
                "coverage@20": (agg["hit20"] == n_req).astype(np.float64),
                "coverage": (agg["hit"] == n_req).astype(np.float64),
            },
            index=agg.index,
        )
    out[n_req == 0] = np.nan
    out["n_required"] = n_req.astype(int)
    out["fold"] = scores.drop_duplicates("task_id").set_index("task_id").loc[order, "fold"].to_numpy()
    return out


def ranking_quality(scores: pd.DataFrame, domain: Domain) -> dict[str, float | int]:
    """Mean ranking quality over evaluated tasks with a non-empty G_x.

    Parameters
    ----------
    scores : DataFrame
        From :func:`camdf.rankers.score_domain`.
    domain : Domain

    Returns
    -------
    dict
        The :data:`METRICS` (floats in [0, 1]), ``n_tasks`` (tasks averaged over),
        ``n_empty_excluded`` (evaluated tasks left out for an empty G_x) and
        ``mean_candidates``.
    """
    per = per_task_quality(scores, domain)
    scores = evaluation_view(scores)
    evaluated = per[per["fold"] >= 0]
    used = evaluated[evaluated["n_required"] > 0]
    out: dict[str, float | int] = {m: float(used[m].mean()) if len(used) else float("nan") for m in METRICS}
    out["n_tasks"] = int(len(used))
    out["n_empty_excluded"] = int(len(evaluated) - len(used))
    out["mean_candidates"] = float(scores.groupby("task_id", sort=False).size().mean())
    return out


HEADERS = {
    "recall@1": "R@1", "recall@3": "R@3", "recall@5": "R@5",
    "ndcg@10": "nDCG@10", "mrr": "MRR", "all_in_top3": "G_x in top 3",
    "coverage@10": "G_x in top 10", "coverage@20": "G_x in top 20", "coverage": "G_x listed",
}


def quality_table(rows: pd.DataFrame, digits: int = 3) -> str:
    """Markdown table, one row per (domain, scorer), the best value per domain in bold.

    Parameters
    ----------
    rows : DataFrame
        Columns ``domain``, ``scorer``, the :data:`METRICS`, ``n_tasks`` and
        ``n_empty_excluded`` (e.g. from :func:`camdf.pipeline.scores_stage.gather_quality`).
        A metric missing from ``rows`` (a record written before it existed) is left out.
    """
    metrics = [m for m in METRICS if m in rows.columns]
    head = ["domain", "scorer", *(HEADERS[m] for m in metrics), "tasks (empty G_x left out)"]
    body = []
    for dom, group in rows.groupby("domain", sort=False):
        best = {m: f"{group[m].max():.{digits}f}" for m in metrics}
        for _, r in group.iterrows():
            cells = []
            for m in metrics:
                cell = f"{r[m]:.{digits}f}"
                cells.append(f"**{cell}**" if cell == best[m] and len(group) > 1 else cell)
            body.append([dom, r["scorer"], *cells, f"{int(r['n_tasks'])} ({int(r['n_empty_excluded'])})"])
    return "\n".join(markdown_table(head, body, "ll" + "r" * (len(head) - 2)))
