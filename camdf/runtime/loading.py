"""Load a logged StopPolicy back by URI (``runs:/``, ``models:/``) or from a model folder.

:func:`load_policy` reads a local model (a folder, or a ``models:/`` URI in a SQLite
store whose artifacts are local files) without importing MLflow, so that ``camdf
select`` starts in about a second; every other URI is downloaded through MLflow and read the
same way. Nothing is unpickled: the policy is read from its JSON numbers
(:mod:`camdf.runtime.policy_file`), and an artifact path leading out of the model folder is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The shipped policy's registered name and alias (the train stage registers it): ``models:/camdf-stopper@champion``.
REGISTERED_NAME = "camdf-stopper"
CHAMPION = "champion"
CHAMPION_URI = f"models:/{REGISTERED_NAME}@{CHAMPION}"


def default_tracking_uri() -> str:
    """The store a loader reads: ``MLFLOW_TRACKING_URI`` if set, else the checkout's ``outputs/mlflow.db``.

    The second is where ``make reproduce`` records everything (``conf/tracking/local.yaml``;
    ``CAMDF_ROOT`` moves the checkout as it does for the pipeline).
    """
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = os.environ.get("CAMDF_ROOT") or Path(__file__).resolve().parents[2]
    return f"sqlite:///{Path(root, 'outputs', 'mlflow.db')}"


class _UseMlflow(Exception):
    """The fast path cannot resolve this URI; MLflow must."""


def _file_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI or a plain path; None for any other scheme."""
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(uri).path))
    if "://" in uri or uri.startswith(("models:", "runs:")):
        return None
    return Path(uri)


def _registered_folder(uri: str, tracking: str, where: str, hint: str) -> tuple[Path, str]:
    """The local artifact folder of ``models:/<name>@<alias>`` or ``models:/<name>/<version>`` in a
    SQLite store and its version, read with the standard library (read-only: a missing store is not created)."""
    import sqlite3

    from camdf.common.waits import open_sqlite

    if not tracking.startswith("sqlite:///"):
        raise _UseMlflow
    spec = uri[len("models:/"):]
    if "@" in spec:
        name, alias = spec.rsplit("@", 1)
        query = ("SELECT v.storage_location, v.status, v.version FROM registered_model_aliases a JOIN model_versions v "
                 "ON v.name = a.name AND v.version = a.version WHERE a.name = ? AND a.alias = ?")
        args, what = (name, alias), f"no model {name!r} with alias {alias!r}"
    else:
        name, _, version = spec.rpartition("/")
        if not name or not version.isdigit():
            raise _UseMlflow  # models:/name/latest, a stage, a logged model id: MLflow's own
        query = "SELECT storage_location, status, version FROM model_versions WHERE name = ? AND version = ?"
        args, what = (name, int(version)), f"no version {version} of model {name!r}"
    db = Path(tracking[len("sqlite:///"):])
    if not db.is_file():
        raise ValueError(f"policy: cannot load {uri!r}{where}: the store does not exist{hint}")
    try:
        with open_sqlite(db, read_only=True) as conn:
            row = conn.execute(query, args).fetchone()
    except sqlite3.Error:
        raise _UseMlflow from None  # another schema, a locked file: MLflow decides
    if row is None:
        raise ValueError(f"policy: cannot load {uri!r}{where}: {what}{hint}")
    location, status, version = row
    folder = _file_path(location or "")
    if folder is None or status != "READY":
        raise _UseMlflow
    return folder, str(version)


def _artifact(folder: Path, artifacts: dict, name: str, uri: str, mlmodel: Path) -> Path | None:
    """The file of artifact ``name`` that ``MLmodel`` names, inside ``folder`` (None when it names none).

    A path that leads outside the model folder (``..``, an absolute path, a link out of it) is refused:
    a model folder is read as data, and only its own files."""
    entry = artifacts.get(name)
    if entry is None:
        return None
    rel = entry.get("path") if isinstance(entry, dict) else None
    if not isinstance(rel, str) or not rel:
        raise ValueError(f"policy: cannot load {uri!r}: {mlmodel}: artifact {name!r} names no path")
    root = folder.resolve()
    path = (folder / rel).resolve()
    if not path.is_relative_to(root) or path == root:
        raise ValueError(f"policy: cannot load {uri!r}: {mlmodel}: artifact {name!r} path {rel!r} leads outside "
                         "the model folder")
    if path.exists() and not path.is_file():  # a FIFO or a device would block the reader, a folder is no file
        raise ValueError(f"policy: cannot load {uri!r}: {path}: not a regular file (a model folder holds files only)")
    return path


def _read_policy(folder: Path, uri: str, lean: bool = False):
    """The StopPolicy of a local model folder (its ``MLmodel`` names the policy's numbers, ``policy.json``);
    with ``lean``, the :class:`~camdf.runtime.lean.LeanPolicy` of its ``lean.json`` when it has one.

    Only JSON is read (:mod:`camdf.runtime.policy_file`): a pickle in the folder is refused, never loaded."""
    import yaml

    from camdf.common.waits import NotRegular, read_regular

    mlmodel = folder / "MLmodel"
    if not os.path.lexists(mlmodel):
        raise ValueError(f"policy: cannot load {uri!r}: {folder} holds no MLmodel file")
    try:
        meta = yaml.safe_load(read_regular(mlmodel, 1 << 20, "an MLmodel file").decode("utf-8"))
        artifacts = meta["flavors"]["python_function"]["artifacts"]
        if not isinstance(artifacts, dict) or "policy" not in artifacts:
            raise KeyError("policy")
    except NotRegular as err:
        raise ValueError(f"policy: cannot load {uri!r}: {err}") from None
    except (yaml.YAMLError, KeyError, TypeError, UnicodeDecodeError):
        raise ValueError(f"policy: cannot load {uri!r}: {mlmodel} does not describe a camdf policy model") from None
    from camdf.runtime.policy_file import POLICY_ARTIFACT

    path = _artifact(folder, artifacts, POLICY_ARTIFACT, uri, mlmodel)
    lean_path = _artifact(folder, artifacts, "lean", uri, mlmodel) if lean else None
    if lean_path is not None:
        from camdf.runtime.lean import LeanPolicy

        try:
            found = LeanPolicy.read(lean_path, full=lambda: _read_policy(folder, uri), policy_path=path)
        except ValueError as err:
            raise ValueError(f"policy: cannot load {uri!r}: {err}") from None
        if found is not None:
            return found
    if path.suffix == ".pkl":
        raise ValueError(f"policy: cannot load {uri!r}: {path} is a pickle (a model logged by an older camdf); "
                         "camdf never unpickles a model: log it again with `python -m pipelines.train`")
    from camdf.runtime.policy_file import read_policy

    try:
        return read_policy(path)
    except ValueError as err:
        raise ValueError(f"policy: cannot load {uri!r}: {err}") from None


def _check_read_only_store(uri: str, tracking: str, where: str, hint: str) -> None:
    """A loader only reads a store: a SQLite store that is missing is refused (MLflow would create it), and one
    that is not a database (0 bytes, random bytes) is refused by :func:`check_store_file` (MLflow would make an
    empty store of a 0-byte file, which the stages would then accept)."""
    from camdf.tracking.locations import check_store_file, sqlite_path

    db = sqlite_path(tracking)
    if db is None:
        return
    if not db.exists():
        raise ValueError(f"policy: cannot load {uri!r}{where}: the store does not exist{hint}")
    check_store_file(tracking)


def load_policy(uri: str | None = None, lean: bool = False):
    """Load a policy from an MLflow model URI (``runs:/``, ``models:/``) or a local model folder.

    None (the default) loads the package's default policy (:func:`camdf.runtime.defaults.default_policy_dir`:
    a portable rule fitted on every built-in domain, for any catalog); ``models:/camdf-stopper@champion``
    (:data:`CHAMPION_URI`) is the pipeline's champion at its main cell. Store URIs are resolved in
    :func:`default_tracking_uri`. Raises ValueError naming the URI and the store when the
    model is not there or cannot be read. ``lean=True`` (``camdf select``) returns, for a
    local model or exported folder whose rule has a portable form (camdf_risk, camdf_transfer), its :class:`~camdf.runtime.lean.LeanPolicy`: the same decisions for
    a single short request without importing scikit-learn; its ``select_batch`` answers None
    for anything else and ``full()`` loads the StopPolicy.
    """
    if uri is None:
        from camdf.runtime.defaults import default_policy_dir

        folder = default_policy_dir()
        if not folder.is_dir():
            raise ValueError(f"policy: the package's default policy is missing ({folder}); reinstall camdf, or "
                             "run `make default-policy` in a checkout")
        uri = str(folder)
    if not isinstance(uri, str) or not uri.strip():
        raise ValueError(f"policy: expected a model URI or folder, got {uri!r}")
    hint = " (run `make reproduce` or `python -m pipelines.train` first)" if uri == CHAMPION_URI else ""
    tracking = where = None
    if uri.startswith(("models:/", "runs:/")):
        tracking = default_tracking_uri()
        where = f" in the tracking store {tracking}"
        _check_read_only_store(uri, tracking, where, hint)
    try:
        if uri.startswith("models:/"):
            folder, version = _registered_folder(uri, tracking, where, hint)
            return _stamped(_read_policy(folder, uri, lean), uri, version)
        folder = _file_path(uri)
        if folder is not None:
            if not folder.is_dir():
                raise ValueError(f"policy: cannot load {uri!r}: no such model folder")
            from camdf.runtime.export import is_export, read_export

            if is_export(folder):  # `camdf export`: JSON and LightGBM text, read without MLflow or YAML
                try:
                    return read_export(folder, lean=lean)
                except ValueError as err:
                    raise ValueError(f"policy: cannot load {uri!r}: {err}") from None
            return _stamped(_read_policy(folder, uri, lean), uri)
    except _UseMlflow:
        pass
    return _stamped(_load_with_mlflow(uri, tracking, where or "", hint), uri)


def _stamped(policy, uri: str, version: str | None = None):
    """``policy`` with ``origin_`` set: the URI it was loaded from and its registered version when the URI
    names one (``models:/name/3``), for a decision's trace and an export's manifest."""
    spec = uri[len("models:/"):] if uri.startswith("models:/") else ""
    if version is None and "@" not in spec and spec.rpartition("/")[2].isdigit():
        version = spec.rpartition("/")[2]
    try:
        policy.origin_ = {"uri": uri, "version": version}
    except AttributeError:  # a frozen object: no stamp
        pass
    return policy


def _load_with_mlflow(uri: str, tracking: str | None, where: str, hint: str):
    """The policy of a URI only MLflow resolves (a remote store, ``models:/name/latest``): its files are
    downloaded into a temporary folder and read as a local folder is (MLflow loads no model object)."""
    import tempfile

    from camdf.tracking.probe import TrackingUnreachable, check_server

    if tracking is not None:
        try:
            check_server(tracking)  # before importing MLflow: an unreachable server is one line in seconds
        except TrackingUnreachable as err:
            raise ValueError(f"policy: cannot load {uri!r}: {err}") from None

    import mlflow
    import mlflow.artifacts

    from camdf.common.progress import no_download_bars

    with tempfile.TemporaryDirectory(prefix="camdf-policy-") as tmp:
        try:
            with no_download_bars():  # one line on failure, no bars on success
                # the store passed, not set: MLflow's global URIs are the caller's (a harness's own tracking)
                folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=tmp, tracking_uri=tracking,
                                                                  registry_uri=tracking))
        except Exception as err:  # noqa: BLE001  the boundary: whatever MLflow raises, the URI is what is wrong
            text = str(err).strip()
            first = text.splitlines()[0] if text else type(err).__name__
            raise ValueError(f"policy: cannot load {uri!r}{where}: {first}{hint}") from None
        if not (folder / "MLmodel").is_file():
            raise ValueError(f"policy: cannot load {uri!r}{where}: not a camdf policy model")
        return _read_policy(folder, uri)
