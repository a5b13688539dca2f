"""What an integration package declares: the :class:`Integration` in its ``__init__.py``.

An integration is one package under ``camdf/integrations/`` (the code that knows one outside
benchmark package). Its ``__init__.py`` holds a module-level ``INTEGRATION``: the converters a
domain config may name, the executable domains (for derived required sets) and the measured
cost regimes. :mod:`camdf.integrations.registry` finds the packages by folder and reads these
declarations; nothing registers itself on import.

Every entry is a reference ``"module:attribute"`` relative to the package, imported only
when it is used, so listing the integrations imports none of their outside packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Measured:
    """A measured cost regime, declared (resolved into :class:`camdf.costs.measured.MeasuredRegime`).

    Attributes
    ----------
    measure : str
        ``"module:function"``: ``(domain, **params) -> frame indexed by tool with mean_tokens``.
    params : tuple of str
        The keyword arguments of ``measure`` a cost config may set.
    section : str, optional
        ``"module:function"``: the data report's markdown section of the measurements.
    domain_param : str, optional
        A param defaulting to the domain config's key of that name, else the domain's name.
    """

    measure: str
    params: tuple[str, ...]
    section: str | None = None
    domain_param: str | None = None


@dataclass(frozen=True)
class Integration:
    """One integration package's declaration.

    Attributes
    ----------
    converters : tuple of str
        ``"module:function"`` of each converter a domain config's ``converter._target_`` may
        name (the allow-list of :mod:`camdf.pipeline.checks.values` is their union).
    executable : mapping str -> str
        Executable domain name -> ``"module:Class"`` of its
        :class:`~camdf.sufficiency.domain.ExecutableDomain` (built with no arguments).
    measures : mapping str -> Measured
        Measured cost regime name -> its declaration.
    """

    converters: tuple[str, ...] = ()
    executable: Mapping[str, str] = field(default_factory=dict)
    measures: Mapping[str, Measured] = field(default_factory=dict)
