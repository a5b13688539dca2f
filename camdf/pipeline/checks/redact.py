"""Params without secrets: config values interpolated from the environment (``${oc.env:...}``) are logged redacted."""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig, OmegaConf

#: What a redacted param holds instead of its value.
REDACTED = "<redacted: from the environment>"
_ENV = re.compile(r"\$\{\s*oc\.env\s*:")
_REFERENCE = re.compile(r"\$\{\s*([A-Za-z_][\w.]*)\s*\}")


def _raw(node: Any, prefix: str = "") -> dict[str, str]:
    """Dotted key -> unresolved string of every leaf that holds an interpolation."""
    out: dict[str, str] = {}
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, (dict, list)):
            out.update(_raw(value, f"{name}."))
        elif isinstance(value, str) and "${" in value:
            out[name] = value
    return out


def env_keys(unresolved: DictConfig | dict[str, Any]) -> set[str]:
    """The dotted keys whose value comes from the environment, directly (``${oc.env:X}``) or through another key.

    Parameters
    ----------
    unresolved : DictConfig or dict
        The stage's config before interpolation (the ``cfg`` Hydra passes to the task).

    Returns
    -------
    set of str
        Keys whose unresolved value holds ``${oc.env:...}``, and, to a fixed point, keys
        whose value interpolates one of those (``${tracking.token}``) or a node above one.
    """
    raw = _raw(OmegaConf.to_container(unresolved, resolve=False) if OmegaConf.is_config(unresolved) else unresolved)
    tainted = {k for k, v in raw.items() if _ENV.search(v)}
    changed = True
    while changed:
        changed = False
        for key, value in raw.items():
            if key in tainted:
                continue
            refs = _REFERENCE.findall(value)
            if any(r == t or t.startswith(f"{r}.") or r.startswith(f"{t}.") for r in refs for t in tainted):
                tainted.add(key)
                changed = True
    return tainted


def redact(params: dict[str, str], keys: set[str]) -> dict[str, str]:
    """``params`` (flat ``a.b.c -> value``) with the value of every key in ``keys`` (or under one) replaced.

    Examples
    --------
    >>> redact({"scorer.params.token": "s3cret", "cost.lam": "0.12"}, {"scorer.params.token"})
    {'scorer.params.token': '<redacted: from the environment>', 'cost.lam': '0.12'}
    """
    def hit(name: str) -> bool:
        # A list param (``method.names``) holds its items' values: redacted when one of them is tainted.
        return any(name == k or name.startswith(f"{k}.") or k.startswith(f"{name}.") for k in keys)

    return {name: REDACTED if hit(name) else value for name, value in params.items()}
