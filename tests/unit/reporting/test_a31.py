"""A28 over lambda and A31 (success for tokens) from hand-built cells: the metrics the cell stage logs and the
outcomes it stores, read through the same Evidence the tables stage builds."""

import io

import pandas as pd
import pytest

from camdf.evaluation.summary import summarize_cell
from camdf.reporting.artifacts import CellArtifacts
from camdf.reporting.evidence import gather
from camdf.reporting.tables.a28 import a28_lambda, solvable_success
from camdf.reporting.tables.a31 import a31
from camdf.reporting.tables.base import Figure

from .cells import by_experiment

MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0}
TASKS = 40


def _outcomes(plan: dict[str, tuple[float, float, object]], extra=None) -> pd.DataFrame:
    """One repeat of 5 folds over 40 tasks; ``plan``: method -> (tools = cost, payoff, which tasks succeed)."""
    rows = []
    for i in range(TASKS):
        for m, (k, pay, wins) in plan.items():
            rows.append({"task_id": f"q{i:02d}", "fold": i % 5, "repeat": 0, "method": m, "depth": -1,
                         "n_exposed": k, "cost": k, "success": bool(wins(i)), "success_partial": 1.0,
                         "covers_g": True, "payoff": pay + 0.01 * (i % 3), **(extra or {})})
    return pd.DataFrame(rows)


def _cell(run_id: str, outcomes: pd.DataFrame, **params) -> dict:
    metrics, _ = summarize_cell(outcomes, n_resamples=200)
    row = {f"m:{k}": v for k, v in metrics.items()}
    row.update({"m:cell/n_tasks": float(TASKS), "m:cell/degenerate": 0.0, "run_id": run_id, "start": len(run_id),
                "t:cell_key": f"key-{run_id}", "p:cost.regime": "schema_tokens", "p:cost.d": "1.0", "p:seed": "0",
                "p:payoff": "exact", "p:label_noise": "0.0", "p:label_source": "data", "p:folds.protocol": "kfold",
                "p:folds.n_folds": "5", "p:folds.repeats": "1", "p:scorer.label": "bm25",
                "p:method.names": str(sorted(set(outcomes["method"])))})
    row.update({f"p:{k.replace('__', '.')}": v for k, v in params.items()})
    return row


EVEN = lambda i: i % 2 == 0  # noqa: E731  the tasks a clairvoyant prefix solves
QUARTER = lambda i: i % 4 == 0  # noqa: E731  half of them
NEVER = lambda i: False  # noqa: E731


def _catalog_plan(lam: float) -> dict:
    """Ours exposes fewer APIs as lambda grows; the tuned fixed depth falls from 5 to 0."""
    depth = {0.01: 5.0, 0.05: 2.0, 0.12: 0.0}[lam]
    return {"camdf_argmax": (depth + 1, 0.3 - lam, QUARTER), "fixed_k": (depth, 0.25 - lam, QUARTER),
            "top5": (5.0, 0.2 - 5 * lam, QUARTER), "none": (0.0, 0.0, NEVER), "full": (100.0, 0.5 - 100 * lam, EVEN),
            "best_prefix": (2.0, 0.6, EVEN)}


def _evidence():
    store, runs = {}, {"a28_lambda": [], "a18": [], "table2": [], "a29": []}
    for lam in (0.05, 0.01, 0.12):  # not in lambda order: the table sorts them
        out = _catalog_plan(lam)
        run_id = f"cat{lam}"
        store[run_id] = _outcomes(out)
        runs["a28_lambda"].append(_cell(run_id, store[run_id], domain__name="stabletoolbench", cost__lam=str(lam),
                                        candidates__top_k="100", candidates__fit_depth="16"))
    for lam in (0.12, 0.01):  # a second ranker ("rerank", before bm25 in the store): ours finds every solvable task
        run_id = f"rr{lam}"
        store[run_id] = _outcomes({**_catalog_plan(lam), "camdf_argmax": (0.5, 0.4 - lam, EVEN)})
        runs["a28_lambda"].insert(0, _cell(run_id, store[run_id], domain__name="stabletoolbench", cost__lam=str(lam),
                                           candidates__top_k="100", candidates__fit_depth="16", scorer__label="rerank"))
    for lam, k in ((0.04, 4.0), (0.12, 2.0), (0.3, 1.0)):  # A18's retail grid at the main d
        run_id = f"grid{lam}"
        store[run_id] = _outcomes({"camdf": (k, 0.4, EVEN if k >= 2 else QUARTER), "predict_threshold": (k, 0.3, QUARTER),
                                   "full": (7.0, 0.1, EVEN), "best_prefix": (2.0, 0.6, EVEN)})
        runs["a18"].append(_cell(run_id, store[run_id], domain__name="retail", cost__lam=str(lam)))
    store["main"] = _outcomes({"camdf": (2.0, 0.4, EVEN), "top5": (5.0, 0.3, QUARTER), "full": (7.0, 0.1, EVEN)})
    runs["table2"].append(_cell("main", store["main"], domain__name="retail", cost__lam="0.12"))
    store["rec"] = _outcomes({"none": (0.5, 0.2, EVEN), "static_set": (3.0, 0.25, EVEN), "fallback_set": (2.0, 0.3, EVEN)},
                             extra={"searched": True, "recovered": True, "loaded": 3})
    runs["a29"].append(_cell("rec", store["rec"], domain__name="retail", cost__lam="0.12", payoff="recovery",
                             search__cost="1", search__k="5", search__noise="0.0", search__aware="True"))

    def fetch(run_id, rel):
        buf = io.BytesIO()
        store[run_id].to_parquet(buf)
        return buf.getvalue()

    frame = pd.DataFrame([r for rs in runs.values() for r in rs])
    return gather(frame, MAIN, artifacts=CellArtifacts(fetch), cells=by_experiment(**runs))


def test_a28_over_lambda_states_where_the_decision_moves_and_the_success_on_solvable_tasks():
    evidence = _evidence()
    table, fig = a28_lambda(evidence, MAIN)
    frame = table.frame
    # the main cell's ranker first, then the others; lambda ascending within each
    assert list(frame.index) == ["bm25 / lambda = 0.01", "bm25 / lambda = 0.05", "bm25 / lambda = 0.12",
                                 "rerank / lambda = 0.01", "rerank / lambda = 0.12"]
    assert list(frame["tuned fixed depth (fixed_k tools)"]) == [5.0, 2.0, 0.0, 5.0, 0.0]
    assert "moves from bm25 5.0 tools at lambda = 0.01 to 0.0 at 0.12; rerank 5.0 tools at lambda = 0.01" in table.note
    # bm25: ours succeeds on every fourth task, the clairvoyant prefix on every second: half of the solvable ones;
    # rerank: ours succeeds wherever the clairvoyant prefix does
    assert frame["success where the clairvoyant prefix succeeds"].tolist() == [0.5, 0.5, 0.5, 1.0, 1.0]
    assert (frame["best of ours"] == "camdf_argmax").all() and (frame["best tuned baseline"] == "fixed_k").all()
    assert frame.loc["bm25 / lambda = 0.01", "ours minus baseline"].startswith("+0.050 [")
    assert isinstance(fig, Figure) and fig.png.startswith(b"\x89PNG")


def test_solvable_success_is_nan_without_outcomes_or_the_oracle():
    evidence = _evidence()
    run = evidence.cells("a28_lambda").iloc[0]
    assert solvable_success(evidence, run, "nosuch") != solvable_success(evidence, run, "nosuch")  # nan
    assert solvable_success(evidence, run, "full") == 1.0  # full access holds the gold wherever a prefix does


def test_a31_compares_ours_at_no_more_cost_with_each_operating_point():
    evidence = _evidence()
    table, fig = a31(evidence, MAIN)
    frame = table.frame
    top5 = frame.loc["retail / fixed top-5 (a tool search's page)"]
    assert top5["its cost"] == 5.0 and top5["its success"] == 0.25
    # ours at no more than 5 tools: camdf succeeds on half the tasks at lambda 0.04 (4 tools) and 0.12 (2 tools); the
    # cheaper point of the two is named; the top-5 page succeeds on a quarter
    assert top5["best of ours at no more cost"] == "camdf at lambda = 0.12" and top5["success"] == 0.5
    assert top5["cost"] == 2.0
    assert top5["success difference"].startswith("+0.250 [") and top5["verdict"].startswith("ours higher")
    defer = frame.loc["retail / defer everything + search (S = 1, k = 5, tuned at lambda = 0.12)"]
    assert defer["best of ours at no more cost"] == "none: every rule of ours costs more at every lambda"
    assert "stabletoolbench / all listed tools" in frame.index
    catalog_top5 = frame.loc["stabletoolbench / fixed top-5 (a tool search's page)"]
    # the same success at 1, 3 and 6 APIs (lambda 0.12, 0.05, 0.01; 6 > 5 is out): the cheapest point
    assert catalog_top5["best of ours at no more cost"] == "camdf_argmax at lambda = 0.12" and catalog_top5["cost"] == 1.0
    # the catalog's frontier is the main ranker's alone: rerank's cheaper, surer point (0.5 APIs) is not on it
    assert catalog_top5["success"] == 0.25 and "stabletoolbench at lambda = 0.01, 0.05, 0.12 (d = 1.0, bm25)" in table.note
    assert "retail at lambda = 0.04, 0.12, 0.3" in table.note
    assert fig.png.startswith(b"\x89PNG")


def test_a31_without_either_sweep_is_a_lookup_error_naming_them():
    from camdf.reporting.evidence import Evidence

    with pytest.raises(LookupError, match="experiment=a28_lambda"):
        a31(Evidence(), MAIN)
