"""The verdict wording rule over fits, the MDD, A26's binomial column and claim (f)'s signed noise drop, on hand-built cells."""

import io
import math

import numpy as np
import pandas as pd
import pytest

from camdf.evaluation.fits import choice_counts, paired_differences
from camdf.evaluation.power import min_detectable_difference, miss_rate_test, seed_intervals
from camdf.reporting.artifacts import CellArtifacts
from camdf.reporting.tables.claims import FAILS, HOLDS, UNSURE, claims, rows_f
from camdf.reporting.evidence import gather
from camdf.reporting.tables.a19 import a19, noise_drops
from camdf.reporting.tables.a26 import binomial_columns
from camdf.reporting.tables.family import family_verdict
from camdf.reporting.tables.notes import choice_text
from camdf.reporting.verdicts import Comparison, Judge, direction, wording

from .cells import by_experiment

MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0,
        "table2_scorers": ["bm25", "supervised"], "methods": ["camdf", "full", "none"],
        "grid_methods": ["camdf", "predict_threshold"], "noise_methods": ["camdf", "full"],
        "ablation_methods": ["camdf"], "risk_methods": ["camdf_risk"]}
N_TASKS, REPEATS, FOLDS = 50, 5, 5


def _outcomes(payoffs: dict[str, np.ndarray]) -> pd.DataFrame:
    """Outcomes of 50 tasks x 5 repeats (task t in fold t % 5 in every repeat); ``payoffs[m]`` is (repeats, tasks)."""
    rows = []
    for m, pay in payoffs.items():
        for r in range(REPEATS):
            rows.append(pd.DataFrame({"task_id": [f"t{t:02d}" for t in range(N_TASKS)], "fold": np.arange(N_TASKS) % FOLDS,
                                      "method": m, "repeat": r, "payoff": pay[r], "success": pay[r] > 0}))
    return pd.concat(rows, ignore_index=True)


def _loss_in_fits(n_losing: int, loss: float = 0.3) -> np.ndarray:
    """CAM-DF's payoff (repeats, tasks): 0.5 everywhere except ``loss`` lower in the first ``n_losing`` (repeat, fold) fits."""
    pay = np.full((REPEATS, N_TASKS), 0.5)
    for k in range(n_losing):
        r, f = divmod(k, FOLDS)
        pay[r, np.arange(N_TASKS) % FOLDS == f] -= loss
    return pay


def _run(key, outcomes_key=None, **params):
    p = {"domain.name": "retail", "scorer.label": "bm25", "cost.regime": "schema_tokens", "cost.lam": "0.12",
         "cost.d": "1.0", "seed": "0", "payoff": "exact", "label_noise": "0.0", "label_source": "data",
         "folds.protocol": "kfold", "folds.n_folds": "5", "folds.repeats": "5", "method.names": str(MAIN["methods"]),
         "list_cost": "None", "stats.n_resamples": "500", "stats.delta": "0.05"}
    p.update(params)
    return {"run_id": outcomes_key or key, "start": len(key), "t:cell_key": key, **{f"p:{k}": v for k, v in p.items()},
            "m:cell/degenerate": 0.0}


def _store(outcomes: dict[str, pd.DataFrame]) -> CellArtifacts:
    """An in-memory artifact store: run id -> its outcomes.parquet."""
    def fetch(run_id, rel):
        if rel != "outcomes.parquet" or run_id not in outcomes:
            raise FileNotFoundError(f"{run_id}/{rel}")
        buf = io.BytesIO()
        outcomes[run_id].to_parquet(buf)
        return buf.getvalue()
    return CellArtifacts(fetch)


def _main_cell(n_losing: int):
    """A main cell where CAM-DF loses 0.3 to full access in ``n_losing`` of 25 fits, with its logged CI (below 0)."""
    out = _outcomes({"camdf": _loss_in_fits(n_losing), "full": np.full((REPEATS, N_TASKS), 0.5),
                     "none": np.zeros((REPEATS, N_TASKS))})
    task, _ = paired_differences(out, "full", out, "camdf")
    row = _run("main")
    lo, hi = seed_intervals(task.to_numpy()[None, :], 500, [0])
    row.update({"m:camdf/payoff_mean": 0.5 - task.mean(), "m:full/payoff_mean": 0.5, "m:none/payoff_mean": 0.0,
                "m:full/diff_vs_ref": task.mean(), "m:full/diff_vs_ref_ci_low": lo[0, 0],
                "m:full/diff_vs_ref_ci_high": hi[0, 0], "m:none/diff_vs_ref": -0.5 + task.mean(),
                "m:none/diff_vs_ref_ci_low": -0.6, "m:none/diff_vs_ref_ci_high": -0.4,
                "m:full/is_best_baseline": 1.0, "m:camdf/diff_vs_best_baseline": -task.mean(),
                "m:camdf/diff_vs_best_baseline_ci_low": -hi[0, 0], "m:camdf/diff_vs_best_baseline_ci_high": -lo[0, 0],
                "m:camdf/fewer_tools_vs_full_pct": 40.0})
    return row, out


def test_a_loss_carried_by_4_of_25_fits_does_not_beat_and_one_in_most_fits_is_worse():
    few, few_out = _main_cell(4)
    evidence = gather(pd.DataFrame([few]), MAIN, cells=by_experiment(table2=[few]))
    judge = Judge(_store({"main": few_out}))
    c = judge.compare(pd.Series(few), "camdf", "full")
    assert c.hi < 0                                     # the CI alone would call it a loss ...
    assert (c.n_fits, c.fits_lower, c.fits_higher) == (25, 4, 0)
    assert direction(c) == 0                           # ... but 4 of 25 fits carry it
    assert wording(c, "full access") == "does not beat full access (the loss is carried by 4 of 25 fits)"
    assert direction(Judge().compare(pd.Series(few), "camdf", "full")) == -1  # without outcomes: CI only

    most, most_out = _main_cell(20)
    c = Judge(_store({"main": most_out})).compare(pd.Series(most), "camdf", "full")
    assert c.hi < 0 and c.fits_lower == 20
    assert wording(c, "full access") == "is worse than full access"

    # The family table and claim (a) follow the same rule.
    with_fits = gather(pd.DataFrame([few]), MAIN, artifacts=_store({"main": few_out}), cells=by_experiment(table2=[few]))
    fam = family_verdict(with_fits, MAIN).frame
    assert fam.loc["bm25, kfold folds / camdf", "verdict"] == "does not beat it (the loss is carried by 4 of 25 fits)"
    assert fam.loc["bm25, kfold folds / camdf", "fits lower / higher"] == "4 / 0 of 25"
    row = claims(with_fits, MAIN).frame.loc["a (bm25, kfold folds)"]
    assert row["verdict"] == "inconclusive"
    assert row["MDD"] == pytest.approx(Judge(_store({"main": few_out})).compare(pd.Series(few), "camdf", "full").mdd)
    assert 0 <= row["verdict stability"] <= 1 and row["knife-edge"] in ("", "yes")
    assert row["could the data show it?"].startswith(("yes", "no"))
    assert claims(evidence, MAIN).frame.loc["a (bm25, kfold folds)", "verdict"] == FAILS  # CI only


def test_mdd_is_2_80_sd_over_root_n():
    # (1.959964 + 0.841621) * 0.1 / sqrt(100)
    assert min_detectable_difference(0.1, 100) == pytest.approx(0.0280159, abs=1e-6)
    c = Comparison(0.0, -0.1, 0.1, per_task=np.array([0.0, 0.2, 0.0, 0.2]))  # SD (ddof 1) = 0.11547
    assert c.mdd == pytest.approx(2.8015852 * 0.1154701 / 2, abs=1e-6)
    with pytest.raises(ValueError, match="n"):
        min_detectable_difference(0.1, 1)


def test_seed_intervals_reproduce_the_cell_ci_and_move_with_the_seed():
    from camdf.evaluation.bootstrap import bootstrap_indices, bootstrap_mean_ci
    diff = np.random.default_rng(3).normal(0.01, 0.1, 60)
    ci = bootstrap_mean_ci(diff, n_resamples=400, indices=bootstrap_indices(60, 400, 7))
    lo, hi = seed_intervals(diff[None, :], 400, [7, 8])
    assert (lo[0, 0], hi[0, 0]) == (ci.ci_low, ci.ci_high)
    assert lo[1, 0] != lo[0, 0]


def test_binomial_column_is_the_exact_one_sided_test_over_tasks_x_repeats():
    run = pd.Series({"m:cell/n_tasks": 100.0, "m:cell/n_repeats": 5.0})
    cols = binomial_columns(run, 40 / 500, 0.05)   # 40 misses of 500 decisions at alpha 0.05
    by_hand = sum(math.comb(500, k) * 0.05 ** k * 0.95 ** (500 - k) for k in range(40, 501))
    assert cols["misses / decisions"] == "40 / 500"
    assert float(cols["binomial p (miss > alpha)"]) == pytest.approx(by_hand, abs=1e-4)
    assert cols["miss rate above alpha"] == "yes"
    assert binomial_columns(run, 25 / 500, 0.05)["miss rate above alpha"] == "no"  # at alpha: p about 0.5
    assert miss_rate_test(0, 500, 0.05).pvalue == 1.0


def test_noise_drop_is_signed_and_can_be_negative():
    base = np.full((REPEATS, N_TASKS), 0.3)
    clean = _outcomes({"camdf": base, "full": base})
    noisy = _outcomes({"camdf": base + 0.05, "full": base})  # noise helps CAM-DF here
    rows = [_run("clean", **{"method.names": str(MAIN["noise_methods"])}),
            _run("noisy", **{"method.names": str(MAIN["noise_methods"]), "label_noise": "0.05"})]
    for r, pay in zip(rows, (0.3, 0.35)):
        r.update({"m:camdf/payoff_mean": pay, "m:full/payoff_mean": 0.3})
    evidence = gather(pd.DataFrame(rows), MAIN, artifacts=_store({"clean": clean, "noisy": noisy}),
                      cells=by_experiment(a19=rows))
    ((eps, drop),) = noise_drops(evidence, "bm25")
    assert eps == 0.05 and drop.mean == pytest.approx(-0.05) and drop.hi < 0
    table = a19(evidence, MAIN).frame
    assert table.loc["0.05", "CAM-DF clean minus noisy (95% CI)"].startswith("-0.050")
    (row,) = rows_f(evidence, MAIN, evidence.judge)
    # CAM-DF pays what full access pays: no noise-free gain to keep, so robustness is not shown (the no-gain clause).
    assert row.claim == "f (bm25)" and row.verdict == UNSURE and "epsilon 0.05 -0.050" in row.statistic
    for r in rows:
        r["m:full/payoff_mean"] = 0.2  # now CAM-DF gains 0.1 over max(full, none), and noise does not erode it
    evidence = gather(pd.DataFrame(rows), MAIN, artifacts=_store({"clean": clean, "noisy": noisy}),
                      cells=by_experiment(a19=rows))
    (row,) = rows_f(evidence, MAIN, evidence.judge)
    assert row.verdict == HOLDS and "noise-free gain over max(full, none) +0.100" in row.statistic


def test_choice_counts_spread_most_frequent_first():
    tuned = pd.DataFrame({"fold": [0, 1, 2, 0], "method": "camdf", "parameter": "params", "repeat": [0, 0, 0, 1],
                          "value": ["{'num_leaves': 7}", "{'num_leaves': 3, 'n_estimators': 50}",
                                    "{'num_leaves': 3, 'n_estimators': 50}", "{'num_leaves': 3, 'n_estimators': 50}"]})
    counts = choice_counts(tuned, "camdf")
    assert counts.tolist() == [3, 1]
    assert choice_text(counts) == "3/4 leaves 3, trees 50; 1/4 leaves 7"
    assert choice_counts(tuned, "full").empty


def test_inconclusive_rows_say_whether_the_data_could_show_the_effect():
    from camdf.reporting.tables.claims import Row, power_text
    small = Row("a", "s", "c", "stat", "inconclusive", mdd=0.02, effect=-0.013)
    large = Row("a", "s", "c", "stat", "inconclusive", mdd=0.02, effect=0.03)
    assert power_text(small).startswith("no: the observed 0.013 is below the MDD 0.020")
    assert power_text(large).startswith("yes: the observed 0.030 is at least the MDD 0.020")
    assert power_text(Row("a", "s", "c", "stat", "holds", mdd=0.02, effect=0.03)) == ""
