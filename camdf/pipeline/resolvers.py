"""OmegaConf resolvers shared by every stage; importing this module registers them.

Each returns a string, never a config node: a resolver that makes a node from a string would hand Hydra's
``instantiate`` code the gates never saw, and the gates refuse those (:data:`camdf.pipeline.checks.interpolation.NODE_RESOLVERS`).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf


def project_root() -> str:
    """The checkout holding ``pyproject.toml`` (the package is installed editable by ``make setup``)."""
    here = Path(__file__).resolve().parents[2]
    if not (here / "pyproject.toml").is_file():
        raise RuntimeError(
            f"cannot find the camdf checkout above {here}: install with `pip install -e .` "
            "or set CAMDF_ROOT to the checkout"
        )
    return str(here)


if not OmegaConf.has_resolver("camdf_root"):
    OmegaConf.register_new_resolver("camdf_root", project_root)
