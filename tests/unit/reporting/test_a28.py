"""A28's selection, table, figure and claim row from hand-built catalog cell runs (the metrics the cell stage logs)."""

import pandas as pd
import pytest

from camdf.evaluation.summary import summarize_cell
from camdf.reporting.tables.claims import FAILS, HOLDS, rows_i
from camdf.reporting.evidence import Evidence, gather
from camdf.reporting.tables.a28 import a28, coverage_at
from camdf.reporting.tables.base import Figure

from .cells import by_experiment

METHODS = ["camdf", "plugin_set", "predict_threshold", "full", "oracle_set", "best_prefix"]
MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0,
        "catalog_methods": METHODS}


def _outcomes(gap: float) -> pd.DataFrame:
    """Forty tasks: predict_threshold pays 0.2, camdf 0.2 + gap (noisy), plugin_set 0.15, full -2, the oracles 0.9."""
    rows = []
    for i in range(40):
        for m, pay, k in (("camdf", 0.2 + gap + 0.05 * (-1) ** i, 2.5), ("plugin_set", 0.15, 2), ("predict_threshold", 0.2, 3),
                          ("full", -2.0, 20), ("oracle_set", 0.9, 2), ("best_prefix", 0.8, 2)):
            rows.append({"task_id": f"q{i}", "fold": i % 5, "method": m, "depth": -1, "n_exposed": k, "cost": 1.0,
                         "success": i % 4 != 0, "success_partial": 1.0, "covers_g": True, "payoff": pay})
    return pd.DataFrame(rows)


def _run(scorer: str, n: int, protocol: str, group_by: str, gap: float, start: int) -> dict:
    metrics, _ = summarize_cell(_outcomes(gap), n_resamples=200)
    row = {f"m:{k}": v for k, v in metrics.items()}
    row.update({f"m:ranking/coverage_at_depth_{k}": min(1.0, 0.2 * k) for k in range(1, 11)})
    row.update({"m:cell/n_tasks": 40.0, "m:cell/degenerate": 0.0, "run_id": f"r{start}", "start": start,
                "t:cell_key": f"k{start}", "p:domain.name": "stabletoolbench", "p:scorer.label": scorer,
                "p:cost.regime": "schema_tokens", "p:cost.lam": "0.12", "p:cost.d": "1.0", "p:seed": "0",
                "p:payoff": "exact", "p:label_noise": "0.0", "p:label_source": "data", "p:folds.protocol": protocol,
                "p:folds.group_by": group_by, "p:folds.n_folds": "5", "p:folds.repeats": "1",
                "p:candidates.top_k": str(n), "p:candidates.fit_depth": "16", "p:method.names": str(METHODS)})
    return row


def _evidence(gaps) -> Evidence:
    runs = [_run("bm25", n, proto, by, gap, i) for i, ((n, proto, by), gap) in
            enumerate(zip([(20, "kfold", "None"), (1000, "kfold", "None"), (20, "group", "meta.tool_group")], gaps))]
    other = {**_run("bm25", 20, "kfold", "None", 0.0, 9), "p:method.names": str(["camdf"])}  # another experiment's
    runs.append({**_run("bm25", 20, "kfold", "None", 0.0, 10), "p:candidates.top_k": "None"})  # no top-N cut
    return gather(pd.DataFrame([*runs, other]), MAIN, cells=by_experiment(a28=runs, table2=[other]))


def test_catalog_cells_are_the_top_n_cells_of_the_catalog_experiments():
    cells = _evidence([0.1, 0.1, 0.1]).catalog
    assert list(zip(cells["protocol"], cells["top_n"])) == [("group:tool_group", 20), ("kfold", 20), ("kfold", 1000)]


def test_a28_table_figure_and_claim_row():
    evidence = _evidence([0.1, 0.1, 0.1])
    out = a28(evidence, MAIN)
    frame = out[0].frame
    row = frame.loc["in-distribution (k-fold) / bm25 / N=1000"]
    assert row["best of ours"] == "camdf" and row["best tuned baseline"] == "predict_threshold"
    assert row["ours minus baseline"].startswith("+0.100 [")
    assert row["recall@N (G_x listed)"] == pytest.approx(0.75)  # full access covers 3 tasks in 4
    assert row["BoR coverage@k (k = tools)"] == pytest.approx(0.5)  # camdf exposes 2.5: coverage 0.2 per depth
    assert "Not run: none (every rule of Table 2 runs)" in out[0].note and "Full access here means exposing all N listed APIs" in out[0].note
    assert [o.name for o in out if isinstance(o, Figure)] == ["a28_payoff_vs_n.png"]
    assert out[1].png.startswith(b"\x89PNG")
    (claim,) = rows_i(evidence, MAIN, evidence.judge)
    assert claim.verdict == HOLDS and "in 3, neither in 0, is worse in 0" in claim.statistic
    (claim,) = rows_i(_evidence([0.1, -0.1, 0.1]), MAIN, evidence.judge)
    assert claim.verdict == FAILS


def test_no_catalog_cells_no_row_and_a_lookup_error():
    evidence = Evidence()
    assert rows_i(evidence, MAIN, evidence.judge) == []
    with pytest.raises(LookupError, match="experiment=a28"):
        a28(evidence, MAIN)


def test_coverage_interpolates_between_depths():
    run = pd.Series({"m:ranking/coverage_at_depth_1": 0.4, "m:ranking/coverage_at_depth_2": 0.6})
    assert coverage_at(run, 0.5) == pytest.approx(0.2) and coverage_at(run, 1.5) == pytest.approx(0.5)


def test_the_rankers_table_reads_each_rankers_largest_in_distribution_cut():
    from camdf.reporting.tables.a28 import a28_rankers

    evidence = _evidence([0.1, 0.1, 0.1])
    cells = evidence.catalog.copy()
    for col, value in (("recall_at_5", 0.6), ("coverage_at_20", 0.7), ("ndcg_at_10", 0.5)):
        cells[f"m:ranking/{col}"] = [value if n == 1000 else 0.1 for n in cells["top_n"]]
    report = a28_rankers(Evidence(catalog=cells), MAIN)
    row = report.frame.loc["bm25"]
    assert row["N"] == 1000 and row["recall@5"] == 0.6 and row["G_x in top 20"] == 0.7  # not the N = 20 cell's
    assert row["G_x in top N"] == pytest.approx(0.75)
    assert row["G_x in the top k best of ours exposes at N = 20"] == "0.500 (k = 2.50)"
    assert "G_x in top 20 >= 0.85: not met (0.700)" in report.note
    with pytest.raises(LookupError, match="experiment=a28"):
        a28_rankers(Evidence(), MAIN)
