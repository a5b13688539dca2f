"""Figures that cannot mislead: a sweep's heatmaps split by every key that varies (or refused), no signed zero,
A24 said once when it equals A18, and a payoff-vs-tools plot whose axis a far-off peer does not stretch."""

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from camdf.common.markdown import signed
from camdf.reporting.sweep_report import MAX_FACETS, facet_keys, grid_heatmaps
from camdf.reporting.figures import _cell_text, _payoff_limits, payoff_vs_tools_png
from camdf.reporting.report import Report
from camdf.reporting.tables.grid import grid_long, grids_equal


def _cell(scorer: str, lam: float, d: float, diff: float, **params) -> dict:
    """A cell run as :func:`camdf.reporting.store.cell_row` gives it (the params and metrics a heatmap reads)."""
    return {"run_id": f"{scorer}-{lam}-{d}", "p:domain.name": "retail", "p:scorer.name": scorer,
            "p:scorer.label": scorer, "p:scorer.params.b": "0.75" if scorer == "bm25" else None,
            "p:cost.lam": str(lam), "p:cost.d": str(d), "p:paths.data_dir": f"/machine/{scorer}",
            **{f"p:{k}": v for k, v in params.items()},
            "m:predict_threshold/diff_vs_ref": -diff, "m:predict_threshold/diff_vs_ref_ci_low": -diff - 0.01,
            "m:predict_threshold/diff_vs_ref_ci_high": -diff + 0.01, "m:predict_threshold/payoff_mean": 0.2,
            "m:camdf/payoff_mean": 0.2 + diff}


def _png(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


def test_a_sweep_over_two_scorers_gives_one_heatmap_per_scorer():
    # The table2 sweep: two scorers x two d at one lambda. Before, one heatmap kept the last cell of each
    # (lambda, d) and so mixed the scorers under a title naming neither, losing the bm25 cells.
    cells = pd.DataFrame([_cell(s, 0.12, d, diff) for s, diffs in (("bm25", (0.05, -0.02)), ("supervised", (0.3, 0.1)))
                          for d, diff in zip((0.0, 1.0), diffs)])
    assert facet_keys(cells.assign(lam=0, d=0)) == ["p:scorer.label"]  # name, label and b split alike: one key
    files, text = grid_heatmaps(cells, "sweep table2")
    assert sorted(files) == ["figures/heatmap_scorer.label=bm25.png", "figures/heatmap_scorer.label=supervised.png"]
    assert all(_png(png).size[0] > 300 for png in files.values())
    assert "one per scorer.label" in text and "heatmap_scorer.label=bm25.png" in text


def test_a_sweep_varying_only_lambda_and_d_keeps_its_single_heatmap():
    cells = pd.DataFrame([_cell("bm25", lam, d, 0.01 * lam) for lam in (0.04, 0.12) for d in (0.0, 1.0)])
    files, text = grid_heatmaps(cells, "sweep smoke")
    assert list(files) == ["figures/heatmap.png"] and "one per" not in text


def test_a_sweep_with_too_many_facets_is_refused_in_words():
    cells = pd.DataFrame([_cell("bm25", lam, 0.0, 0.01, seed=str(seed)) for lam in (0.04, 0.12)
                          for seed in range(MAX_FACETS + 1)])
    files, text = grid_heatmaps(cells, "sweep seeds")
    assert files == {} and "No heatmap" in text and "seed" in text and f"{MAX_FACETS + 1} combinations" in text


@pytest.mark.parametrize(("value", "digits", "text"), [(-0.0004, 3, "0.000"), (0.0004, 3, "0.000"), (0.0, 2, "0.00"),
                                                       (-0.0123, 3, "-0.012"), (0.5, 2, "+0.50")])
def test_signed_never_prints_a_signed_zero(value, digits, text):
    assert signed(value, digits) == text


def test_heatmap_cells_show_the_digits_that_carry_a_mark():
    assert _cell_text(0.003, True) == "+0.003\u2020"  # not "+0.00†"
    assert _cell_text(-0.001, False) == "-0.001" and _cell_text(-0.0, False) == "0.00"
    assert _cell_text(-0.25, True) == "-0.25\u2020"


def test_reports_print_no_signed_zero_in_numbers_or_text():
    frame = pd.DataFrame({"payoff": [-0.0001, 0.25], "diff": ["-0.000 [-0.010, +0.000]", "x-0.000"]},
                         index=["a", "b"])
    md = Report("t", "t", frame).to_markdown()
    assert "| -0.000" not in md and "+0.000" not in md and "| 0.000 [-0.010, 0.000] |" in md
    assert "| 0.000 |" in md and "x-0.000" in md  # a word that ends in "-0.000" is not a number


def test_a24_equal_to_a18_cell_for_cell_is_detected():
    grid = pd.DataFrame([_cell("bm25", lam, d, 0.02) for lam in (0.04, 0.12) for d in (0.0, 1.0)])
    grid = grid.assign(lam=grid["p:cost.lam"].astype(float), d=grid["p:cost.d"].astype(float))
    for k in ("", "_ci_low", "_ci_high"):
        grid[f"m:score_per_cost/diff_vs_ref{k}"] = grid[f"m:predict_threshold/diff_vs_ref{k}"]
    grid["m:score_per_cost/payoff_mean"] = grid["m:predict_threshold/payoff_mean"]
    a18, a24 = grid_long(grid, "predict_threshold"), grid_long(grid, "score_per_cost")
    assert grids_equal(a18, a24) and a24.same_as.all()
    grid.loc[0, "m:score_per_cost/diff_vs_ref"] += 0.01
    assert not grids_equal(a18, grid_long(grid, "score_per_cost"))


def test_a_far_off_peer_does_not_stretch_the_payoff_axis():
    table = pd.DataFrame({"payoff_mean": [0.15, 0.16, 0.53, -0.32], "payoff_ci_low": [0.13, 0.16, 0.52, -0.40],
                          "payoff_ci_high": [0.16, 0.16, 0.55, -0.24], "n_exposed": [6.9, 7.0, 3.5, 5.0]},
                         index=["camdf", "full", "oracle_set", "top5"])
    lo, hi = _payoff_limits(table)
    assert 0.09 < lo < 0.13 and 0.55 < hi < 0.6  # the peer's -0.32 is left out of the axis
    image = np.asarray(_png(payoff_vs_tools_png(table, "retail")).convert("RGB"))
    assert image.shape[1] > 1000  # wide enough for the grouped legend beside the axes


def test_a_param_the_scorer_determines_adds_no_facet():
    cells = pd.DataFrame([_cell(s, lam, 0.0, 0.01) for s in ("bm25", "dense", "supervised") for lam in (0.04, 0.12)])
    cells["p:scorer.params.n_threads"] = np.where(cells["p:scorer.name"] == "dense", "2", None)
    assert facet_keys(cells) == ["p:scorer.label"]
    files, _ = grid_heatmaps(cells, "sweep a21")
    assert len(files) == 3


def test_a24_equal_to_a18_draws_no_heatmap_of_its_own():
    """A24's heatmap was A18's pixel for pixel: when the grids are equal it is not drawn (its note says so)."""
    from types import SimpleNamespace

    from camdf.reporting.tables.grid import a18, a24

    grid = pd.DataFrame([_cell("bm25", lam, d, 0.02, **{"folds.n_folds": "3", "folds.protocol": "kfold"})
                         for lam in (0.04, 0.12) for d in (0.0, 1.0)])
    grid = grid.assign(lam=grid["p:cost.lam"].astype(float), d=grid["p:cost.d"].astype(float))
    for k in ("", "_ci_low", "_ci_high"):
        grid[f"m:score_per_cost/diff_vs_ref{k}"] = grid[f"m:predict_threshold/diff_vs_ref{k}"]
    grid["m:score_per_cost/payoff_mean"] = grid["m:predict_threshold/payoff_mean"]
    main = {"domain": "retail"}
    assert [type(o).__name__ for o in a18(SimpleNamespace(grid=grid), main)] == ["Report", "Figure"]
    same = a24(SimpleNamespace(grid=grid), main)
    assert [type(o).__name__ for o in same] == ["Report"] and "no heatmap of its own" in same[0].note
    grid.loc[0, "m:score_per_cost/payoff_mean"] += 0.01
    grid.loc[0, "m:score_per_cost/diff_vs_ref"] += 0.01
    assert [type(o).__name__ for o in a24(SimpleNamespace(grid=grid), main)] == ["Report", "Figure"]
