"""The tables, found by folder: every module under ``camdf/reporting/tables/`` and the specs it declares.

A table is one module under ``camdf/reporting/tables/`` declaring ``SPECS`` (each a
:class:`~camdf.reporting.tables.base.TableSpec` with its order key and the experiments it
reads). :func:`tables` lists the folder's modules (:func:`pkgutil.iter_modules`, an explicit
discovery: nothing registers itself on import), reads their ``SPECS`` and sorts them by order;
a module without ``SPECS`` is an error, so a table is never silently left out.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from camdf.reporting.tables.base import TableSpec


def table_modules(package: ModuleType | None = None) -> list[str]:
    """The dotted names of the modules of ``package`` (default :mod:`camdf.reporting.tables`), sorted."""
    if package is None:
        import camdf.reporting.tables as package
    return [f"{package.__name__}.{i.name}" for i in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name)
            if not i.ispkg]


def tables(package: ModuleType | None = None) -> tuple[TableSpec, ...]:
    """Every declared table (and figure), in order (ascending :attr:`~TableSpec.order`): what the tables stage builds.

    Parameters
    ----------
    package : module, optional
        The folder to read (default :mod:`camdf.reporting.tables`).

    Raises
    ------
    TypeError
        A module without ``SPECS`` (or with something else than TableSpecs in it).
    ValueError
        Two tables with one name or one order.
    """
    specs: list[TableSpec] = []
    for name in table_modules(package):
        declared = getattr(importlib.import_module(name), "SPECS", None)
        if not isinstance(declared, tuple) or not all(isinstance(s, TableSpec) for s in declared):
            raise TypeError(f"{name.replace('.', '/')}.py: expected a module-level SPECS, a tuple of TableSpec "
                            f"(camdf.reporting.tables.base; a helper module: SPECS = ()), got {declared!r}")
        specs.extend(declared)
    for key in ("name", "order"):
        seen: dict[object, str] = {}
        for s in specs:
            value = getattr(s, key)
            if value in seen:
                raise ValueError(f"tables `{seen[value]}` and `{s.name}` have the same {key} {value!r}")
            seen[value] = s.name
    return tuple(sorted(specs, key=lambda s: s.order))


def experiments(specs: tuple[TableSpec, ...] | None = None) -> list[str]:
    """The experiments whose cells the tables read: each declared table's, once, in table order."""
    return list(dict.fromkeys(e for t in (tables() if specs is None else specs) for e in t.experiments))
