"""The pyfunc model class of a logged StopPolicy (imported only where MLflow is: logging, loading, serving).

The model is logged from code (:mod:`camdf.runtime.served`), so MLflow pickles no instance of it;
:meth:`StopPolicyModel.load_context` reads the policy from its JSON numbers
(:mod:`camdf.runtime.portable`), never from a pickle.
"""

from __future__ import annotations

import mlflow.pyfunc
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

from camdf.runtime.jsonio import parse_json
from camdf.runtime.signature import frame_requests, selections_frame


class InvalidRequest(MlflowException, ValueError):
    """A request the policy refuses: a ValueError for library callers, an HTTP 400 (no stack trace) when served.

    The message stays the field's own: MLflow's scoring server rewrites an exception's
    ``message`` to ``Failed to predict data '<the whole frame>'. Error: ...``, which would
    bury it (and echo the body back); the first message set is kept.
    """

    def __init__(self, message: str):
        super().__init__(message, error_code=INVALID_PARAMETER_VALUE)

    @property
    def message(self) -> str:
        return self._field_message

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_field_message"):
            self._field_message = value


def guard_scoring_server() -> None:
    """Refuse a hostile body with a 400 before MLflow's scoring server parses it.

    The server decodes the body with ``json.loads``: nesting 100k deep ends in a
    RecursionError and a 5,000-digit number in a ValueError, both answered 500. The guard
    wraps its decoder so the body is first checked by :func:`camdf.runtime.jsonio.parse_json`
    (UTF-8, depth, number length, JSON syntax), whose refusal becomes an
    :class:`InvalidRequest` naming the line and column. Installed once per process, when a
    served model loads; a server without that decoder is left as it is.
    """
    from mlflow.pyfunc import scoring_server

    decode = getattr(scoring_server, "_decode_json_input", None)
    if decode is None or getattr(decode, "camdf_guarded", False):
        return

    def guarded(json_input):
        if isinstance(json_input, (bytes, str)):
            data = json_input.encode("utf-8", "surrogatepass") if isinstance(json_input, str) else json_input
            try:
                parse_json(data, "request body")
            except ValueError as err:
                raise InvalidRequest(str(err)) from None
        return decode(json_input)

    guarded.camdf_guarded = True
    scoring_server._decode_json_input = guarded


class StopPolicyModel(mlflow.pyfunc.PythonModel):
    """Input: one request per row (columns ``tools``, ``scores``, ``costs``, ``query``); params ``lam`` and the dials.

    Output: one selection per row (``depth``, ``exposed``, ``ranked``, ``tools``), exactly
    :meth:`camdf.runtime.StopPolicy.select_batch` on the same requests and dials.
    """

    def load_context(self, context):
        from camdf.runtime.portable import POLICY_ARTIFACT, read_policy

        self.policy = read_policy(context.artifacts[POLICY_ARTIFACT])
        guard_scoring_server()

    def predict(self, context, model_input, params=None):
        params = params or {}
        try:
            requests = frame_requests(model_input)
            dials = {k: v for k, v in params.items() if k != "lam"}
            selections = self.policy.select_batch(requests, lam=params.get("lam"), **dials)
        except ValueError as err:
            raise InvalidRequest(str(err)) from None
        return selections_frame(selections)
