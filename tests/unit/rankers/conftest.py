"""Domains for the ranker tests: the hand-made fixture, the real tau2/BFCL conversions (``builtin``, from
tests/unit/conftest.py), and built catalogs of near-duplicate vendors for the rankers that learn across catalogs."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from camdf.data import read_domain
from camdf.data.io import write_domain

NEVER = ("transfer_to_human_agents",)


@pytest.fixture(scope="session")
def valid_user(fixture_domains):
    return read_domain(fixture_domains / "valid_user")




@pytest.fixture(scope="session")
def retail(builtin):
    return builtin[1]["retail"]


#: The vendor catalogs :func:`vendor_catalogs` builds (besides ``scrambled``).
NAMES = ("alpha", "beta", "gamma")


def _built(data: Path, name: str, seed: int, scrambled: bool = False) -> None:
    from tests.unit.rankers.test_crosscat import vendor_domain

    folder = data / name
    dom = vendor_domain(name, seed)
    if scrambled:  # every task's G_x a tool drawn at random: labels that teach nothing
        rng = np.random.default_rng(seed)
        dom = replace(dom, tasks=[replace(t, required=(dom.tools[int(rng.integers(len(dom.tools)))].name,))
                                  for t in dom.tasks])
    write_domain(dom, folder)
    manifest = {"config": {"acquirable_kinds": ["read"], "never_acquirable": []}, "summary": {"domain": name}}
    (folder / "manifest.json").write_text(json.dumps(manifest) + "\n")


@pytest.fixture(scope="session")
def vendor_catalogs(tmp_path_factory) -> Path:
    """A data folder of built vendor catalogs (:data:`NAMES`, and ``scrambled``: every G_x a random tool), as
    `make data` leaves them: a ranker that learns across catalogs reads it as its ``data_dir``, on any clone."""
    root = tmp_path_factory.mktemp("vendors")
    for k, name in enumerate(NAMES):
        _built(root, name, k)
    _built(root, "scrambled", 1, scrambled=True)
    return root
