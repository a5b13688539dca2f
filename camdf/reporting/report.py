"""One table object rendered four ways: markdown for the README, CSV for machines, LaTeX for papers, HTML for the
MLflow UI (its artifact pane renders an HTML file whole, where a markdown table showed 3 of 22 rows).

A :class:`Report` holds a DataFrame of already-formatted cells plus which column's
best value to bold and which cells to mark as significant; rendering is pure
string formatting, so the same store gives byte-identical files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from camdf.common.files import write_atomic
from camdf.common.markdown import markdown_table

#: A zero with a sign ("-0.000", "+0.00"): shown unsigned, since the digits carry no direction.
_SIGNED_ZERO = re.compile(r"(?<![\w.])[-+](0\.0+)(?![\d.])")


@dataclass
class Report:
    """A results table.

    Attributes
    ----------
    name : str
        File stem under ``outputs/tables/`` (``table2``, ``a18``, ...).
    title : str
    frame : DataFrame
        Values to show (numbers or strings); the index is written as the first column.
    note : str
        What the table is and where its numbers come from.
    bold : dict of str to {"max", "min"}
        Columns whose best value is bolded (markdown ``**x**``, LaTeX ``\\textbf``).
    marks : DataFrame of bool or None
        Same shape as ``frame``: cells to mark with a dagger (e.g. CI excludes 0).
    digits : int
        Decimals for floats.
    """

    name: str
    title: str
    frame: pd.DataFrame
    note: str = ""
    bold: dict[str, str] = field(default_factory=dict)
    marks: pd.DataFrame | None = None
    digits: int = 3

    def _cells(self, bold_fmt: str, mark: str) -> pd.DataFrame:
        df = self.frame.copy()
        out = pd.DataFrame(index=df.index, columns=df.columns, dtype=object)
        for col in df.columns:
            values = df[col]
            best = None
            if col in self.bold and pd.api.types.is_numeric_dtype(values) and values.notna().any():
                best = values.max() if self.bold[col] == "max" else values.min()
            for idx, v in values.items():
                text = self._fmt(v)
                if best is not None and pd.notna(v) and v == best:
                    text = bold_fmt.format(text)
                if self.marks is not None and col in self.marks and bool(self.marks.at[idx, col]):
                    text += mark
                out.at[idx, col] = text
        return out

    def _fmt(self, v) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else _SIGNED_ZERO.sub(r"\1", f"{v:.{self.digits}f}")
        return _SIGNED_ZERO.sub(r"\1", str(v))

    def to_markdown(self) -> str:
        cells = self._cells("**{}**", " †")
        head = [str(self.frame.index.name or ""), *map(str, cells.columns)]
        lines = [f"### {self.title}", "",
                 *markdown_table(head, ([str(idx), *row.tolist()] for idx, row in cells.iterrows()))]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        esc = lambda s: str(s).replace("_", r"\_").replace("%", r"\%").replace("#", r"\#")  # noqa: E731
        cells = self._cells(r"\textbf{{{}}}", r"$^\dagger$")
        cols = "l" + "r" * len(cells.columns)
        lines = [
            r"\begin{table}[t]", r"\centering", f"\\caption{{{esc(self.title)}}}", f"\\begin{{tabular}}{{{cols}}}",
            r"\toprule",
            " & ".join([esc(self.frame.index.name or ""), *map(esc, cells.columns)]) + r" \\", r"\midrule",
        ]
        for idx, row in cells.iterrows():
            lines.append(" & ".join([esc(idx), *(c if c.startswith("\\textbf") else esc(c) for c in row)]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", f"\\label{{tab:{self.name}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        """A standalone page: the title, every row (bold best values, † marks) and the note, each cell escaped."""
        import html

        cells = self._cells("\x00{}\x01", " \u2020")
        esc = lambda v: html.escape(str(v)).replace("\x00", "<b>").replace("\x01", "</b>")  # noqa: E731
        head = "".join(f"<th>{esc(c)}</th>" for c in [self.frame.index.name or "", *cells.columns])
        rows = "\n".join("<tr>" + f"<th>{esc(idx)}</th>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                         for idx, row in cells.iterrows())
        style = ("body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse} "
                 "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right} th{background:#f4f4f4} "
                 "tr>th:first-child{text-align:left}")
        note = f"<p>{esc(self.note)}</p>" if self.note else ""
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{esc(self.title)}</title>"
                f"<style>{style}</style></head>\n<body><h3>{esc(self.title)}</h3>\n<table>\n<tr>{head}</tr>\n{rows}\n"
                f"</table>\n{note}\n</body></html>\n")

    def to_csv(self) -> str:
        return self.frame.to_csv(float_format=f"%.{max(self.digits, 6)}g", lineterminator="\n")

    def files(self) -> dict[str, str]:
        """The table's files by name: ``<name>.md``, ``<name>.csv`` and ``<name>.tex``."""
        return {f"{self.name}.md": self.to_markdown(), f"{self.name}.csv": self.to_csv(),
                f"{self.name}.tex": self.to_latex()}

    def write(self, folder: str | Path) -> list[Path]:
        """Write :meth:`files` into ``folder``, each atomically (a set of tables: :func:`camdf.reporting.build.write_set`)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return [write_atomic(folder / name, text) for name, text in self.files().items()]
