"""The policy the runtime uses when none is given: the default policy, shipped as data inside the package.

It is one portable rule (no tool identities, scores normalised per request, costs in schema tokens) fitted by
the pipeline on every built-in domain (``make default-policy``, run by ``make reproduce``;
:mod:`camdf.pipeline.default_policy`) and exported as a policy folder (``policy.json``, ``boosters/``,
``manifest.json`` with its provenance). A30 in the Results measures how such a rule decides on a catalog it was
never fitted on. ``load_policy()`` with no argument, ``camdf select`` and every adapter without a policy load it.
"""

from __future__ import annotations

from pathlib import Path

#: The folder's name inside :mod:`camdf.runtime`.
FOLDER = "default_policy"


def default_policy_dir() -> Path:
    """The packaged default policy's folder (an export: :func:`camdf.runtime.export.read_export` reads it)."""
    return Path(__file__).resolve().parent / FOLDER
