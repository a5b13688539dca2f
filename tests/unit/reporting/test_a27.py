"""A27's table, heatmap and claim row from hand-built cell runs (the metrics the cell stage logs)."""

import pandas as pd
import pytest

from camdf.evaluation.summary import summarize_cell
from camdf.reporting.tables.claims import HOLDS, UNSURE, rows_h
from camdf.reporting.evidence import Evidence
from camdf.reporting.tables.a27 import a27
from camdf.reporting.tables.base import Figure

MAIN = {"domain": "retail", "lam": 0.12, "d": 1.0}


def _outcomes(gap: float) -> pd.DataFrame:
    """Twenty tasks: predict_threshold pays 0.2, plugin_set 0.2 + gap (noisy), static_set 0.1, oracle_set 0.9."""
    rows = []
    for i in range(20):
        for m, pay in (("predict_threshold", 0.2), ("full", 0.0), ("plugin_set", 0.2 + gap + 0.05 * (-1) ** i),
                       ("static_set", 0.1), ("oracle_set", 0.9)):
            rows.append({"task_id": f"q{i}", "fold": i % 2, "method": m, "depth": -1, "n_exposed": 3, "cost": 1.0,
                         "success": True, "success_partial": 1.0, "covers_g": True, "payoff": pay})
    return pd.DataFrame(rows)


def _run(scorer: str, gap: float) -> pd.Series:
    metrics, _ = summarize_cell(_outcomes(gap), n_resamples=200)
    row = {f"m:{k}": v for k, v in metrics.items()}
    row.update({"p:domain.name": "retail", "p:scorer.label": scorer, "p:cost.lam": "0.12", "p:cost.d": "1.0",
                "p:folds.protocol": "kfold", "p:folds.n_folds": "5", "p:folds.repeats": "1"})
    return pd.Series(row)


@pytest.fixture
def evidence():
    main = pd.DataFrame([_run("bm25", 0.1), _run("supervised", 0.0)])
    grid = pd.DataFrame([_run("bm25", g).to_dict() | {"lam": lam, "d": d}
                         for g, (lam, d) in zip((0.1, 0.0, -0.1, 0.05), [(0.1, 0.0), (0.1, 1.0), (0.2, 0.0), (0.2, 1.0)])])
    empty = pd.DataFrame()
    return Evidence(main=main, ablations=empty, grid=grid, noise=empty, rankers=empty,
                    label_sources=empty, domains=empty, risk=empty)


def test_the_summary_logs_the_best_set_rule_minus_the_best_prefix_rule():
    metrics, table = summarize_cell(_outcomes(0.1), n_resamples=200)
    assert metrics["cell/set_minus_prefix"] == pytest.approx(0.1)
    assert metrics["cell/set_minus_prefix_ci_low"] > 0
    assert metrics["cell/set_minus_prefix_cv"] == pytest.approx(0.1)  # the same rules win on either fold
    assert table.loc["plugin_set", "is_best_set_rule"] == 1 and table.loc["predict_threshold", "is_best_prefix_rule"] == 1
    assert "is_best_set_rule" not in table or pd.isna(table.loc["oracle_set"].get("is_best_set_rule"))


def test_a27_table_heatmap_and_figures(evidence):
    out = a27(evidence, MAIN)
    report, figures = out[0], [o for o in out if isinstance(o, Figure)]
    frame = report.frame
    assert list(frame.index) == ["retail/bm25 (main cell)", "retail/supervised (main cell)"]
    assert frame.loc["retail/bm25 (main cell)", "best set rule"] == "plugin_set"
    assert frame.loc["retail/bm25 (main cell)", "best prefix rule"] == "predict_threshold"
    assert frame.loc["retail/bm25 (main cell)", "set minus prefix"].startswith("+0.100 [")
    assert {f.name for f in figures} == {"a27_heatmap.png", "a27_payoff_vs_tools_bm25.png",
                                         "a27_payoff_vs_tools_supervised.png"}
    assert all(f.png.startswith(b"\x89PNG") for f in figures)


def test_claim_h_per_ranker(evidence):
    rows = {r.claim: r for r in rows_h(evidence, MAIN, evidence.judge)}
    # Each kind's rule picked per fit on the other fold: plugin_set and predict_threshold in both fits.
    assert rows["h (bm25, kfold folds)"].verdict == HOLDS
    assert "set rule minus prefix rule, each picked per fit on its training tasks: +0.100" in rows["h (bm25, kfold folds)"].statistic
    assert rows["h (supervised, kfold folds)"].verdict == UNSURE


def test_the_headline_states_a27_at_the_main_cells(evidence):
    from camdf.reporting.findings import headlines

    from dataclasses import replace

    main = {**MAIN, "scorer": "bm25", "regime": "schema_tokens", "table2_scorers": ["bm25", "supervised"]}
    table = a27(evidence, MAIN)[0]  # the headline reads the built table, not the main cells again
    lines = headlines(replace(evidence, main=pd.DataFrame(), grid=pd.DataFrame()), main, [table])
    a27_line = next(line for line in lines if line.startswith("A27"))
    assert "retail/bm25: plugin_set minus predict_threshold +0.100 [" in a27_line
    assert "retail/supervised:" in a27_line and "on the other domains (A22)" in a27_line
