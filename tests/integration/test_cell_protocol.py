"""The cell's evaluation protocol on the real retail domain: repeats, list-cost normalisation, truncation."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import camdf.pipeline.resolvers  # noqa: F401
from camdf.pipeline.assembly import Paths, cell_folds, cell_instances, load_domain
from camdf.pipeline.cell_job import run_cell

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(data_dir, tmp_path, *overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("evaluate", overrides=["debug=tiny", f"paths.data_dir={data_dir}",
                                             f"paths.output_dir={tmp_path}", *overrides])
    return OmegaConf.to_container(cfg, resolve=True)


def test_repeats_reshuffle_folds_and_are_logged_per_task_and_repeat(data_dir, tmp_path):
    cfg = _cfg(data_dir, tmp_path, "folds.repeats=2", "method=grid")
    domain = load_domain(cfg, Path(data_dir))
    f0, f1 = cell_folds(cfg, domain, 0), cell_folds(cfg, domain, 1)
    assert not np.array_equal(f0, f1)  # repeat 1 is another split
    metrics, artifacts = run_cell(cfg, Paths(Path(data_dir), tmp_path / "cache"))
    out = pd.read_parquet(__import__("io").BytesIO(artifacts["outcomes.parquet"]))
    assert sorted(out["repeat"].unique()) == [0, 1]
    assert len(out) == 2 * out["task_id"].nunique() * out["method"].nunique()  # one decision per task, method, repeat
    per_repeat = out.groupby(["method", "repeat"])["payoff"].mean().unstack()
    assert metrics["camdf/payoff_repeat_min"] == pytest.approx(per_repeat.loc["camdf"].min())
    assert metrics["camdf/payoff_mean"] == pytest.approx(out[out.method == "camdf"]["payoff"].mean())
    assert metrics["best_prefix/headroom_share"] == pytest.approx(1.0)
    assert metrics["cell/headroom"] == pytest.approx(metrics["best_prefix/payoff_mean"] -
                                                      max(metrics["full/payoff_mean"], metrics["cell/payoff_none"]))
    assert "repeats.csv" in artifacts


def test_list_cost_scales_every_list_to_the_stated_mean_and_top_k_truncates(data_dir, tmp_path):
    paths = Paths(Path(data_dir), tmp_path / "cache")
    plain, *_ = cell_instances(_cfg(data_dir, tmp_path), paths)
    scaled, _, costs, _ = cell_instances(_cfg(data_dir, tmp_path, "list_cost=3.5"), paths)
    assert scaled.costs.sum(axis=1).mean() == pytest.approx(3.5)
    assert np.allclose(scaled.costs, plain.costs * 3.5 / plain.costs.sum(axis=1).mean())
    short, *_ = cell_instances(_cfg(data_dir, tmp_path, "candidates.top_k=3"), paths)
    assert short.n.max() == 3 and (short.tools == plain.tools[:, :3]).all()


def test_cv_sets_inner_cv_keeps_each_task_group_whole_and_stops_rewarding_copied_gold_sets(data_dir, tmp_path):
    """Retail's tasks come in templates (task groups): cv_set's inner folds keep a group whole, so a member that
    copies the G_x of a similar training task is scored on templates it never saw, as the outer group folds
    score it; with the groups unknown (a random inner split) those members read higher."""
    from dataclasses import replace

    from camdf.core.instances import inner_folds
    from camdf.core.membership import MembershipModel
    from camdf.policies import StateBatch, make_policy

    inst, domain, *_ = cell_instances(_cfg(data_dir, tmp_path), Paths(Path(data_dir), tmp_path / "cache"))
    assert list(inst.groups) == [t.group for t in domain.tasks] and len(set(inst.groups)) > 5
    assert list(inst.subset(inst.folds != 0).groups) == [g for g, f in zip(inst.groups, inst.folds) if f != 0]
    folds, how = inner_folds(inst, 5, 0)
    assert how == "group" and all(len(set(folds[inst.groups == g])) == 1 for g in set(inst.groups))
    assert inner_folds(replace(inst, groups=None), 5, 0)[1] == "kfold"
    assert inner_folds(replace(inst, groups=np.array(["a", "b"] * (inst.T // 2) + ["a"] * (inst.T % 2),
                                                     dtype=object)), 5, 0)[1] == "kfold"  # fewer groups than folds
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    grouped = make_policy("cv_set").fit(StateBatch.make(inst, p, 0.12, "exact", train=True))
    shuffled = make_policy("cv_set").fit(StateBatch.make(replace(inst, groups=None), p, 0.12, "exact", train=True))
    assert (grouped.inner_split_, shuffled.inner_split_) == ("group", "kfold")
    copying = ("neighbours/5", "neighbours/15", "seen-sets/score")
    assert all(grouped.inner_payoffs_[m] < shuffled.inner_payoffs_[m] for m in copying), \
        (grouped.inner_payoffs_, shuffled.inner_payoffs_)
