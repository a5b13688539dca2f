"""A fitted policy as a self-contained folder: ``camdf export POLICY_URI DIR`` writes it, ``load_policy(DIR)`` reads it.

The folder holds only data, and nothing in it is run or unpickled when it is read:

- ``policy.json``: the policy's numbers (:func:`camdf.runtime.policy_file.policy_numbers`), with each
  LightGBM booster moved out to a file of its own and named in its place as ``{"lightgbm_text": FILE}``;
- ``boosters/<k>.txt``: those boosters in LightGBM's text model format;
- ``manifest.json``: the layout's format, where the policy came from (URI, registered version), its
  rule and lambda, the SHA-256 of every other file and, for a policy whose costs are schema tokens
  (``camdf fit``, the default policy), ``cost_unit: "tokens"`` and the ``task_value`` it was fitted at
  (the runtime then prices a request without costs by schema tokens); ``camdf fit`` adds ``fit``, its
  out-of-fold comparison with the base policy.

Reading checks the manifest first: a missing, extra-by-name or altered file is refused naming it. A checksum
anyone can rewrite is no check of the content, so each model text is then parsed and bounded by the project
(:func:`check_booster_file`) before LightGBM or anything else reads it.
The reader needs what a decision needs (numpy, pandas, scikit-learn, LightGBM): not MLflow, not YAML.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from camdf.common.waits import read_regular

#: The manifest's file name and the layout it describes (a reader refuses another).
MANIFEST = "manifest.json"
KIND = "camdf-policy-export"
FORMAT = 1
POLICY_FILE = "policy.json"
_BOOSTERS = "boosters"
_REF = "lightgbm_text"
#: An exported file larger than this is refused before it is read (a shipped policy is a few MB).
MAX_BYTES = 256 * 2**20


def _sha256(path: Path) -> str:
    return hashlib.sha256(read_regular(path, MAX_BYTES, f"a file of at most {MAX_BYTES >> 20} MB")).hexdigest()


def _split_boosters(value: Any, out: list[str]) -> Any:
    """``value`` with every LightGBM model text replaced by a reference to ``boosters/<k>.txt`` (``out[k]``)."""
    if isinstance(value, str) and value.startswith("tree\n"):
        out.append(value)
        return {_REF: f"{_BOOSTERS}/{len(out) - 1}.txt"}
    if isinstance(value, dict):
        return {k: _split_boosters(v, out) for k, v in value.items()}
    if isinstance(value, list):
        return [_split_boosters(v, out) for v in value]
    return value


def _join_boosters(value: Any, texts: dict[str, str]) -> Any:
    """The inverse of :func:`_split_boosters`: each reference replaced by its file's text (``texts``: the
    checksummed and checked ``boosters/<k>.txt`` the manifest lists, by name)."""
    if isinstance(value, dict):
        if set(value) == {_REF}:
            rel = value[_REF]
            if not isinstance(rel, str) or rel not in texts:
                raise ValueError(f"{POLICY_FILE}: booster reference {str(rel)[:80]!r} is not a file the manifest "
                                 "lists")
            return texts[rel]
        return {k: _join_boosters(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_join_boosters(v, texts) for v in value]
    return value


def export_policy(policy, folder: str | os.PathLike, source: dict | None = None, fit: dict | None = None) -> Path:
    """Write ``policy`` (a fitted :class:`~camdf.runtime.StopPolicy`) as a self-contained folder.

    Parameters
    ----------
    policy : StopPolicy
    folder : path
        Created; refused when it exists and is not empty. Written beside itself and moved into
        place in one step, so a failure leaves no half-written folder.
    source : dict, optional
        Where the policy came from (``{"uri": ..., "version": ...}``), recorded in the manifest.
    fit : dict, optional
        How it was chosen (``camdf fit``'s report, JSON-ready), recorded in the manifest as ``fit``.

    Returns
    -------
    Path
        The folder.
    """
    from camdf import __version__
    from camdf.runtime.policy_file import policy_numbers

    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder}: exists and is not an empty folder (export writes a new folder)")
    boosters: list[str] = []
    numbers = _split_boosters(policy_numbers(policy), boosters)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        (tmp / POLICY_FILE).write_text(json.dumps(numbers, sort_keys=True), encoding="utf-8")
        if boosters:
            (tmp / _BOOSTERS).mkdir()
        for k, text in enumerate(boosters):
            (tmp / _BOOSTERS / f"{k}.txt").write_text(text, encoding="utf-8")
        files = {p.relative_to(tmp).as_posix(): _sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        origin = dict(source or getattr(policy, "origin_", None) or {})
        manifest = {"kind": KIND, "format": FORMAT, "camdf_version": __version__, "source": origin,
                    "method": policy.method, "lam": float(policy.lam), "files": files}
        if getattr(policy, "cost_unit_", None) is not None:
            manifest["cost_unit"] = policy.cost_unit_
            manifest["task_value"] = getattr(policy, "task_value_", None)
        if fit is not None:
            manifest["fit"] = fit
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for p in [tmp, *tmp.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if folder.exists():
            folder.rmdir()  # empty (checked above)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _resolved(path: Path, name: Path) -> Path:
    """``path`` with its links followed; ValueError naming ``name`` for a link loop (or a path the system refuses)."""
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 raises this for a symlink loop
        raise ValueError(f"{name}: a symlink loop (expected a file of the policy)") from None
    except OSError as err:
        raise ValueError(f"{name}: cannot resolve: {err.strerror or type(err).__name__}") from None


def check_booster_file(path: Path, data: bytes) -> str:
    """The LightGBM model text of an exported ``boosters/<k>.txt`` (``data``: its bytes, as checked against the
    manifest), checked against the project's bounds.

    :func:`camdf.policies.tree_text.parse_model` bounds it (trees, ``num_leaves`` against the leaf values
    present, feature indices below ``max_feature_idx + 1``, finite thresholds and leaf values, every array's
    length, the text's size) before LightGBM or the numpy reader sees it. ValueError naming ``path``, the tree
    and the field, e.g. ``boosters/0.txt: tree 3: num_leaves=2000000000 but 31 leaf values``.
    """
    from camdf.policies.tree_text import parse_model

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: expected LightGBM's text model format (UTF-8 text)") from None
    parse_model(text, str(path))
    return text


def is_export(folder: Path) -> bool:
    """Whether ``folder`` looks like an exported policy (it has a manifest and no MLflow ``MLmodel``)."""
    manifest = folder / MANIFEST  # a link (a loop among them), a FIFO too: read_export then says what is wrong with it
    return os.path.lexists(manifest) and not (folder / "MLmodel").exists()


def read_export(folder: str | os.PathLike, lean: bool = False):
    """The StopPolicy of an exported folder, after checking every file against the manifest.

    With ``lean``, the :class:`~camdf.runtime.lean.LeanPolicy` of its numbers when its rule has a portable
    form (built from the checked ``policy.json`` and boosters, without scikit-learn or LightGBM).
    Raises ValueError naming the file and what is wrong (no manifest, another layout, a manifest nested
    too deep, a symlink loop, a file missing, altered or too large, a reference to a file the manifest does
    not list, a model text outside the project's bounds: :func:`check_booster_file`)."""
    from camdf.runtime.policy_file import policy_from_numbers

    folder = Path(folder)
    where = folder / MANIFEST
    try:
        manifest = json.loads(read_regular(where, MAX_BYTES, f"a regular file of at most {MAX_BYTES >> 20} MB"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"{where}: not JSON") from None
    except RecursionError:
        raise ValueError(f"{where}: not a camdf manifest (JSON nested deeper than Python reads)") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND or manifest.get("format") != FORMAT:
        raise ValueError(f"{where}: not a camdf policy export of format {FORMAT}")
    files = manifest.get("files")
    if not isinstance(files, dict) or POLICY_FILE not in files:
        raise ValueError(f"{where}: files: expected the SHA-256 of each file, {POLICY_FILE} among them")
    root = _resolved(folder, folder)
    for rel in files:  # every path first: a manifest naming a file outside the folder is refused as such
        if not isinstance(rel, str) or not rel or "\0" in rel:
            raise ValueError(f"{where}: files: {str(rel)[:80]!r} is not a file name")
        path = _resolved(folder / rel, folder / rel)
        if not path.is_relative_to(root) or path == root:
            raise ValueError(f"{where}: files: {rel!r} leads outside the folder")
    # Each listed file is read once: the bytes checked against the manifest are the bytes parsed below (a file
    # swapped between the check and the parse is never read).
    blobs: dict[str, bytes] = {}
    for rel, digest in files.items():
        path = _resolved(folder / rel, folder / rel)
        if not os.path.lexists(path):
            raise ValueError(f"{folder / rel}: missing (the manifest lists it)")
        blobs[rel] = read_regular(path, MAX_BYTES, f"a file of at most {MAX_BYTES >> 20} MB")
        if hashlib.sha256(blobs[rel]).hexdigest() != digest:
            raise ValueError(f"{folder / rel}: its SHA-256 differs from the manifest's (altered or damaged)")
    # A checksum anyone can rewrite says nothing of the content: every model text is parsed and bounded by
    # the project (tree_text.parse_model) before anything else reads it - LightGBM's parser aborts the process
    # on some texts (num_leaves=2000000000).
    texts = {rel: check_booster_file(folder / rel, blobs[rel]) for rel in sorted(files)
             if rel.startswith(f"{_BOOSTERS}/")}
    try:
        numbers = json.loads(blobs[POLICY_FILE])
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError(f"{folder / POLICY_FILE}: not JSON") from None
    from camdf.runtime.folder_schema import POLICY_FIELDS, check_fields
    from camdf.runtime.policy_file import _refuse_non_finite

    _refuse_non_finite(numbers, folder / POLICY_FILE)
    check_fields(numbers, POLICY_FIELDS, str(folder / POLICY_FILE))
    try:
        policy = _lean(_join_boosters(numbers, texts), folder, manifest.get("cost_unit")) if lean else None
        if policy is None:
            policy = policy_from_numbers(_join_boosters(numbers, texts))
    except ValueError as err:
        raise ValueError(f"{folder / POLICY_FILE}: {err}") from None
    source = manifest.get("source") if isinstance(manifest.get("source"), dict) else {}
    policy.origin_ = {"uri": str(folder), "version": source.get("version"), "exported_from": source.get("uri")}
    _read_units(manifest, where, policy)
    return policy


def _read_units(manifest: dict, where: Path, policy) -> None:
    """``cost_unit`` and ``task_value`` of the manifest onto ``policy`` (its front door prices by them)."""
    from camdf.costs.units import TOKENS, lam_from_task_value

    unit = manifest.get("cost_unit")
    if unit is None:
        return
    if unit != TOKENS:
        raise ValueError(f"{where}: cost_unit: expected {TOKENS!r} or none, got {str(unit)[:80]!r}")
    value = manifest.get("task_value")
    if value is not None:
        lam_from_task_value(value, f"{where}: task_value")
    policy.cost_unit_, policy.task_value_ = unit, value
    policy.__dict__.pop("_door", None)  # built with the units from now on


def _lean(numbers: dict, folder: Path, cost_unit: str | None):
    """The lean policy of an exported folder's checked numbers (None: the rule has no portable form); deciding
    what it cannot, it reads the folder again in full. ``cost_unit`` (the manifest's) is checked by
    :func:`_read_units` after."""
    from camdf.runtime.lean import LeanPolicy, lean_of_export

    found = lean_of_export(numbers, cost_unit if isinstance(cost_unit, str) else None)
    return None if found is None else LeanPolicy(found, full=lambda: read_export(folder))
