"""The explicit registry of executable domains: a name -> the class that runs its real tools.

A domain's derived required sets (``label_source: derived``) need a domain whose
tools can run; this table is the one place that says which those are.  Add a
domain by adding its :class:`~camdf.sufficiency.domain.ExecutableDomain` here.
"""

from __future__ import annotations

from typing import Callable

from camdf.integrations.tau2.executable import Airline, Retail
from camdf.sufficiency.domain import ExecutableDomain

EXECUTABLE: dict[str, Callable[[], ExecutableDomain]] = {"retail": Retail, "airline": Airline}
_INSTANCES: dict[str, ExecutableDomain] = {}


def executable_domains() -> list[str]:
    """Names of the executable domains."""
    return sorted(EXECUTABLE)


def get_executable(name: str) -> ExecutableDomain:
    """The (shared) executable domain ``name``; raises naming the known ones."""
    if name not in EXECUTABLE:
        raise ValueError(
            f"domain `{name}` is not executable: the sufficiency check knows {', '.join(sorted(EXECUTABLE))}"
        )
    if name not in _INSTANCES:
        _INSTANCES[name] = EXECUTABLE[name]()
    return _INSTANCES[name]
