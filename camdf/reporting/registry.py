"""The registered tables and figures, in the order the README shows them: the one list the tables stage builds."""

from __future__ import annotations

from camdf.reporting import claims
from camdf.reporting.tables import (
    a19, a20, a21, a25, a26, a27, calibration, cross_domain, family, grid, payoff_vs_tools, table2,
)
from camdf.reporting.tables.base import TableSpec

#: Every table (and figure) of the tables stage. A new table is a module under ``camdf/reporting/tables/``
#: declaring a :class:`~camdf.reporting.tables.base.TableSpec`, its line here and its experiment file.
TABLES: tuple[TableSpec, ...] = (
    table2.TABLE,
    calibration.TABLE,
    grid.A18,
    a19.TABLE,
    a20.TABLE,
    a20.LAMBDA,
    a21.TABLE,
    cross_domain.A22,
    cross_domain.A23,
    grid.A24,
    a25.TABLE,
    a26.TABLE,
    a27.TABLE,
    family.TABLE,
    claims.TABLE,
    payoff_vs_tools.TABLE,
)


def experiments(tables: tuple[TableSpec, ...] = TABLES) -> list[str]:
    """The experiments whose cells the tables read: each registered table's, once, in registry order."""
    return list(dict.fromkeys(e for t in tables for e in t.experiments))
