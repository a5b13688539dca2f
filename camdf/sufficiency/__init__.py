"""Required tool sets G_x by execution: knowledge closures over a domain's real tools.

Public functions:

- :func:`derive`: the sufficiency of every subset of the acquirable tools for
  every task of a converted executable domain, with the derived G_x
  (``required``), the other minimal sets (``alternatives``) and the evidence;
  cached on disk by content.
- :func:`relabel`: write a derivation into a domain's tasks (``label_source``
  ``derived`` or ``annotated``).
- :func:`sufficiency_table` and :func:`is_sufficient`: verified sufficiency of
  any exposed tool set, for scoring methods.
- :func:`sufficiency_section`, :func:`agreement_section`: the data report's sections.
- :class:`ExecutableDomain`: what an executable domain provides; the domains
  themselves are listed in :mod:`camdf.integrations.registry`.

The modules: :mod:`~camdf.sufficiency.values` (normalisation rules),
:mod:`~camdf.sufficiency.domain` (what a domain provides),
:mod:`~camdf.integrations.tau2.executable` (retail and airline),
:mod:`~camdf.sufficiency.closure` (the closure and the check),
:mod:`~camdf.sufficiency.arithmetic` (numbers no tool returns),
:mod:`~camdf.sufficiency.derive` (all subsets, labels, cache),
:mod:`~camdf.sufficiency.relabel`, :mod:`~camdf.sufficiency.agreement`.
"""

from camdf.sufficiency.derive import Derivation, TaskResult, derive, subset_index, subset_tools
from camdf.sufficiency.domain import ExecutableDomain
from camdf.sufficiency.relabel import LABEL_SOURCES, is_sufficient, relabel, sufficiency_table
from camdf.sufficiency.agreement import agreement_section, sufficiency_section, summary

__all__ = [
    "Derivation",
    "ExecutableDomain",
    "LABEL_SOURCES",
    "TaskResult",
    "agreement_section",
    "derive",
    "is_sufficient",
    "relabel",
    "subset_index",
    "subset_tools",
    "sufficiency_section",
    "sufficiency_table",
    "summary",
]
