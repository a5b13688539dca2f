"""Stopping rules with one interface: CAM-DF, its ablations, the baselines and the oracles."""

from __future__ import annotations

from typing import Callable

from camdf.policies.base import StateBatch, StoppingRule
from camdf.policies.baselines import (
    BestPrefix, FixedK, Full, MarginalRule, NoTools, PluginArgmax,
    predict_threshold, score_per_cost, score_threshold, sufficiency_threshold,
)
from camdf.policies.camdf import ARGMAX_GRID, NO_COST, NO_MEMBERSHIP, NO_TASK, CamDF, CamDFArgmax, CamDFLite
from camdf.policies.risk import CamDFRisk, check_alpha

# name -> factory(random_state). ``oracle_set`` (not a prefix rule) and ``camdf_lambda`` (trained across a
# lambda grid) are built by the cell evaluator itself; ``camdf_risk`` takes the cell's alpha (make_policy).
REGISTRY: dict[str, Callable[[int], StoppingRule]] = {
    "camdf": lambda rs: CamDF(random_state=rs),
    "camdf_lite": lambda rs: CamDFLite(),
    "camdf_argmax": lambda rs: CamDFArgmax(random_state=rs),
    "camdf_risk": lambda rs: CamDFRisk(random_state=rs),
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
    "camdf_no_task": lambda rs: CamDF(features=NO_TASK, random_state=rs),
    "camdf_no_identity": lambda rs: CamDF(tool_identity=False, random_state=rs),
    "camdf_argmax_no_margin": lambda rs: CamDFArgmax(base_margin=False, grid=ARGMAX_GRID[1:], random_state=rs),
    "camdf_argmax_untuned": lambda rs: CamDFArgmax(grid=ARGMAX_GRID[1:2], random_state=rs),
    "camdf_argmax_identity": lambda rs: CamDFArgmax(tool_identity=True, random_state=rs),
    "camdf_risk_no_split": lambda rs: CamDFRisk(split=False, random_state=rs),
}
ORACLES = ("oracle_set", "best_prefix")
METHODS = (*REGISTRY, "oracle_set", "camdf_lambda")
#: The CAM-DF family (the paper's rules, their ablations and ours); every other deployable method is a baseline.
FAMILY = tuple(m for m in METHODS if m.startswith("camdf"))


def make_policy(name: str, random_state: int = 0, alpha: float | None = None) -> StoppingRule:
    """A fresh rule by name; ``alpha`` sets the target miss rate of the risk-controlled rules."""
    if name not in REGISTRY:
        raise ValueError(f"method: unknown {name!r}, expected one of {sorted(METHODS)}")
    rule = REGISTRY[name](random_state)
    if alpha is not None and "alpha" in rule.get_params():
        rule.set_params(alpha=check_alpha(alpha))
    return rule


__all__ = ["FAMILY", "METHODS", "ORACLES", "REGISTRY", "StateBatch", "StoppingRule", "make_policy"]
