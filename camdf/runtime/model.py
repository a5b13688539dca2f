"""The pyfunc model class of a logged StopPolicy (imported only where MLflow is: logging, loading, serving)."""

from __future__ import annotations

import pickle

import mlflow.pyfunc
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

from camdf.runtime.pyfunc import frame_requests, selections_frame


class InvalidRequest(MlflowException, ValueError):
    """A request the policy refuses: a ValueError for library callers, an HTTP 400 (no stack trace) when served."""

    def __init__(self, message: str):
        super().__init__(message, error_code=INVALID_PARAMETER_VALUE)


class StopPolicyModel(mlflow.pyfunc.PythonModel):
    """Input: one request per row (columns ``tools``, ``scores``, ``costs``, ``query``); params ``lam``, ``alpha``.

    Output: one selection per row (``depth``, ``exposed``, ``ranked``, ``tools``), exactly
    :meth:`camdf.runtime.StopPolicy.select_batch` on the same requests and dials.
    """

    def load_context(self, context):
        with open(context.artifacts["policy"], "rb") as fh:
            self.policy = pickle.load(fh)

    def predict(self, context, model_input, params=None):
        params = params or {}
        try:
            requests = frame_requests(model_input)
            selections = self.policy.select_batch(requests, lam=params.get("lam"), alpha=params.get("alpha"))
        except ValueError as err:
            raise InvalidRequest(str(err)) from None
        return selections_frame(selections)
