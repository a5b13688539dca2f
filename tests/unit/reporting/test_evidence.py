"""The evidence layer: each sweep selected once, the latest run of a cell counted, tables and claims agreeing."""

import pandas as pd
import pytest

from camdf.reporting.tables.claims import claims
from camdf.reporting.evidence import domain_cells, gather, main_cells
from camdf.reporting.tables.grid import a18

from .cells import by_experiment

MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0,
        "table2_scorers": ["bm25", "supervised"], "methods": ["camdf", "full", "none"],
        "grid_methods": ["camdf", "predict_threshold", "score_per_cost", "full"],
        "noise_methods": ["camdf"], "ablation_methods": ["camdf"], "risk_methods": ["camdf_risk"]}


def _run(key, start, methods, diff, **params):
    p = {"domain.name": "retail", "scorer.label": "bm25", "cost.regime": "schema_tokens", "cost.lam": "0.12",
         "cost.d": "1.0", "seed": "0", "payoff": "exact", "label_noise": "0.0", "label_source": "data",
         "folds.protocol": "kfold", "folds.n_folds": "5", "method.names": str(methods), "list_cost": "None"}
    p.update(params)
    lo, hi = diff - 0.01, diff + 0.01  # full minus camdf, as summarize_cell logs it
    row = {"run_id": f"{key}@{start}", "start": start, "t:cell_key": key, **{f"p:{k}": v for k, v in p.items()},
           "m:camdf/payoff_mean": 0.5, "m:camdf/fewer_tools_vs_full_pct": 40.0, "m:cell/degenerate": 0.0,
           "m:cell/headroom": 0.2, "p:folds.repeats": "1"}
    for m in ("full", "predict_threshold", "score_per_cost"):  # every rival: diff behind CAM-DF by ``diff``
        row.update({f"m:{m}/payoff_mean": 0.5 + diff, f"m:{m}/diff_vs_ref": diff, f"m:{m}/diff_vs_ref_ci_low": lo,
                    f"m:{m}/diff_vs_ref_ci_high": hi})
    return row


def test_a_rerun_cell_counts_once_and_tables_and_claims_read_the_same_run():
    grid = [_run("old", 1, MAIN["grid_methods"], 0.05, **{"cost.lam": "0.2"}),    # full beats CAM-DF ...
            _run("new", 2, MAIN["grid_methods"], -0.05, **{"cost.lam": "0.2"}),   # ... until the cell is rerun
            _run("other", 3, MAIN["grid_methods"], -0.05, **{"cost.lam": "0.3"})]
    main = _run("main", 0, MAIN["methods"], -0.05)
    evidence = gather(pd.DataFrame(grid + [main]), MAIN, cells=by_experiment(table2=[main], a18=grid))
    assert evidence.grid["run_id"].tolist() == ["new@2", "other@3"]
    report = a18(evidence, MAIN)[0]
    assert "(2 favour CAM-DF, 0 favour" in report.note.replace("predict_threshold", "")
    frame = claims(evidence, MAIN).frame
    assert "in 2;" in frame.loc["b", "statistic"] and frame.loc["b", "verdict"] == "holds"


def test_main_cells_one_per_scorer_and_protocol_kfold_first_scaled_costs_left_out():
    runs = pd.DataFrame([
        _run("g", 1, MAIN["methods"], 0.0, **{"folds.protocol": "group"}),
        _run("k", 2, MAIN["methods"], 0.0),
        _run("s", 3, MAIN["methods"], 0.0, **{"scorer.label": "supervised"}),
        _run("scaled", 4, MAIN["methods"], 0.0, list_cost="7.0"),
        _run("dense", 5, MAIN["methods"], 0.0, **{"scorer.label": "dense"}),
    ])
    cells = main_cells(runs, MAIN)
    assert cells["t:cell_key"].tolist() == ["k", "g", "s"]


def test_the_anchor_follows_the_cells_overrides_and_a_missing_cell_names_the_one_that_finds_it():
    from camdf.reporting.evidence import anchor_hints, anchored, main_cell

    split = _run("split", 1, MAIN["methods"], -0.05, **{"folds.protocol": "split", "domain.name": "shop"})
    runs = pd.DataFrame([split])
    main = anchored(MAIN, ["stats.n_resamples=500", "domain=shop", "cost.lam=0.12"])
    assert (main["domain"], main["protocol"], main["lam"]) == ("shop", "kfold", 0.12)
    cells = main_cells(runs, main)
    with pytest.raises(LookupError, match=r"kfold folds.*main\.protocol"):
        main_cell(cells, "Table 2", "bm25")
    assert anchor_hints(runs, main) == ["cell_overrides=['folds.protocol=split']"]
    main = anchored(MAIN, ["domain.name=shop", "folds.protocol=split", "cost.lam=0.04,0.12"])
    assert (main["protocol"], main["lam"]) == ("split", 0.12)  # a swept list fixes no anchor
    assert main_cell(main_cells(runs, main), "Table 2", "bm25")["run_id"] == "split@1"
    assert anchor_hints(runs, main) == []


def test_a22_domains_decide_over_their_whole_lists_a_top_n_cell_is_not_one():
    runs = pd.DataFrame([
        _run("tel", 1, MAIN["methods"], 0.0, **{"domain.name": "telecom", "candidates.top_k": "None"}),
        _run("cat", 2, MAIN["methods"], 0.0, **{"domain.name": "stabletoolbench", "candidates.top_k": "1000"}),
        _run("main", 3, MAIN["methods"], 0.0),
    ])
    assert domain_cells(runs, MAIN)["t:cell_key"].tolist() == ["tel"]


def test_a_cell_where_every_deployable_method_pays_below_0_decides_nothing():
    import pandas as pd

    from camdf.reporting.evidence import below_zero_everywhere, cell_marker, decides_nothing

    def cell(degenerate=0.0, **payoffs):
        return pd.Series({"m:cell/degenerate": degenerate, **{f"m:{m}/payoff_mean": v for m, v in payoffs.items()}})

    pays = cell(camdf=0.1, none=0.0, best_prefix=0.6)
    below = cell(camdf=-0.2, full=-1.0, best_prefix=0.6)  # the oracle's 0.6 is no decision anyone can take
    # A rule that reaches 0 by abstaining (none, or predict-then-threshold at depth 0) keeps the cell: it shows
    # which rules know to abstain (CAM-DF's -0.2 here loses to it).
    abstains = cell(camdf=-0.2, predict_threshold=0.0, full=-1.0)
    assert [below_zero_everywhere(c) for c in (pays, below, abstains, cell())] == [False, True, False, False]
    assert [decides_nothing(c) for c in (pays, below, abstains, cell(1.0, camdf=0.1))] == [False, True, False, True]
    assert [cell_marker(c) for c in (pays, below, cell(1.0, camdf=-0.1))] == [
        "", " (every method pays below 0)", " (degenerate)"]
