"""Stopping rules with one interface: CAM-DF, its ablations, the baselines and the oracles."""

from __future__ import annotations

from typing import Callable

from camdf.policies.base import StateBatch, StoppingRule
from camdf.policies.baselines import (
    BestPrefix, FixedK, Full, MarginalRule, NoTools, PluginArgmax,
    predict_threshold, score_per_cost, score_threshold, sufficiency_threshold,
)
from camdf.policies.camdf import NO_COST, NO_MEMBERSHIP, CamDF, CamDFLite

# name -> factory(random_state). ``oracle_set`` (not a prefix rule) and ``camdf_lambda`` (trained across a
# lambda grid) are built by the cell evaluator itself.
REGISTRY: dict[str, Callable[[int], StoppingRule]] = {
    "camdf": lambda rs: CamDF(random_state=rs),
    "camdf_lite": lambda rs: CamDFLite(),
    "full": lambda rs: Full(),
    "none": lambda rs: NoTools(),
    "fixed_k": lambda rs: FixedK(),
    "score_threshold": lambda rs: score_threshold(),
    "score_per_cost": lambda rs: score_per_cost(),
    "predict_threshold": lambda rs: predict_threshold(),
    "sufficiency_threshold": lambda rs: sufficiency_threshold(),
    "plugin_argmax": lambda rs: PluginArgmax(),
    "marginal_rule": lambda rs: MarginalRule(),
    "best_prefix": lambda rs: BestPrefix(),
    # Ablations (table A20).
    "camdf_unweighted": lambda rs: CamDF(weighted=False, random_state=rs),
    "camdf_no_cost": lambda rs: CamDF(features=NO_COST, random_state=rs),
    "camdf_no_membership": lambda rs: CamDF(features=NO_MEMBERSHIP, random_state=rs),
    "camdf_regression": lambda rs: CamDF(target="regress", random_state=rs),
}
ORACLES = ("oracle_set", "best_prefix")
METHODS = (*REGISTRY, "oracle_set", "camdf_lambda")


def make_policy(name: str, random_state: int = 0) -> StoppingRule:
    if name not in REGISTRY:
        raise ValueError(f"method: unknown {name!r}, expected one of {sorted(METHODS)}")
    return REGISTRY[name](random_state)


__all__ = ["METHODS", "ORACLES", "REGISTRY", "StateBatch", "StoppingRule", "make_policy"]
