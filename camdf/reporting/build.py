"""Build every registered table and figure the store supports into outputs/tables/, the README and a ``tables`` run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from camdf.reporting.evidence import Evidence, gather
from camdf.reporting.findings import headlines
from camdf.reporting.readme import results_markdown, update_readme
from camdf.reporting.registry import TABLES
from camdf.reporting.report import Report
from camdf.reporting.store import runs_frame
from camdf.reporting.tables.base import Figure, TableSpec


def build_all(evidence: Evidence, main: dict, tables: tuple[TableSpec, ...] = TABLES
              ) -> tuple[list[Report], dict[str, bytes], list[str]]:
    """Every registered table and figure the evidence can support, in registry order.

    Parameters
    ----------
    evidence : Evidence
        Every sweep's cells, selected once (:func:`camdf.reporting.evidence.gather`).
    main : dict
        The ``main`` block of ``conf/tables.yaml``.
    tables : tuple of TableSpec
        What to build (default: :data:`camdf.reporting.registry.TABLES`).

    Returns
    -------
    reports : list of Report
    figures : dict file name -> PNG bytes
    missing : list of str
        What could not be built and why (a table whose runs are not in the store); each
        variant of a table (e.g. one ranking source) is built or skipped on its own.
    """
    reports, figures, missing = [], {}, []
    for spec in tables:
        for variant in spec.variants(main):
            try:
                out = spec.build(evidence, main, **variant)
            except LookupError as err:
                missing.append(str(err))
                continue
            for item in out if isinstance(out, (list, tuple)) else [out]:
                if isinstance(item, Figure):
                    figures[item.name] = item.png
                else:
                    reports.append(item)
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
    evidence = gather(runs, main, tracker)  # the tracker: the tables read the cells' outcomes and tuned.csv too
    reports, figures, missing = build_all(evidence, main)
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
        body = results_markdown(reports, "make reproduce", headlines(evidence, main, reports), stamp)
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
