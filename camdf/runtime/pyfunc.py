"""The stopper as an MLflow pyfunc model: log a fitted StopPolicy, load one back by URI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from camdf.runtime.policy import StopPolicy


def _pyfunc_class():
    import mlflow.pyfunc

    class StopPolicyModel(mlflow.pyfunc.PythonModel):
        """Input: a column ``request`` of JSON requests; output: a column ``response`` of JSON selections."""

        def load_context(self, context):
            import pickle

            with open(context.artifacts["policy"], "rb") as fh:
                self.policy = pickle.load(fh)

        def predict(self, context, model_input, params=None):
            requests = [json.loads(r) if isinstance(r, str) else r for r in model_input["request"]]
            selections = self.policy.select_batch(requests)
            return pd.DataFrame({"response": [json.dumps(s.to_json()) for s in selections]})

    return StopPolicyModel


def log_policy(policy: StopPolicy, name: str = "policy", example: dict | None = None,
               registered_model_name: str | None = None) -> str:
    """Log the policy as an MLflow pyfunc model in the active run; returns its model URI."""
    import pickle
    import tempfile

    import mlflow
    from mlflow.models import infer_signature

    import logging
    import warnings

    logging.getLogger("mlflow.pyfunc").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        path = Path(tmp, "policy.pkl")
        path.write_bytes(pickle.dumps(policy))
        frame = pd.DataFrame({"request": [json.dumps(example or {})]})
        out = pd.DataFrame({"response": [json.dumps({"tools": [], "depth": 0, "ranked": [], "exposed": []})]})
        info = mlflow.pyfunc.log_model(
            name=name, python_model=_pyfunc_class()(), artifacts={"policy": str(path)},
            signature=infer_signature(frame, out), input_example=frame,
            registered_model_name=registered_model_name,
        )
    return info.model_uri


#: The shipped policy's registered name and alias: ``models:/camdf-stopper@champion``.
REGISTERED_NAME = "camdf-stopper"
CHAMPION = "champion"
CHAMPION_URI = f"models:/{REGISTERED_NAME}@{CHAMPION}"


def default_tracking_uri() -> str:
    """The store a loader reads: ``MLFLOW_TRACKING_URI`` if set, else the checkout's ``outputs/mlflow.db``.

    The second is where ``make reproduce`` records everything (``conf/tracking/local.yaml``;
    ``CAMDF_ROOT`` moves the checkout as it does for the pipeline).
    """
    import os

    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    from camdf.pipeline.resolvers import project_root

    root = os.environ.get("CAMDF_ROOT") or project_root()
    return f"sqlite:///{Path(root, 'outputs', 'mlflow.db')}"


def load_policy(uri: str = CHAMPION_URI) -> StopPolicy:
    """Load a policy from an MLflow model URI (``runs:/``, ``models:/``) or a local model folder.

    The default is the shipped champion (:data:`CHAMPION_URI`); store URIs are resolved in
    :func:`default_tracking_uri`. Raises ValueError naming the URI and the store when the
    model is not there.
    """
    import mlflow.pyfunc
    from mlflow.exceptions import MlflowException

    if uri.startswith(("models:/", "runs:/")):
        tracking = default_tracking_uri()
        mlflow.set_tracking_uri(tracking)
        mlflow.set_registry_uri(tracking)
        where = f" in the tracking store {tracking}"
    else:
        where = ""
    try:
        return mlflow.pyfunc.load_model(uri).unwrap_python_model().policy
    except (MlflowException, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        hint = " (run `make reproduce` or `python -m pipelines.train` first)" if uri == CHAMPION_URI else ""
        raise ValueError(f"policy: cannot load {uri!r}{where}: {first}{hint}") from None
