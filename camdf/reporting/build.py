"""Build every registered table and figure the store supports into outputs/tables/, the README and a ``tables`` run.

The tables are written as a set (:func:`write_set`): staged in a sibling folder, then moved in,
with a manifest of what the build wrote; only files a previous build listed are ever replaced,
a table this build could not make is kept from the previous one, and a build killed at any
point leaves a complete set (the previous one, or the new one once its staging was complete).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from camdf.common.files import write_atomic
from camdf.reporting.evidence import Evidence, gather
from camdf.reporting.experiment_cells import ExperimentCells, all_keys
from camdf.reporting.findings import headlines
from camdf.reporting.readme import results_markdown, update_readme
from camdf.reporting.registry import tables as declared_tables
from camdf.reporting.report import Report
from camdf.reporting.store import runs_frame
from camdf.reporting.tables.base import Figure, TableSpec


def build_all(evidence: Evidence, main: dict, tables: tuple[TableSpec, ...] | None = None
              ) -> tuple[list[Report], dict[str, bytes], list[str]]:
    """Every declared table and figure the evidence can support, in table order.

    Parameters
    ----------
    evidence : Evidence
        Every sweep's cells, selected once (:func:`camdf.reporting.evidence.gather`).
    main : dict
        The ``main`` block of ``conf/tables.yaml``.
    tables : tuple of TableSpec
        What to build (default: every declared table, :func:`camdf.reporting.registry.tables`).

    Returns
    -------
    reports : list of Report
    figures : dict file name -> PNG bytes
    missing : list of str
        What could not be built and why (a table whose runs are not in the store); each
        variant of a table (e.g. one ranking source) is built or skipped on its own.
    """
    reports, figures, missing = [], {}, []
    for spec in declared_tables() if tables is None else tables:
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


#: The manifest of a tables folder: the files the last build wrote or kept (JSON ``{"files": [...]}``).
MANIFEST = ".camdf-tables.json"


def _staging(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.staging"


def _listed(folder: Path) -> list[str]:
    """The file names a manifest in ``folder`` lists (plain names only; none without a readable manifest)."""
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [f for f in files if isinstance(f, str) and f and Path(f).name == f and not f.startswith(".")]


def _commit(out_dir: Path, staging: Path) -> None:
    """Move a complete staging folder's files into ``out_dir``, its manifest last (each move atomic); a listed
    file not in the staging folder is one kept from the previous set."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in _listed(staging):
        if (staging / name).is_file():
            os.replace(staging / name, out_dir / name)  # replaces a link named so, never writes through it
    os.replace(staging / MANIFEST, out_dir / MANIFEST)
    staging.rmdir()


def _recover(out_dir: Path) -> None:
    """Finish what a killed build left: a staging folder with its manifest is moved in (it was complete); one
    without is dropped (only the regular files a build writes there are removed)."""
    staging = _staging(out_dir)
    if staging.is_symlink() or not staging.is_dir():
        return
    if (staging / MANIFEST).is_file():
        _commit(out_dir, staging)
        return
    for entry in staging.iterdir():
        if entry.is_file() and not entry.is_symlink() and entry.suffix in (".md", ".csv", ".tex", ".png", ".tmp"):
            entry.unlink()
    try:
        staging.rmdir()
    except OSError:  # something else is in it: not ours to remove
        pass


def write_set(out_dir, files: dict[str, bytes | str]) -> tuple[list[Path], list[str]]:
    """Write ``files`` (name -> content) into ``out_dir`` as one set; returns the paths written and the names kept.

    The files are staged in a sibling folder (``.<name>.staging``) with a manifest, then moved into
    ``out_dir`` and the manifest moved last. A file the previous build's manifest lists that this
    build does not write (its table had no matching cells) is kept, and listed again. Nothing
    else in ``out_dir`` is touched (a user's own files stay), and ``out_dir`` must be a real
    folder, not a link (ValueError naming it).
    """
    out_dir = Path(out_dir)
    for folder in (out_dir, _staging(out_dir)):
        if folder.is_symlink():
            raise ValueError(f"{folder}: is a symbolic link (to {os.readlink(folder)}); the tables are written "
                             "only into a real folder (remove the link)")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"{out_dir}: is a file, expected the tables folder")
    _recover(out_dir)
    kept = [n for n in _listed(out_dir) if n not in files and (out_dir / n).is_file()]
    staging = _staging(out_dir)
    staging.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (staging / name).write_bytes(data)
        os.chmod(staging / name, 0o644)
    if files:
        for name in files:  # on disk before the manifest is: a staging folder with a manifest is complete
            with open(staging / name, "rb") as fh:
                os.fsync(fh.fileno())
    # The manifest lists the kept files too (they are not in the staging folder, so stay where they are).
    write_atomic(staging / MANIFEST, json.dumps({"files": sorted([*files, *kept])}, indent=1) + "\n")
    _commit(out_dir, staging)
    return [out_dir / n for n in files], sorted(kept)


def from_store(tracker, main: dict, cells: ExperimentCells | None = None, tables: tuple[TableSpec, ...] | None = None
               ) -> tuple[Evidence, list[Report], dict[str, bytes], list[str]]:
    """The evidence, tables, figures and skipped tables of the store's cells of the experiments ``cells``
    (:func:`camdf.pipeline.sweeps.experiment_keys`; None: every cell run, and no experiment's cells by key)."""
    runs = runs_frame(tracker)
    keys = all_keys(cells)
    if keys is not None and not runs.empty:
        runs = runs[runs["t:cell_key"].isin(keys)].reset_index(drop=True)
    evidence = gather(runs, main, tracker, cells=cells)  # the tracker: the tables read the cells' outcomes too
    reports, figures, missing = build_all(evidence, main, tables)
    return evidence, reports, figures, missing


def results_body(tracker, main: dict, cells: ExperimentCells | None, stamp: str | None, commit: str | None = None,
                 tables: tuple[TableSpec, ...] | None = None) -> str | None:
    """The Results page's generated block as the tables stage writes it (None: the store supports no table)."""
    evidence, reports, _, _ = from_store(tracker, main, cells, tables)
    if not reports:
        return None
    return results_markdown(reports, "make reproduce", headlines(evidence, main, reports), stamp, commit)


def build_tables(tracker, main: dict, out_dir, readme=None, cells: ExperimentCells | None = None,
                 stamp: str | None = None, commit: str | None = None, tables: tuple[TableSpec, ...] | None = None
                 ) -> tuple[list, list[str]]:
    """Build every table and figure from the store into ``out_dir`` (and the README's Results).

    ``cells``: the cells the tables may read, by experiment and cell key (the cells of the tables'
    experiments at the current code and data, :func:`camdf.pipeline.sweeps.experiment_keys`, whose code
    version ``stamp`` the README Results carry); any other
    run in the store (a smoke grid, an ad-hoc sweep, an older code version) is ignored.
    The files are written as a set (:func:`write_set`): a table this build cannot make (no
    matching cells) keeps its previous files, and the returned messages say so.
    Figures and every table (markdown and CSV, the claims table among them) are also logged to a
    ``tables`` run of the tracker's experiment, one per code version ``stamp``: a build at the same
    version updates it (its files are replaced), so the UI shows the latest ones and no duplicates.
    """
    out_dir = Path(out_dir)
    evidence, reports, figures, missing = from_store(tracker, main, cells, tables)
    files: dict[str, bytes | str] = {}
    for report in reports:
        files.update(report.files())
    files.update(figures)
    written, kept = write_set(out_dir, files)
    stems: dict[str, list[str]] = {}
    for name in kept:
        stems.setdefault(Path(name).stem, []).append(name)
    for stem, names in stems.items():
        missing.append(f"kept the previous {', '.join(names)} (this build made no new {stem}: no matching cells)")
    if readme is not None and reports:
        text = Path(readme).read_text(encoding="utf-8")
        body = results_markdown(reports, "make reproduce", headlines(evidence, main, reports), stamp, commit)
        Path(readme).write_text(update_readme(text, body), encoding="utf-8")
        written.append(Path(readme))
    if figures or reports:
        files = {f"figures/{k}": v for k, v in figures.items()}
        for report in reports:  # every table (the claims table among them) as markdown, CSV and HTML
            files[f"tables/{report.name}.md"] = report.to_markdown().encode()
            files[f"tables/{report.name}.csv"] = report.to_csv().encode()
            files[f"tables/{report.name}.html"] = report.to_html().encode()  # the UI renders it whole
        # One tables run per code version, updated by each build at that version (not one per build).
        with tracker.kind_run("tables", f"tables {stamp or ''}".strip(),
                              {"code_version": str(stamp or "unversioned")}, same=("code_version",)) as run:
            tracker.log_files(run.info.run_id, files)
    return written, missing
