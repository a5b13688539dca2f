"""Report rendering and README splicing on tiny hand-built tables."""

import pandas as pd
import pytest

from camdf.reporting.report import Report
from camdf.reporting.readme import update_readme
from camdf.reporting.store import select


def _report():
    frame = pd.DataFrame({"payoff": [0.5, 0.75], "note": ["a_b", "c"]}, index=pd.Index(["camdf", "full"], name="method"))
    marks = pd.DataFrame({"payoff": [True, False], "note": [False, False]}, index=frame.index)
    return Report("t", "Title 50%", frame, bold={"payoff": "max"}, marks=marks, digits=2, note="n")


def test_markdown_bolds_best_and_marks_significance():
    md = _report().to_markdown()
    assert "| camdf | 0.50 † | a_b |" in md
    assert "| full | **0.75** | c |" in md
    assert md.startswith("### Title 50%\n")


def test_latex_escapes_and_bolds():
    tex = _report().to_latex()
    assert r"\textbf{0.75}" in tex
    assert r"a\_b" in tex and r"Title 50\%" in tex
    assert r"0.50$^\dagger$" in tex


def test_write_is_byte_identical_twice(tmp_path):
    first = [p.read_bytes() for p in _report().write(tmp_path / "a")]
    second = [p.read_bytes() for p in _report().write(tmp_path / "b")]
    assert first == second
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["t.csv", "t.md", "t.tex"]


def test_update_readme_replaces_between_markers_only():
    text = "head\n<!-- results:start -->\nold\n<!-- results:end -->\ntail\n"
    assert update_readme(text, "new") == "head\n<!-- results:start -->\nnew\n<!-- results:end -->\ntail\n"
    with pytest.raises(ValueError, match="readme: markers"):
        update_readme("no markers", "x")


def test_select_keeps_the_latest_run_per_cell_key():
    runs = pd.DataFrame({
        "run_id": ["r1", "r2", "r3"], "start": [1, 3, 2], "t:cell_key": ["k", "k", "j"],
        "p:cost.lam": ["0.12", "0.12", "0.3"],
    })
    assert select(runs, cost__lam=0.12)["run_id"].tolist() == ["r2"]
    assert select(runs, missing__param=1).empty


def test_html_holds_every_row_escaped_with_bold_and_marks():
    """The MLflow UI's artifact pane showed 3 of Table 2's 22 rows of markdown; the HTML page holds them all."""
    import re

    frame = pd.DataFrame({"payoff": [0.1 * i for i in range(22)], "tools": [f"<{i}> & more" for i in range(22)]},
                         index=pd.Index([f"method_{i}" for i in range(22)], name="method"))
    marks = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    marks.iloc[3, 0] = True
    page = Report("t", "Table <2>", frame, note="a & b", bold={"payoff": "max"}, marks=marks).to_html()
    assert page.startswith("<!DOCTYPE html>") and "<title>Table &lt;2&gt;</title>" in page
    assert len(re.findall(r"<tr><th>method_\d+</th>", page)) == 22
    assert "<td><b>2.100</b></td>" in page and "<td>0.300 \u2020</td>" in page
    assert "&lt;5&gt; &amp; more" in page and "<5>" not in page and "<p>a &amp; b</p>" in page
