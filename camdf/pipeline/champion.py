"""The train stage's champion: compared out of fold under every fold protocol, and the simplest that ties the best.

Each candidate of ``policy.candidates`` (listed simplest first: fewest fitted parameters and tuning loops)
is evaluated out of fold at the cell under the cell's own fold protocol and under group folds (each task
group, a template, whole in one fold), when the domain has as many groups as folds. The best candidate has
the highest payoff averaged over the protocols. The simplest candidate whose paired difference with it has
a 95% bootstrap CI reaching 0 under every protocol (it cannot be told apart from the best) ships, with the
reason on the model version's page; so a gain the data cannot show never buys a more complex rule.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pandas as pd

from camdf.pipeline.assembly import Paths

#: The protocol every pick is also made under (beside the cell's own).
GROUP = "group"


@dataclass(frozen=True)
class Comparison:
    """The candidates out of fold under one fold protocol: the cell's summary rows and each task's payoff."""

    protocol: str
    summary: pd.DataFrame  # one row per method: payoff_mean, CIs, n_exposed, success, ...
    per_task: pd.DataFrame  # task x method: the task's mean payoff over the repeats


def compare(cfg: dict[str, Any], paths: Paths, candidates: list[str]) -> tuple[list[Comparison], str | None]:
    """The candidates' comparison under the cell's protocol and under group folds (with the anchor cards full
    access and the best prefix beside them), and why group folds were left out (None: they were run)."""
    from camdf.core.folds import count_groups
    from camdf.pipeline.assembly import load_domain, task_groups
    from camdf.policies import methods

    names = [*candidates, *[m for m in methods(anchor=True) if m not in candidates]]
    protocols = [cfg["folds"]["protocol"]]
    skipped = None
    if GROUP not in protocols:
        domain = load_domain(cfg, paths.data_dir)
        n_groups = count_groups(task_groups(domain, cfg["folds"].get("group_by")))
        if n_groups >= int(cfg["folds"]["n_folds"]):
            protocols.append(GROUP)
        else:
            skipped = f"group folds left out: {n_groups} task groups for {cfg['folds']['n_folds']} folds"
    return [_one(cfg, paths, names, p) for p in protocols], skipped


def _one(cfg: dict[str, Any], paths: Paths, names: list[str], protocol: str) -> Comparison:
    from camdf.pipeline.cell_job import run_cell

    cell = {**cfg, "method": {**cfg["method"], "names": names}, "folds": {**cfg["folds"], "protocol": protocol}}
    _, artifacts = run_cell(cell, paths)
    summary = pd.read_csv(io.BytesIO(artifacts["summary.csv"]), index_col="method")
    outcomes = pd.read_parquet(io.BytesIO(artifacts["outcomes.parquet"]))
    per_task = outcomes.groupby(["task_id", "method"], sort=True)["payoff"].mean().unstack("method")
    return Comparison(protocol, summary, per_task)


def pick(comparisons: list[Comparison], candidates: list[str], n_resamples: int, seed: int) -> tuple[str, str]:
    """The candidate to ship and why (markdown): the simplest (first listed) whose paired difference with the
    best (highest payoff averaged over the protocols; ties: the first listed) has a CI reaching 0 under every
    protocol."""
    from camdf.common.markdown import signed
    from camdf.evaluation.bootstrap import paired_bootstrap

    mean = {m: sum(float(c.summary.loc[m, "payoff_mean"]) for c in comparisons) / len(comparisons)
            for m in candidates}
    best = max(candidates, key=lambda m: (mean[m], -candidates.index(m)))
    protocols = " and ".join(f"{c.protocol} folds" for c in comparisons)
    for m in candidates[:candidates.index(best)]:
        diffs = [paired_bootstrap({m: c.per_task[m].to_numpy(), best: c.per_task[best].to_numpy()}, best,
                                  n_resamples=n_resamples, random_state=seed).iloc[0] for c in comparisons]
        shown = "; ".join(f"{c.protocol} folds {signed(d['diff'])} [{signed(d['ci_low'])}, {signed(d['ci_high'])}]"
                          for c, d in zip(comparisons, diffs))
        if all(d["ci_high"] >= 0 for d in diffs):
            return m, (f"`{m}` ships: the best candidate out of fold, `{best}` (mean payoff {mean[best]:.3f} over "
                       f"{protocols}), cannot be told apart from it ({m} minus {best}: {shown}; each CI reaches 0), "
                       f"and `{m}` comes first in the candidates, listed simplest first")
    return best, (f"`{best}` ships: the best candidate out of fold (mean payoff {mean[best]:.3f} over {protocols}); "
                  "every simpler candidate is below it with a CI excluding 0 under at least one protocol")
