"""A29's selection, table, figure and claim row (j) from hand-built recovery cells (the metrics and outcomes the
cell stage logs)."""

import io
from functools import cache

import numpy as np
import pandas as pd
import pytest

from camdf.evaluation.summary import summarize_cell
from camdf.reporting.artifacts import CellArtifacts
from camdf.reporting.evidence import Evidence, fallback_cells
from camdf.reporting.tables.a29 import a29
from camdf.reporting.tables.base import Figure
from camdf.reporting.tables.claims import FAILS, HOLDS, UNSURE, rows_j

METHODS = ["camdf_lite", "plugin_set", "fallback_set", "static_set", "none", "full", "best_prefix"]
MAIN = {"domain": "retail", "scorer": "bm25", "regime": "schema_tokens", "lam": 0.12, "d": 1.0, "seed": 0,
        "fallback_methods": METHODS}


def _outcomes(gap: float) -> pd.DataFrame:
    """Forty tasks in 2 repeats x 5 folds: none pays 0.2 (searching every task), fallback_set 0.2 + gap (noisy)."""
    rows = []
    for r in range(2):
        for i in range(40):
            for m, pay, k in (("camdf_lite", 0.15, 3), ("plugin_set", 0.2, 3), ("fallback_set", 0.2 + gap + 0.05 * (-1) ** i, 2),
                              ("static_set", 0.1, 4), ("none", 0.2, 0), ("full", 0.16, 7), ("best_prefix", 0.4, 3)):
                searched = m == "none" or (m == "fallback_set" and i % 4 == 0)
                rows.append({"task_id": f"q{i}", "fold": i % 5, "repeat": r, "method": m, "depth": -1, "n_exposed": k,
                             "cost": 1.0, "success": True, "success_partial": 1.0, "covers_g": not searched,
                             "payoff": pay, "searched": searched, "recovered": searched, "loaded": 3 * searched})
    return pd.DataFrame(rows)


@cache
def _summary(gap: float):
    outcomes = _outcomes(gap)
    return outcomes, summarize_cell(outcomes, n_resamples=200)[0]


def _run(scorer, cost, k, gap, start, aware=True, domain="retail"):
    outcomes, metrics = _summary(gap)
    row = {f"m:{key}": v for key, v in metrics.items()}
    row.update({"m:cell/n_tasks": 40.0, "m:cell/degenerate": 0.0, "run_id": f"r{start}", "start": start,
                "t:cell_key": f"k{start}", "p:domain.name": domain, "p:scorer.label": scorer,
                "p:cost.regime": "schema_tokens", "p:cost.lam": "0.12", "p:cost.d": "1.0", "p:seed": "0",
                "p:payoff": "recovery", "p:label_noise": "0.0", "p:label_source": "data", "p:folds.protocol": "kfold",
                "p:folds.n_folds": "5", "p:folds.repeats": "2", "p:method.names": str(METHODS),
                "p:search.cost": str(cost), "p:search.k": str(k), "p:search.noise": "0.0", "p:search.aware": str(aware)})
    return row, outcomes


def _evidence(gaps, aware_last=True, catalog=()):
    return _evidence_and_store(gaps, aware_last, catalog)[0]


def _evidence_and_store(gaps, aware_last=True, catalog=()):
    made = [_run("bm25", cost, 3, gap, i) for i, (cost, gap) in enumerate(zip([16.0, 1.0, 4.0], gaps))]
    made += [({**row, "p:candidates.top_k": "100"}, out) for row, out in
             (_run("bm25", cost, 3, gap, 10 + i, domain="stabletoolbench") for i, (cost, gap) in enumerate(catalog))]
    made.append(_run("bm25", 4.0, 3, -0.5, 3, aware=aware_last))
    made.append(({**_run("bm25", 4.0, 3, 0.0, 4)[0], "p:payoff": "exact"}, None))  # not a recovery cell
    store = {row["run_id"]: out for row, out in made if out is not None}

    def fetch(run_id, rel):
        buf = io.BytesIO()
        store[run_id].to_parquet(buf)
        return buf.getvalue()

    return Evidence(artifacts=CellArtifacts(fetch),
                    fallback=fallback_cells(pd.DataFrame([row for row, _ in made]), MAIN)), store


def test_fallback_cells_are_the_recovery_cells_sorted_by_k_and_price():
    cells = _evidence([0.1, 0.1, 0.1], aware_last=False).fallback
    assert list(zip(cells["search_cost"], cells["aware"])) == [(1.0, True), (4.0, True), (16.0, True), (4.0, False)]


def test_a29_table_figure_and_claim_row():
    evidence = _evidence([0.1, 0.1, 0.1], aware_last=False)
    out = a29(evidence, MAIN)
    frame = out[0].frame
    row = frame.loc["bm25 / S=4 / k=3"]
    assert row["minus defer everything"].startswith("0.100 [")
    assert row["searches per task"] == pytest.approx(0.25) and row["tools loaded by search"] == pytest.approx(0.75)
    assert row["defer everything: searches per task"] == pytest.approx(1.0)
    assert "bm25 / S=4 / k=3 / unaware" in frame.index
    assert [o.name for o in out if isinstance(o, Figure)] == ["a29_payoff_vs_search_cost.png"]
    assert out[1].png.startswith(b"\x89PNG")
    (claim,) = rows_j(evidence, MAIN, evidence.judge)  # the unaware cell is not counted
    assert claim.verdict == HOLDS and "in 3, neither in 0, is worse in 0" in claim.statistic
    assert np.isfinite(claim.mdd)


def test_claim_j_fails_when_deferring_beats_preloading_anywhere_and_is_open_on_a_tie():
    evidence = _evidence([0.1, -0.1, 0.1])
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    assert claim.verdict == FAILS  # the aware cell with gap -0.5 and the -0.1 one
    evidence = _evidence([0.1, 0.0, 0.1], aware_last=False)
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    assert claim.verdict == UNSURE and "neither in 1" in claim.statistic


def test_no_recovery_cells_no_row_and_a_lookup_error():
    evidence = Evidence()
    assert rows_j(evidence, MAIN, evidence.judge) == []
    with pytest.raises(LookupError, match="experiment=a29"):
        a29(evidence, MAIN)


def test_a29_on_two_domains_keeps_their_cells_apart_and_the_claim_counts_both():
    evidence = _evidence([0.1, 0.1, 0.1], aware_last=False, catalog=[(1.0, 0.1), (4.0, -0.1)])
    out = a29(evidence, MAIN)
    frame = out[0].frame
    assert "retail / bm25 / S=4 / k=3" in frame.index and "stabletoolbench / bm25 / S=4 / k=3" in frame.index
    assert len(frame) == 6  # 3 + the unaware retail cell + 2 catalog cells: none overwrites another
    assert "stabletoolbench at lambda = 0.12, d = 1.0, the ranker's top N = 100" in out[0].note
    assert out[1].png.startswith(b"\x89PNG")
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    assert claim.cells.startswith("retail, stabletoolbench: 5 cells") and claim.verdict == FAILS


def test_the_note_says_where_every_deployable_method_pays_less_than_nothing():
    from camdf.reporting.tables.a29 import below_zero

    cells = _evidence([0.1, 0.1, 0.1], aware_last=False, catalog=[(1.0, 0.1), (4.0, -0.1)]).fallback
    assert below_zero(cells) == []  # every cell has a method above 0 (the hand-built payoffs are ~0.2)
    poor = cells.copy()
    catalog = poor["p:domain.name"] == "stabletoolbench"
    for col in [c for c in poor.columns if c.endswith("/payoff_mean") and not c.startswith("m:best_prefix")]:
        poor.loc[catalog, col] = -0.3
    assert below_zero(poor) == ["stabletoolbench: every method but the oracle pays less than 0 (what exposing "
                                "nothing and not searching pays) in 2 of 2 cells"]


def test_off_scale_sets_aside_at_most_two_lines_far_below_the_rest():
    import numpy as np

    from camdf.reporting.tables.a29 import off_scale

    close = {m: np.array([0.3, 0.1, -0.2 * i]) for i, m in enumerate("abcde")}
    assert off_scale(close) == set()  # a spread of -0.8 to 0.3 is drawn whole
    far = {**close, "full": np.array([-5.0, -5.0, -5.0]), "none": np.array([-2.0, -6.0, -10.0])}
    assert off_scale(far) == {"full", "none"}  # two outliers found together, not each hidden by the other
    assert off_scale({**far, "worse": np.array([-20.0])}) == {"worse", "none"}  # the lowest two
    assert off_scale({"a": np.array([0.0]), "b": np.array([-9.0])}) == set()  # two lines: nothing to compare with


def test_a_cell_where_every_method_pays_below_0_is_marked_and_counts_toward_no_claim():
    """The catalog's recovery cells where every deployable method pays below 0 (each loses to exposing nothing):
    A29 marks them and claim (j) counts the other cells alone."""
    evidence = _evidence([0.1, 0.1, 0.1], aware_last=False, catalog=[(1.0, -0.1), (4.0, -0.1)])
    poor = evidence.fallback.copy()
    catalog = poor["p:domain.name"] == "stabletoolbench"
    for col in [c for c in poor.columns if c.endswith("/payoff_mean") and not c.startswith("m:best_prefix")]:
        poor.loc[catalog, col] = -0.3
    evidence = Evidence(artifacts=evidence.artifacts, fallback=poor)
    frame = a29(evidence, MAIN)[0].frame
    assert "stabletoolbench / bm25 / S=4 / k=3 (every method pays below 0)" in frame.index
    assert "retail / bm25 / S=4 / k=3" in frame.index  # retail's cells pay ~0.2: unmarked
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    # Before: 5 cells, FAILS (a catalog cell where deferring beat preloading); now the 3 retail cells alone.
    assert claim.cells.startswith("retail: 3 cells") and claim.verdict == HOLDS, claim
    assert claim.cells.endswith("(left out: 2 where every method pays below 0)"), claim.cells


def test_the_strongest_rival_may_be_a_rule_without_search_from_the_main_cell():
    """Claim (j) judges the fallback-aware set against the strongest rival, searching or not: here Table 2's main
    cell (the same tasks and folds, the exact payoff) holds a rule paying 0.5 without any search, above every rule
    with the search (defer everything pays 0.2), so the claim that read 3 wins against deferring now fails."""
    from camdf.reporting.tables.a29 import strongest_rival

    evidence, store = _evidence_and_store([0.1, 0.1, 0.1], aware_last=False)
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    assert claim.verdict == HOLDS and "the strongest rival per cell: none + search (3)" in claim.cells, claim.cells
    exact = _outcomes(0.1)
    exact = pd.concat([exact, exact[exact["method"] == "none"].assign(method="camdf_argmax", payoff=0.5)],
                      ignore_index=True)
    store["main"] = exact
    metrics = summarize_cell(exact, n_resamples=200)[0]
    main_row = {**{f"m:{key}": v for key, v in metrics.items()}, "run_id": "main", "p:domain.name": "retail",
                "p:scorer.label": "bm25", "p:folds.protocol": "kfold", "p:cost.lam": "0.12", "p:cost.d": "1.0",
                "p:seed": "0", "p:payoff": "exact"}
    evidence = Evidence(artifacts=evidence.artifacts, fallback=evidence.fallback, main=pd.DataFrame([main_row]))
    run = evidence.fallback.iloc[0]
    label, method, cell = strongest_rival(evidence, MAIN, run)
    assert (label, method, cell["run_id"]) == ("camdf_argmax, no search", "camdf_argmax", "main")
    (claim,) = rows_j(evidence, MAIN, evidence.judge)
    assert claim.verdict == FAILS and "camdf_argmax, no search (3)" in claim.cells, claim
    assert "is worse in 3" in claim.statistic
    frame = a29(evidence, MAIN)[0].frame
    assert frame.loc["bm25 / S=1 / k=3", "strongest rival (claim j)"] == "camdf_argmax, no search"
    assert frame.loc["bm25 / S=1 / k=3", "minus strongest rival"].startswith("-0.200 [")
    other = Evidence(artifacts=evidence.artifacts, fallback=evidence.fallback,
                     main=pd.DataFrame([{**main_row, "p:cost.lam": "0.06"}]))  # another lambda: not the same cell
    assert strongest_rival(other, MAIN, run)[0] == "none + search"
