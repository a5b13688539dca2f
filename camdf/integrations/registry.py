"""The integrations, found by folder: every package under ``camdf/integrations/`` and what it declares.

Each package's ``__init__.py`` declares an :class:`~camdf.integrations.base.Integration`
(``INTEGRATION``): its converters, executable domains and measured cost regimes.
:func:`integrations` lists the packages of this folder (:func:`pkgutil.iter_modules`, an
explicit discovery: nothing registers itself on import) and reads their declarations; the
rest are queries on that table. A new integration is one package: nothing here names one.

A domain's derived required sets (``label_source: derived``) need a domain whose tools can
run (:func:`get_executable`); the measured cost regimes get their measuring function from
here (:func:`cost_measures`), so :mod:`camdf.costs` imports no integration. The code an
entry runs is its integration's package, every module of it (:func:`executable_code`,
:func:`measure_code`): the cache keys of derived labels, of the data stage and of measured
costs hash it, so an edit anywhere in the package (a derivation rule, the converter, the
environment glue) rebuilds what it made.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType
from typing import Any

from camdf.costs.measured import MeasuredRegime
from camdf.integrations.base import Integration
from camdf.sufficiency.domain import ExecutableDomain

_INSTANCES: dict[str, ExecutableDomain] = {}


@cache
def integrations() -> dict[str, Integration]:
    """Package name (``camdf.integrations.<name>``) -> its declaration, for every package of this folder."""
    import camdf.integrations as root

    return discover(root)


def discover(root: ModuleType) -> dict[str, Integration]:
    """Package name -> its ``INTEGRATION``, for every sub-package of ``root`` (by name; ``_private`` ones skipped).

    Raises
    ------
    TypeError
        A package without an ``INTEGRATION`` declaration.
    """
    found: dict[str, Integration] = {}
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        package = f"{root.__name__}.{info.name}"
        declared = getattr(importlib.import_module(package), "INTEGRATION", None)
        if not isinstance(declared, Integration):
            raise TypeError(f"{package.replace('.', '/')}/__init__.py: expected a module-level INTEGRATION = "
                            f"Integration(...) (camdf.integrations.base), got {declared!r}")
        found[package] = declared
    return found


def _resolve(package: str, ref: str) -> Any:
    """The object a declaration's ``"module:attribute"`` (relative to ``package``) names."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(f"{package}.{module}"), attr)


def _dotted(package: str, ref: str) -> str:
    module, _, attr = ref.partition(":")
    return f"{package}.{module}.{attr}"


def converters() -> tuple[str, ...]:
    """The dotted paths of every integration's converters (a domain config's allowed ``converter._target_``)."""
    return tuple(_dotted(p, ref) for p, i in integrations().items() for ref in i.converters)


def _executable() -> dict[str, tuple[str, str]]:
    """Executable domain -> (its package, its ``"module:Class"``)."""
    out: dict[str, tuple[str, str]] = {}
    for package, declared in integrations().items():
        for name, ref in declared.executable.items():
            if name in out:
                raise ValueError(f"executable domain `{name}` is declared by both {out[name][0]} and {package}")
            out[name] = (package, ref)
    return out


def _measured() -> dict[str, tuple[str, Any]]:
    """Measured regime -> (its package, its :class:`~camdf.integrations.base.Measured`)."""
    out: dict[str, tuple[str, Any]] = {}
    for package, declared in integrations().items():
        for name, measured in declared.measures.items():
            if name in out:
                raise ValueError(f"measured cost regime `{name}` is declared by both {out[name][0]} and {package}")
            out[name] = (package, measured)
    return out


def executable_domains() -> list[str]:
    """Names of the executable domains."""
    return sorted(_executable())


def _known(name: str) -> tuple[str, str]:
    table = _executable()
    if name not in table:
        raise ValueError(
            f"domain `{name}` is not executable: the sufficiency check knows {', '.join(sorted(table))}"
        )
    return table[name]


def get_executable(name: str) -> ExecutableDomain:
    """The (shared) executable domain ``name``; raises naming the known ones."""
    package, ref = _known(name)
    if name not in _INSTANCES:
        _INSTANCES[name] = _resolve(package, ref)()
    return _INSTANCES[name]


def executable_code(name: str) -> tuple[str, ...]:
    """The packages whose source decides what executable domain ``name`` derives: its integration's package.

    The same package :func:`camdf.sufficiency.derive.cache_path` hashes for the derivation's
    own cache (:func:`~camdf.common.fingerprint.defining_package` of the domain's class).
    """
    return (_known(name)[0],)


def measured_regimes() -> list[str]:
    """Names of the measured cost regimes."""
    return sorted(_measured())


def measured_params() -> dict[str, tuple[str, ...]]:
    """Measured cost regime -> the params its measure accepts (nothing imported)."""
    return {name: tuple(m.params) for name, (_, m) in _measured().items()}


def cost_measures() -> dict[str, MeasuredRegime]:
    """Every measured cost regime, resolved: regime -> :class:`~camdf.costs.measured.MeasuredRegime`."""
    out = {}
    for name, (package, m) in _measured().items():
        out[name] = MeasuredRegime(measure=_resolve(package, m.measure), params=tuple(m.params),
                                   section=_resolve(package, m.section) if m.section else None,
                                   domain_param=m.domain_param)
    return out


def measure_code(regime: str) -> tuple[str, ...]:
    """The packages whose source decides the measured regime ``regime``'s costs: its integration's package."""
    table = _measured()
    if regime not in table:
        raise ValueError(f"cost regime `{regime}` is not measured: the measured ones are {', '.join(sorted(table))}")
    return (table[regime][0],)
