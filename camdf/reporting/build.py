"""Build every table and figure the store supports into outputs/tables/, the README and a ``tables`` run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from camdf.reporting.claims import claims
from camdf.reporting.figures import figure_payoff_vs_tools, heatmap_png
from camdf.reporting.findings import headlines
from camdf.reporting.readme import results_markdown, update_readme
from camdf.reporting.report import Report
from camdf.reporting.store import runs_frame
from camdf.reporting.tables import (
    a18, a19, a20, a20_lambda, a21, a24, a25, a26, cross_domain, family_verdict, table2,
)

def build_all(runs: pd.DataFrame, main: dict) -> tuple[list[Report], dict[str, bytes], list[str]]:
    """Every table and figure the store can support.

    Returns
    -------
    reports : list of Report
    figures : dict file name -> PNG bytes
    missing : list of str
        What could not be built and why (a table whose runs are not in the store).
    """
    reports, figures, missing = [], {}, []
    builders = [
        ("table2", lambda: table2(runs, main)),
        *[(f"table2_{s}", lambda s=s: table2(runs, main, s)) for s in main.get("table2_scorers", ())
          if s != main["scorer"]],
        ("a18", lambda: a18(runs, main)),
        ("a19", lambda: a19(runs, main)),
        ("a20", lambda: a20(runs, main)),
        *[(f"a20_{s}", lambda s=s: a20(runs, main, s)) for s in main.get("table2_scorers", ()) if s != main["scorer"]],
        ("a20_lambda", lambda: a20_lambda(runs, main)),
        ("a21", lambda: a21(runs, main)),
        ("a22", lambda: cross_domain(runs, main, "exact")),
        ("a23", lambda: cross_domain(runs, main, "partial")),
        ("a24", lambda: a24(runs, main)),
        ("a25", lambda: a25(runs, main)),
        ("a26", lambda: a26(runs, main)),
        ("family", lambda: family_verdict(runs, main)),
        ("claims", lambda: claims(runs, main)),
    ]
    for name, build in builders:
        try:
            out = build()
        except LookupError as err:
            missing.append(str(err))
            continue
        if isinstance(out, tuple):
            report, long = out
            figures[f"{name}_heatmap.png"] = heatmap_png(long, report.title)
            reports.append(report)
        else:
            reports += out if isinstance(out, list) else [out]
    try:
        figures["payoff_vs_tools.png"] = figure_payoff_vs_tools(runs, main)
    except LookupError as err:
        missing.append(str(err))
    return reports, figures, missing


def build_tables(tracker, main: dict, out_dir, readme=None, keys: set[str] | None = None,
                 stamp: str | None = None) -> tuple[list, list[str]]:
    """Build every table and figure from the store into ``out_dir`` (and the README's Results).

    ``keys``: the cell keys the tables may read (the cells of the tables' experiments at
    the current code and data, :func:`camdf.pipeline.sweeps.experiment_keys`, whose code version
    ``stamp`` the README Results carry); any other
    run in the store (a smoke grid, an ad-hoc sweep, an older code version) is ignored.
    Figures and every table (markdown and CSV, the claims table among them) are also logged to a
    ``tables`` run of the tracker's experiment, one per code version ``stamp``: a build at the same
    version updates it (its files are replaced), so the UI shows the latest ones and no duplicates.
    """
    out_dir = Path(out_dir)
    runs = runs_frame(tracker)
    if keys is not None and not runs.empty:
        runs = runs[runs["t:cell_key"].isin(keys)].reset_index(drop=True)
    reports, figures, missing = build_all(runs, main)
    if out_dir.is_dir():  # a table the store no longer supports must not linger from an older build
        for old in out_dir.iterdir():
            if old.suffix in (".md", ".csv", ".tex", ".png"):
                old.unlink()
    written = []
    for report in reports:
        written += report.write(out_dir)
    for name, png in figures.items():
        path = out_dir / name
        path.write_bytes(png)
        written.append(path)
    if readme is not None and reports:
        text = Path(readme).read_text(encoding="utf-8")
        body = results_markdown(reports, "make reproduce", headlines(runs, main), stamp)
        Path(readme).write_text(update_readme(text, body), encoding="utf-8")
        written.append(Path(readme))
    if figures or reports:
        files = {f"figures/{k}": v for k, v in figures.items()}
        for report in reports:  # every table (the claims table among them) as markdown and CSV
            files[f"tables/{report.name}.md"] = report.to_markdown().encode()
            files[f"tables/{report.name}.csv"] = report.to_csv().encode()
        # One tables run per code version, updated by each build at that version (not one per build).
        with tracker.kind_run("tables", f"tables {stamp or ''}".strip(),
                              {"code_version": str(stamp or "unversioned")}, same=("code_version",)) as run:
            tracker.log_files(run.info.run_id, files)
    return written, missing
