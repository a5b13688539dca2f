"""The explicit registry of integrations: executable domains, cost measurements, and the code each one runs.

A domain's derived required sets (``label_source: derived``) need a domain whose
tools can run; this table is the one place that says which those are.  Add a
domain by adding its :class:`~camdf.sufficiency.domain.ExecutableDomain` here.
The measured cost regimes get their measuring function from here
(:func:`cost_measures`), so :mod:`camdf.costs` imports no integration. The code an
entry runs is its integration's package, every module of it (:func:`executable_code`,
:func:`measure_code`): the cache keys of derived labels, of the data stage and of
measured costs hash it, so an edit anywhere in the package (a derivation rule, the
converter, the environment glue) rebuilds what it made.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from camdf.common.fingerprint import defining_package
from camdf.integrations.tau2.executable import Airline, Retail
from camdf.integrations.tau2.execution import measure_execution
from camdf.sufficiency.domain import ExecutableDomain

EXECUTABLE: dict[str, Callable[[], ExecutableDomain]] = {"retail": Retail, "airline": Airline}
#: Measured cost regimes: regime -> the function that measures each tool of a domain (a frame indexed by
#: tool with ``mean_tokens``); the regime's params are its keyword arguments.
MEASURES: dict[str, Callable[..., pd.DataFrame]] = {"execution": measure_execution}
_INSTANCES: dict[str, ExecutableDomain] = {}


def executable_domains() -> list[str]:
    """Names of the executable domains."""
    return sorted(EXECUTABLE)


def _known(name: str) -> None:
    if name not in EXECUTABLE:
        raise ValueError(
            f"domain `{name}` is not executable: the sufficiency check knows {', '.join(sorted(EXECUTABLE))}"
        )


def get_executable(name: str) -> ExecutableDomain:
    """The (shared) executable domain ``name``; raises naming the known ones."""
    _known(name)
    if name not in _INSTANCES:
        _INSTANCES[name] = EXECUTABLE[name]()
    return _INSTANCES[name]


def executable_code(name: str) -> tuple[str, ...]:
    """The packages whose source decides what executable domain ``name`` derives: its integration's package.

    The same package :func:`camdf.sufficiency.derive.cache_path` hashes for the derivation's
    own cache (:func:`~camdf.common.fingerprint.defining_package` of the domain's class).
    """
    _known(name)
    return (defining_package(EXECUTABLE[name]),)


def cost_measures() -> dict[str, Callable[..., pd.DataFrame]]:
    """The measuring function of each measured cost regime (a copy of :data:`MEASURES`)."""
    return dict(MEASURES)


def measure_code(regime: str) -> tuple[str, ...]:
    """The packages whose source decides the measured regime ``regime``'s costs: its integration's package."""
    if regime not in MEASURES:
        raise ValueError(f"cost regime `{regime}` is not measured: the measured ones are {', '.join(sorted(MEASURES))}")
    return (defining_package(MEASURES[regime]),)
