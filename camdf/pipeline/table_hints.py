"""What the tables stage says besides ``wrote``: skipped tables said once, and the override a user's grid lacks.

Two helpers of ``pipelines/tables.py``:

* :func:`asked_tables` narrows the registry to the tables of the experiments asked for
  (``experiments=[a18]`` builds A18, A24, ... and says nothing of A19); a grid of one's own
  (an experiment no table names, e.g. ``smoke``) may feed any table, so all are tried and the
  ones its cells cannot make are listed on one line (:func:`skip_lines`).
* :func:`override_hints`: when an experiment asked for has no cell at the overrides given, the
  store's cells of that experiment (tag ``experiment``) are compared param by param with the
  cells it would read, and the differing values are named as the ``cell_overrides`` that would
  find them (``folds.repeats=2``), for every kind of table, not only the main cell's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from camdf.reporting.tables.base import TableSpec

#: Params that never belong in a hint (bookkeeping and machine paths, not what a cell computed).
_NOT_HINTS = ("paths.", "tracking.", "hydra.")


def asked_tables(tables: Sequence[TableSpec], asked: Iterable[str] | None) -> tuple[tuple[TableSpec, ...], bool]:
    """The tables to build for the experiments ``asked`` (None: every table) and whether the skipped ones are
    said on one line (a grid of one's own: an experiment no table declares, whose cells may feed any)."""
    if not asked:
        return tuple(tables), False
    asked = set(asked)
    declared = {e for t in tables for e in t.experiments}
    if asked - declared:
        return tuple(tables), True
    return tuple(t for t in tables if asked & set(t.experiments)), False


def skip_lines(missing: list[str], one_line: bool) -> list[str]:
    """The ``skipped:`` lines: each table the cells could not make (``one_line``: all of them on one line,
    by name), then one line naming the tables whose previous files were kept."""
    kept = [m for m in missing if m.startswith("kept the previous ")]
    other = [m for m in missing if m not in kept]
    lines = [f"skipped: {m}" for m in other] if not one_line else []
    if one_line and other:
        names = list(dict.fromkeys(m.split(":", 1)[0] for m in other))
        lines.append(f"skipped: {len(names)} tables these cells do not make: {', '.join(names)}")
    if kept:
        stems = [m.split("made no new ", 1)[1].split(":", 1)[0] for m in kept if "made no new " in m]
        lines.append(f"skipped: kept the previous files of {', '.join(stems)} (this build made none of them)")
    return lines


def override_hints(runs: pd.DataFrame, expected: dict[str, list[dict[str, str]]], found: set[str]) -> list[str]:
    """For each experiment with no cell found, the overrides that would find the store's cells of it.

    Parameters
    ----------
    runs : DataFrame
        Every cell run of the store (:func:`camdf.reporting.store.runs_frame`), whatever its key.
    expected : dict
        Experiment -> the flat params (:func:`camdf.pipeline.provenance.flatten`) of the cells the
        tables would read.
    found : set of str
        The experiments some of whose cells the store holds at the expected keys.

    Returns
    -------
    list of str
        One sentence per experiment whose cells differ from the store's in a few params only.
    """
    if runs.empty or "t:experiment" not in runs:
        return []
    out = []
    for name, cells in expected.items():
        if name in found or not cells:
            continue
        theirs = runs[runs["t:experiment"] == name]
        if theirs.empty:
            continue
        differ: dict[str, set[str]] = {}
        for _, run in theirs.iterrows():
            for key, value in cells[0].items():
                if key.startswith(_NOT_HINTS) or key in ("cost.lam", "cost.d", "scorer.label", "scorer.name"):
                    continue  # what a sweep varies differs from one cell to the next by design
                have = run.get(f"p:{key}")
                if isinstance(have, str) and have != value and not have.startswith("<redacted"):
                    differ.setdefault(key, set()).add(have)
        if not differ and "t:code_version" in theirs:
            from camdf.pipeline.identity import code_stamp

            versions = sorted(set(theirs["t:code_version"].dropna()) - {code_stamp()})
            if versions:
                out.append(f"the store's cells of experiment {name} were computed at source fingerprint "
                           f"{' or '.join(versions)}, the checkout's is {code_stamp()} (camdf/, pipelines/ or conf/ "
                           f"changed): run `python -m pipelines.evaluate -m experiment={name}` again")
            continue
        if differ and len(differ) <= 4:
            overrides = ",".join(f"'{k}={sorted(v)[0]}'" for k, v in sorted(differ.items()))
            values = ", ".join(f"{k} ({' or '.join(sorted(v))})" for k, v in sorted(differ.items()))
            out.append(f"the store has cells of experiment {name} that differ from the ones asked for in {values}: "
                       f"add cell_overrides=[{overrides}] (the overrides they were run with)")
    return out


def tables_hints(runs: pd.DataFrame, names: Iterable[str], extra: list[str], data_dir) -> list[str]:
    """:func:`override_hints` for the experiments ``names`` composed with the overrides ``extra`` (the
    tables stage's ``paths.*`` and ``cell_overrides``); cells are keyed on the data under ``data_dir``."""
    from pathlib import Path

    from camdf.pipeline.identity import cell_key
    from camdf.pipeline.provenance import flatten
    from camdf.pipeline.sweeps import experiment_cells

    if runs.empty or "t:cell_key" not in runs:
        return []
    stored = set(runs["t:cell_key"])
    expected, found = {}, set()
    for name in names:
        cells = experiment_cells(name, extra)
        expected[name] = [flatten(cell) for cell in cells]
        try:
            if any(cell_key(cell, Path(data_dir)) in stored for cell in cells):
                found.add(name)
        except FileNotFoundError:  # a domain not built: reported by the stage already
            found.add(name)
    return override_hints(runs, expected, found)
