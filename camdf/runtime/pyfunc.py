"""The stopper as an MLflow pyfunc model: log a fitted StopPolicy, load one back by URI.

The logged model has a typed signature: one row per request, with the columns
``tools`` (a list of OpenAI function tools or MCP tool descriptions), ``scores`` and
``costs`` (lists of numbers, optional) and ``query`` (optional), and the params
``lam`` and ``alpha`` (:data:`INPUT_COLUMNS`, :func:`signature`). Its requirements
are installable: the checkout's camdf is built as a wheel, logged with the model
(``artifacts/camdf-<version>-py3-none-any.whl``) and named by that relative path in
``requirements.txt``, which MLflow's environment managers install from the model's
folder.

:func:`load_policy` reads a local model (a folder, or a ``models:/`` URI in a SQLite
store whose artifacts are local files) without importing MLflow, so that ``camdf
select`` starts in about a second; every other URI goes through MLflow.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: The request fields a row of the model's input carries (the typed signature's columns).
INPUT_COLUMNS = ("tools", "scores", "costs", "query")
#: The model's params: the run-time dials.
PARAMS = ("lam", "alpha")
#: The shipped policy's registered name and alias: ``models:/camdf-stopper@champion``.
REGISTERED_NAME = "camdf-stopper"
CHAMPION = "champion"
CHAMPION_URI = f"models:/{REGISTERED_NAME}@{CHAMPION}"


def signature(policy):
    """The model's :class:`mlflow.models.ModelSignature`: the request columns in, the selection out.

    Inputs: ``tools`` (array of objects, required), ``scores`` and ``costs`` (arrays of
    doubles, optional), ``query`` (string, optional). Params: ``lam`` (default: the lambda
    the policy was trained at) and ``alpha`` (camdf_risk's target miss rate; default its own,
    None for the payoff rules, which refuse it). Outputs: ``depth``, ``exposed`` and
    ``ranked`` (tool names) and ``tools`` (the exposed tools as given).
    """
    from mlflow.models import ModelSignature
    from mlflow.types.schema import AnyType, Array, ColSpec, ParamSchema, ParamSpec, Schema

    inputs = Schema([ColSpec(Array(AnyType()), "tools"), ColSpec(Array("double"), "scores", required=False),
                     ColSpec(Array("double"), "costs", required=False), ColSpec("string", "query", required=False)])
    outputs = Schema([ColSpec("long", "depth"), ColSpec(Array("string"), "exposed"), ColSpec(Array("string"), "ranked"),
                      ColSpec(Array(AnyType()), "tools")])
    alpha = float(policy.alpha) if policy.method == "camdf_risk" else None
    params = ParamSchema([ParamSpec("lam", "double", float(policy.lam)), ParamSpec("alpha", "double", alpha)])
    return ModelSignature(inputs=inputs, outputs=outputs, params=params)


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def frame_requests(frame) -> list[dict]:
    """The requests of a model input frame, one per row (a missing or null cell: the field is absent).

    Raises ValueError naming a column outside :data:`INPUT_COLUMNS`.
    """
    unknown = [str(c) for c in frame.columns if c not in INPUT_COLUMNS]
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown column (expected some of {', '.join(INPUT_COLUMNS)})")
    out = []
    for row in frame.to_dict(orient="records"):
        request = {}
        for key, value in row.items():
            if hasattr(value, "tolist"):  # numpy arrays from schema enforcement
                value = value.tolist()
            if not _absent(value):
                request[key] = value
        out.append(request)
    return out


def selections_frame(selections):
    """The model's output frame: one row per selection (``depth``, ``exposed``, ``ranked``, ``tools``)."""
    import pandas as pd

    return pd.DataFrame({"depth": [s.depth for s in selections],
                         "exposed": [s.ranked[: s.depth] for s in selections],
                         "ranked": [s.ranked for s in selections], "tools": [s.tools for s in selections]})


def build_wheel(dst: Path) -> Path:
    """Build the checkout's camdf as a wheel into ``dst`` and return its path.

    The sources (``pyproject.toml``, ``README.md``, ``camdf/``) are copied to a temporary
    folder first, so that the build writes nothing into the checkout. Raises RuntimeError
    when camdf is not imported from a checkout or the build fails.
    """
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "camdf" / "__init__.py").is_file():
        raise RuntimeError(f"camdf wheel: {root} is not a camdf checkout (no pyproject.toml); log the policy "
                           "from a checkout")
    dst.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="camdf-wheel-") as tmp:
        src = Path(tmp, "src")
        shutil.copytree(root / "camdf", src / "camdf", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                               "-q", "-w", str(dst), str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"camdf wheel: pip wheel exited {proc.returncode}: {proc.stderr[-2000:]}")
    wheels = sorted(dst.glob("camdf-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"camdf wheel: expected one wheel in {dst}, found {[w.name for w in wheels]}")
    return wheels[0]


def log_policy(policy, name: str = "policy", example: dict | None = None,
               registered_model_name: str | None = None) -> str:
    """Log the policy as an MLflow pyfunc model in the active run; returns its model URI.

    The model carries :func:`signature`, ``example`` (one request) as its input example,
    and the camdf wheel (:func:`build_wheel`) that its ``requirements.txt`` names.
    """
    import logging
    import warnings

    logging.getLogger("mlflow.pyfunc").setLevel(logging.ERROR)
    # MLflow checks the input example by loading the model back: no download bars for that.
    quiet = {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    saved = {k: os.environ.get(k) for k in quiet}
    os.environ.update(quiet)
    try:
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return _log_model(policy, Path(tmp), name, example, registered_model_name)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _log_model(policy, tmp: Path, name: str, example: dict | None, registered_model_name: str | None) -> str:
    import cloudpickle
    import mlflow
    import pandas as pd

    from camdf.runtime.model import StopPolicyModel

    from camdf.runtime.lean import LEAN_ARTIFACT, lean_numbers

    path = Path(tmp, "policy.pkl")
    path.write_bytes(pickle.dumps(policy))
    wheel = build_wheel(Path(tmp, "wheel"))
    artifacts = {"policy": str(path), "wheel": str(wheel)}
    lean = lean_numbers(policy)
    if lean is not None:  # what camdf select reads without scikit-learn (camdf.runtime.lean)
        artifacts[LEAN_ARTIFACT] = str(Path(tmp, "lean.json"))
        Path(artifacts[LEAN_ARTIFACT]).write_text(json.dumps(lean), encoding="utf-8")
    frame = None
    if example is not None:
        frame = pd.DataFrame([{k: example[k] for k in INPUT_COLUMNS if example.get(k) is not None}])
    info = mlflow.pyfunc.log_model(
        name=name, python_model=StopPolicyModel(), artifacts=artifacts,
        signature=signature(policy), input_example=frame, registered_model_name=registered_model_name,
        # MLflow's environment managers install these from the model's folder, where the wheel is.
        pip_requirements=[f"mlflow=={mlflow.__version__}", f"cloudpickle=={cloudpickle.__version__}",
                          f"artifacts/{wheel.name}"],
    )
    return info.model_uri


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


def _registered_folder(uri: str, tracking: str, where: str, hint: str) -> Path:
    """The local artifact folder of ``models:/<name>@<alias>`` or ``models:/<name>/<version>`` in a
    SQLite store, read with the standard library (read-only: a missing store is not created)."""
    import sqlite3

    if not tracking.startswith("sqlite:///"):
        raise _UseMlflow
    spec = uri[len("models:/"):]
    if "@" in spec:
        name, alias = spec.rsplit("@", 1)
        query = ("SELECT v.storage_location, v.status FROM registered_model_aliases a JOIN model_versions v "
                 "ON v.name = a.name AND v.version = a.version WHERE a.name = ? AND a.alias = ?")
        args, what = (name, alias), f"no model {name!r} with alias {alias!r}"
    else:
        name, _, version = spec.rpartition("/")
        if not name or not version.isdigit():
            raise _UseMlflow  # models:/name/latest, a stage, a logged model id: MLflow's own
        query = "SELECT storage_location, status FROM model_versions WHERE name = ? AND version = ?"
        args, what = (name, int(version)), f"no version {version} of model {name!r}"
    db = Path(tracking[len("sqlite:///"):])
    if not db.is_file():
        raise ValueError(f"policy: cannot load {uri!r}{where}: the store does not exist{hint}")
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
            row = conn.execute(query, args).fetchone()
    except sqlite3.Error:
        raise _UseMlflow from None  # another schema, a locked file: MLflow decides
    if row is None:
        raise ValueError(f"policy: cannot load {uri!r}{where}: {what}{hint}")
    location, status = row
    folder = _file_path(location or "")
    if folder is None or status != "READY":
        raise _UseMlflow
    return folder


def _read_policy(folder: Path, uri: str, lean: bool = False):
    """The StopPolicy of a local model folder (its ``MLmodel`` names the pickled policy); with ``lean``,
    the :class:`~camdf.runtime.lean.LeanRisk` of its ``lean.json`` when it has one."""
    import yaml

    mlmodel = folder / "MLmodel"
    if not mlmodel.is_file():
        raise ValueError(f"policy: cannot load {uri!r}: {folder} holds no MLmodel file")
    try:
        meta = yaml.safe_load(mlmodel.read_text(encoding="utf-8"))
        artifacts = meta["flavors"]["python_function"]["artifacts"]
        rel = artifacts["policy"]["path"]
    except (yaml.YAMLError, KeyError, TypeError, UnicodeDecodeError):
        raise ValueError(f"policy: cannot load {uri!r}: {mlmodel} does not describe a camdf policy model") from None
    if lean and isinstance(artifacts.get("lean"), dict) and "path" in artifacts["lean"]:
        from camdf.runtime.lean import LeanRisk

        found = LeanRisk.read(folder / artifacts["lean"]["path"], full=lambda: _read_policy(folder, uri))
        if found is not None:
            return found
    try:
        policy = pickle.loads((folder / rel).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as err:
        raise ValueError(f"policy: cannot load {uri!r}: {folder / rel}: {type(err).__name__}: {err}") from None
    from camdf.runtime.policy import StopPolicy

    if not isinstance(policy, StopPolicy):
        raise ValueError(f"policy: cannot load {uri!r}: {folder / rel} holds a {type(policy).__name__}, "
                         "not a StopPolicy")
    return policy


def load_policy(uri: str = CHAMPION_URI, lean: bool = False):
    """Load a policy from an MLflow model URI (``runs:/``, ``models:/``) or a local model folder.

    The default is the shipped champion (:data:`CHAMPION_URI`); store URIs are resolved in
    :func:`default_tracking_uri`. Raises ValueError naming the URI and the store when the
    model is not there or cannot be read. ``lean=True`` (``camdf select``) returns, for a
    local camdf_risk model, its :class:`~camdf.runtime.lean.LeanRisk`: the same decisions for
    a single short request without importing scikit-learn; its ``select_batch`` answers None
    for anything else and ``full()`` loads the StopPolicy.
    """
    if not isinstance(uri, str) or not uri.strip():
        raise ValueError(f"policy: expected a model URI or folder, got {uri!r}")
    hint = " (run `make reproduce` or `python -m pipelines.train` first)" if uri == CHAMPION_URI else ""
    tracking = where = None
    if uri.startswith(("models:/", "runs:/")):
        tracking = default_tracking_uri()
        where = f" in the tracking store {tracking}"
    try:
        if uri.startswith("models:/"):
            return _read_policy(_registered_folder(uri, tracking, where, hint), uri, lean)
        folder = _file_path(uri)
        if folder is not None:
            if not folder.is_dir():
                raise ValueError(f"policy: cannot load {uri!r}: no such model folder")
            return _read_policy(folder, uri, lean)
    except _UseMlflow:
        pass
    return _load_with_mlflow(uri, tracking, where or "", hint)


def _load_with_mlflow(uri: str, tracking: str | None, where: str, hint: str):
    import mlflow.pyfunc

    from camdf.runtime.policy import StopPolicy

    if tracking is not None:
        mlflow.set_tracking_uri(tracking)
        mlflow.set_registry_uri(tracking)
    try:
        policy = getattr(mlflow.pyfunc.load_model(uri).unwrap_python_model(), "policy", None)
    except Exception as err:  # noqa: BLE001  the boundary: whatever MLflow raises, the URI is what is wrong
        text = str(err).strip()
        first = text.splitlines()[0] if text else type(err).__name__
        raise ValueError(f"policy: cannot load {uri!r}{where}: {first}{hint}") from None
    if not isinstance(policy, StopPolicy):
        raise ValueError(f"policy: cannot load {uri!r}{where}: not a camdf policy model")
    return policy
