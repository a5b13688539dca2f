"""What a table module declares (:class:`TableSpec`) and what its build returns (a Report or a :class:`Figure`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Union

from camdf.reporting.report import Report


@dataclass(frozen=True)
class Figure:
    """A PNG written beside the tables: ``name`` is its file name under ``outputs/tables/``."""

    name: str
    png: bytes


#: What a table's build returns: one Report or Figure, or a list of them.
Output = Union[Report, Figure, Sequence[Union[Report, Figure]]]


def one_variant(main: dict) -> list[dict]:
    """The default variants: the table is built once, with no extra arguments."""
    return [{}]


@dataclass(frozen=True)
class TableSpec:
    """One table (or figure) of the tables stage, declared in its module's ``SPECS``.

    Attributes
    ----------
    name : str
        The table's name (``table2``, ``a18``, ...): what a skipped build is reported under.
    order : int
        Where it comes in the tables stage's build and the README (ascending; unique).
    experiments : tuple of str
        The experiment files (``conf/experiment/<name>.yaml``) whose cells it reads; the tables
        stage reads the cells of every registered table's experiments.
    build : callable ``(evidence, main, **variant) -> Output``
        Builds the table from :class:`camdf.reporting.evidence.Evidence` and the ``main`` config
        block; raises LookupError (saying which experiment to run) when its cells are not in the store.
    variants : callable ``main -> list of dict``
        Keyword arguments of each build (e.g. one per ranking source); a missing variant is
        skipped on its own.
    stage : str or None
        The stage whose latest run a table reads instead of cells (its ``kind`` tag: ``default_policy``);
        such a table declares no experiment.
    """

    name: str
    order: int
    experiments: tuple[str, ...]
    build: Callable[..., Output]
    variants: Callable[[dict], list[dict]] = field(default=one_variant)
    stage: str | None = None


#: A helper module of ``tables/`` declares no table (every module there declares ``SPECS``).
SPECS: tuple[TableSpec, ...] = ()
