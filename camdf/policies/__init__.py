"""Stopping rules with one interface: CAM-DF, its ablations, the baselines and the oracles, by registry card.

Importing this package loads no scikit-learn (the lean run-time loader reads the cards);
the rule classes and :class:`StateBatch` are imported on first use (PEP 562).
"""

from __future__ import annotations

import importlib

from camdf.policies.registry import (
    BEST_PREFIX, CARDS, FULL_ACCESS, NO_TOOLS, REFERENCE, Card, Dial, best_tuned_baseline, camdf_family, card, dial_specs,
    in_camdf_family, is_oracle, make_policy, methods, oracles, own_dials, policy_methods, register, registered,
    unregister,
)

_LAZY = {"StateBatch": "camdf.policies.base", "StoppingRule": "camdf.policies.base"}


def __getattr__(name: str):
    # Derived from the cards when asked, so that a card registered later is seen.
    if name in ("METHODS", "REGISTRY"):
        return methods() if name == "METHODS" else {n: CARDS[n].factory for n in methods()}
    if name == "ORACLES":
        return oracles()
    if name == "FAMILY":
        return camdf_family()
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'camdf.policies' has no attribute {name!r}")


__all__ = ["BEST_PREFIX", "CARDS", "Card", "Dial", "FAMILY", "best_tuned_baseline", "camdf_family", "in_camdf_family", "is_oracle",
           "oracles", "policy_methods", "FULL_ACCESS", "NO_TOOLS", "REFERENCE", "METHODS", "ORACLES", "REGISTRY", "StateBatch",
           "StoppingRule", "card", "dial_specs", "make_policy", "methods", "own_dials", "register", "registered", "unregister"]
