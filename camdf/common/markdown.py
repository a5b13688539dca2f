"""The one markdown table renderer: a header, rows and per-column alignment to GitHub-flavoured lines.

Every markdown table the project writes (the results tables through
:class:`camdf.reporting.report.Report`, the data, ranking, cost, sufficiency and
benchmark summaries) goes through :func:`markdown_table`, so escaping and layout
are the same everywhere.
"""

from __future__ import annotations

from typing import Iterable, Sequence

_RULE = {"l": "---", "r": "---:"}


def cell(value: object) -> str:
    """One cell's text: ``|`` escaped and line breaks folded, so it cannot split the row."""
    return str(value).replace("\\|", "|").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]], align: str | None = None) -> list[str]:
    """The lines of a markdown table.

    Parameters
    ----------
    header : the column titles.
    rows : the cells, already formatted (``str()`` is applied to anything else).
    align : one letter per column, ``l`` (left, ``---``) or ``r`` (right, ``---:``); all left if None.
    """
    align = align or "l" * len(header)
    if len(align) != len(header) or set(align) - set(_RULE):
        raise ValueError(f"align: expected {len(header)} letters of 'l'/'r', got {align!r}")
    lines = ["| " + " | ".join(map(cell, header)) + " |", "| " + " | ".join(_RULE[a] for a in align) + " |"]
    for row in rows:
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"row {row!r}: {len(row)} cells for {len(header)} columns")
        lines.append("| " + " | ".join(map(cell, row)) + " |")
    return lines


def signed(value: float, digits: int = 3) -> str:
    """``value`` with its sign at ``digits`` decimals, never a signed zero.

    A value that rounds to zero prints unsigned (``0.000``, not ``-0.000`` or ``+0.000``): a sign
    there would claim a direction the shown digits do not carry.
    """
    text = f"{float(value):+.{digits}f}"
    return text[1:] if float(text) == 0.0 else text
