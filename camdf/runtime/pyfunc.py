"""The stopper as an MLflow pyfunc model: log a fitted StopPolicy, load one back by URI."""

from __future__ import annotations

import json

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
    from pathlib import Path

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


def load_policy(uri: str) -> StopPolicy:
    """Load a policy from an MLflow model URI (``runs:/``, ``models:/``) or a local model folder."""
    import mlflow.pyfunc

    return mlflow.pyfunc.load_model(uri).unwrap_python_model().policy
