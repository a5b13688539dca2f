"""A sweep's lambda curves: each method's payoff along lambda, one series per facet, steps lambda x 1000."""

import pandas as pd

from camdf.reporting.sweep_report import LAMBDA_STEP, MAX_FACETS, lambda_curves


def _cell(lam: float, d: float, **extra) -> dict:
    return {"run_id": f"{lam}-{d}", "p:cost.lam": str(lam), "p:cost.d": str(d), "p:paths.data_dir": f"/m/{lam}",
            "m:camdf/payoff_mean": 1 - lam, "m:camdf/payoff_ci_low": 0.9 - lam, "m:camdf/payoff_ci_high": 1.1 - lam,
            "m:full/payoff_mean": 1 - 2 * lam, **extra}


def test_a_lambda_x_d_grid_gives_one_curve_per_method_and_d_with_camdf_s_ci():
    cells = pd.DataFrame([_cell(lam, d) for d in (0.0, 1.0) for lam in (0.3, 0.04, 0.12)])
    curves = lambda_curves(cells)
    assert sorted(curves) == [f"Sweep/cost.d {d}/{m}" for d in ("0.0", "1.0")
                              for m in ("camdf", "camdf_ci_high", "camdf_ci_low", "full")]
    assert curves["Sweep/cost.d 1.0/full"] == [(40, 1 - 0.08), (120, 1 - 0.24), (300, 1 - 0.6)]  # sorted by lambda
    assert all(step == round(lam * LAMBDA_STEP) for step, lam in zip((40, 120, 300), (0.04, 0.12, 0.3)))


def test_another_varying_key_splits_the_curves_and_a_missing_value_is_left_out():
    cells = pd.DataFrame([_cell(lam, 1.0, **{"p:scorer.label": s, "m:full/payoff_mean": None if s == "dense" and
                                             lam == 0.3 else 0.5}) for s in ("bm25", "dense") for lam in (0.04, 0.3)])
    curves = lambda_curves(cells)
    assert "Sweep/cost.d 1.0 scorer.label bm25/camdf" in curves
    assert curves["Sweep/cost.d 1.0 scorer.label dense/full"] == [(40, 0.5)]


def test_one_lambda_or_too_many_facets_gives_no_curves():
    assert lambda_curves(pd.DataFrame([_cell(0.12, d) for d in (0.0, 1.0)])) == {}
    many = pd.DataFrame([_cell(lam, 1.0, **{"p:seed": str(s)}) for lam in (0.04, 0.12) for s in range(MAX_FACETS + 1)])
    assert lambda_curves(many) == {}
