"""The run-time stopper: decide how deep a prefix of any tool ranking to expose (library, pyfunc model, CLI glue).

The names below are imported on first use (PEP 562): ``camdf select`` loads a shipped
policy whose rule has a portable form (camdf_risk) through :mod:`camdf.runtime.lean`
without scikit-learn or pandas.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Request": "requests", "Selection": "requests", "bm25_tool_scores": "requests", "check_lam": "requests",
    "StopPolicy": "policy", "load_policy": "loading", "log_policy": "publish",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"camdf.runtime.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'camdf.runtime' has no attribute {name!r}")
