"""The claims table's verdict rules on hand-built store rows."""

import pandas as pd

from camdf.reporting.tables.claims import FAILS, HOLDS, UNSURE, claim_a, claims
from camdf.reporting.evidence import gather

from .cells import by_experiment

MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0,
        "methods": ["camdf", "camdf_lite", "full", "none", "best_prefix"],
        "grid_methods": ["camdf", "predict_threshold", "score_per_cost", "full"], "noise_methods": ["camdf"],
        "ablation_methods": ["camdf", "camdf_lite"], "risk_methods": ["camdf_risk", "full"]}


def _row(key, methods, diffs, payoffs, **params):
    """One FINISHED cell: ``diffs[m] = (method - camdf mean, lo, hi)`` as summarize_cell logs them."""
    p = {"domain.name": "retail", "scorer.label": "bm25", "cost.regime": "schema_tokens", "cost.lam": "0.12",
         "cost.d": "1.0", "seed": "0", "payoff": "exact", "label_noise": "0.0", "label_source": "data",
         "folds.protocol": "kfold", "folds.n_folds": "5", "method.names": str(methods), "list_cost": "None",
         "stats.delta": "0.05"}
    p.update(params)
    row = {"run_id": key, "start": len(key), "t:cell_key": key, **{f"p:{k}": v for k, v in p.items()}}
    for m, v in payoffs.items():
        row[f"m:{m}/payoff_mean"] = v
    for m, (d, lo, hi) in diffs.items():
        row.update({f"m:{m}/diff_vs_ref": d, f"m:{m}/diff_vs_ref_ci_low": lo, f"m:{m}/diff_vs_ref_ci_high": hi})
    row["m:cell/degenerate"] = 0.0
    return row


def _main(camdf_vs_full):
    d = camdf_vs_full
    row = _row("main", MAIN["methods"], {"full": (-d[0], -d[2], -d[1]), "camdf_lite": (-0.01, -0.02, -0.005),
                                         "none": (-0.3, -0.35, -0.25), "best_prefix": (0.1, 0.05, 0.15)},
               {"camdf": 0.3, "camdf_lite": 0.29, "full": 0.3 - d[0], "none": 0.0, "best_prefix": 0.4})
    row["m:camdf/fewer_tools_vs_full_pct"] = 40.0
    return row


def test_claim_a_holds_only_when_camdf_beats_every_deployable_method_with_ci():
    win = pd.Series(_main((0.05, 0.02, 0.08)))
    assert claim_a(win)[0] == HOLDS
    assert claim_a(pd.Series(_main((0.05, -0.01, 0.08))))[0] == UNSURE
    assert claim_a(pd.Series(_main((-0.05, -0.08, -0.02))))[0] == FAILS


def test_table_has_a_row_per_claim_with_evidence_and_a_stated_rule():
    main = _main((0.05, 0.02, 0.08))
    main.update({"m:camdf/noninferior_vs_full": 1.0, "m:camdf/success": 0.8, "m:full/success": 0.82,
                 "m:camdf/tost_p_vs_full": 0.01})
    grid = []
    for lam in ("0.12", "0.2"):
        for d, ci in (("1.0", (0.02, 0.04)), ("0.0", (-0.01, 0.01))):
            diffs = {m: (-(ci[0] + ci[1]) / 2, -ci[1], -ci[0]) for m in ("predict_threshold", "score_per_cost", "full")}
            grid.append(_row(f"g{lam}{d}", MAIN["grid_methods"], diffs, {"camdf": 0.3, "predict_threshold": 0.27,
                                                                           "score_per_cost": 0.28, "full": 0.2},
                             **{"cost.lam": lam, "cost.d": d}))
    behind = {m: (0.03, 0.02, 0.04) for m in ("predict_threshold", "score_per_cost", "full")}  # CAM-DF worse
    grid.append(_row("g0.3-0.5", MAIN["grid_methods"], behind, {"camdf": 0.3, "predict_threshold": 0.33,
                                                                "score_per_cost": 0.33, "full": 0.33},
                     **{"cost.lam": "0.3", "cost.d": "0.5"}))
    report = claims(gather(pd.DataFrame([main, *grid]), MAIN, cells=by_experiment(table2=[main], a18=grid)), MAIN)
    frame = report.frame
    assert set(frame.index) >= {"a (bm25, kfold folds)", "b", "c", "d (bm25)", "e (bm25)", "g"}
    assert frame.index.is_unique
    assert frame.loc["b", "verdict"] == HOLDS            # both d >= 1, lambda >= 0.12 cells favour CAM-DF
    assert frame.loc["g", "verdict"] == FAILS            # only 2 of 5 grid cells favour CAM-DF: not more than half
    # (c) reads the whole grid: at lambda 0.12 alone it would be inconclusive (one cell above 0, one covering 0),
    # but CAM-DF is behind predict-then-threshold at lambda 0.3, d 0.5.
    assert frame.loc["c", "verdict"] == FAILS and "lambda x d grid: 5 non-degenerate cells" in frame.loc["c", "evidence cells"]
    assert frame.loc["d (bm25)", "verdict"] == HOLDS            # 40% fewer tools, TOST non-inferior
    assert frame.loc["e (bm25)", "verdict"] == HOLDS            # lite keeps 0.04 of CAM-DF's 0.05 gain over full
    assert "Rules:" in report.note


def test_claim_a_counts_the_peers_and_our_rules_as_rivals():
    """A peer (static_set) that beats CAM-DF makes (a) fail, even where every paper baseline loses to CAM-DF."""
    methods = [*MAIN["methods"], "static_set", "cv_set"]
    row = _main((0.05, 0.02, 0.08))
    row["p:method.names"] = str(methods)
    row.update({"m:static_set/payoff_mean": 0.38, "m:static_set/diff_vs_ref": 0.08,
                "m:static_set/diff_vs_ref_ci_low": 0.06, "m:static_set/diff_vs_ref_ci_high": 0.10,
                "m:cv_set/payoff_mean": 0.31, "m:cv_set/diff_vs_ref": 0.01,
                "m:cv_set/diff_vs_ref_ci_low": -0.01, "m:cv_set/diff_vs_ref_ci_high": 0.03})
    verdict, stat, c = claim_a(pd.Series(row))
    assert verdict == FAILS and "closest/best rival static_set" in stat
    assert "rivals: 5 deployable methods (3 of the paper's baselines, 2 of ours and the peers)" in stat


def test_fold_seeds_give_each_main_cell_claim_its_verdict_under_every_seed():
    """The main cells re-run at other fold seeds (experiment fold_seeds): a claim that reads them shows its verdict
    under each seed, and one that flips is marked; claims over cells run at the main seed alone show nothing."""
    main = _main((0.05, 0.02, 0.08))                       # seed 0: CAM-DF beats full access
    same = {**_main((0.04, 0.01, 0.07)), "run_id": "s100", "t:cell_key": "s100", "p:seed": "100"}
    flip = {**_main((0.01, -0.02, 0.04)), "run_id": "s200", "t:cell_key": "s200", "p:seed": "200"}  # CI covers 0
    grid = [_row("g", MAIN["grid_methods"], {m: (-0.03, -0.04, -0.02) for m in ("predict_threshold", "score_per_cost",
                                                                             "full")},
                 {"camdf": 0.3, "predict_threshold": 0.27, "score_per_cost": 0.27, "full": 0.27})]
    runs = pd.DataFrame([main, same, flip, *grid])
    evidence = gather(runs, MAIN, cells=by_experiment(table2=[main], fold_seeds=[same, flip], a18=grid))
    assert sorted(evidence.fold_seeds) == [100, 200]
    assert list(evidence.at_fold_seed(100).main["run_id"]) == ["s100"] and evidence.at_fold_seed(100).grid.empty
    frame = claims(evidence, MAIN).frame
    col = "verdict under other fold seeds"
    a = frame.loc["a (bm25, kfold folds)", col]
    assert a == f"{HOLDS} / {HOLDS} / {UNSURE} (seeds 0 / 100 / 200): changes with the seed", a
    assert frame.loc["b", col] == ""                         # the grid ran at the main seed alone
    # The main cell's own verdict is the seed-0 one: the other seeds' cells never stand in for it.
    assert frame.loc["a (bm25, kfold folds)", "verdict"] == HOLDS


def test_without_other_fold_seeds_the_column_is_empty():
    main = _main((0.05, 0.02, 0.08))
    frame = claims(gather(pd.DataFrame([main]), MAIN, cells=by_experiment(table2=[main])), MAIN).frame
    assert (frame["verdict under other fold seeds"] == "").all()


def test_a_grid_cell_where_every_method_pays_below_0_is_marked_and_left_out_of_the_counts():
    """At a high lambda every grid method can pay below 0 (none of them abstaining): the A18 table marks the cell,
    draws no dagger and counts it nowhere; claim (c) reads the other cells."""
    from camdf.reporting.tables.grid import a18

    main = _main((0.05, 0.02, 0.08))
    behind = {m: (0.03, 0.02, 0.04) for m in ("predict_threshold", "score_per_cost", "full")}
    grid = [_row("live", MAIN["grid_methods"], {m: (-0.03, -0.04, -0.02) for m in behind},
                 {"camdf": 0.3, "predict_threshold": 0.27, "score_per_cost": 0.27, "full": 0.27}),
            _row("poor", MAIN["grid_methods"], behind, {"camdf": -0.3, "predict_threshold": -0.27,
                                                         "score_per_cost": -0.27, "full": -0.9},
                 **{"cost.lam": "0.3", "cost.d": "0.5"})]
    evidence = gather(pd.DataFrame([main, *grid]), MAIN, cells=by_experiment(table2=[main], a18=grid))
    report = a18(evidence, MAIN)[0]
    assert report.frame.loc["0.3", "d=0.5"].endswith("(every method pays below 0)")
    assert not report.marks.loc["0.3", "d=0.5"]            # its CI excludes 0, yet it shows nothing
    assert "of 1 non-degenerate cells" in report.note and "every deployable method pays below 0" in report.note
    frame = claims(evidence, MAIN).frame
    # Counted, the poor cell would make (c) fail (predict-then-threshold ahead there); left out, (c) holds.
    assert frame.loc["c", "verdict"] == HOLDS and "1 non-degenerate cells" in frame.loc["c", "evidence cells"]
