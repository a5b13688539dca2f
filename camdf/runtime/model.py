"""The pyfunc model class of a logged StopPolicy (imported only where MLflow is: logging, loading, serving).

The model is logged from code (:mod:`camdf.runtime.served`), so MLflow pickles no instance of it;
:meth:`StopPolicyModel.load_context` reads the policy from its JSON numbers
(:mod:`camdf.runtime.policy_file`), never from a pickle, and puts the door of
:mod:`camdf.runtime.http_guard` in front of MLflow's scoring server.
"""

from __future__ import annotations

import mlflow.pyfunc

from camdf.runtime.http_guard import InvalidRequest, guard_scoring_server
from camdf.runtime.signature import frame_requests, selections_frame


class StopPolicyModel(mlflow.pyfunc.PythonModel):
    """Input: one request per row (columns ``tools``, ``scores``, ``costs``, ``query``); params ``lam`` and the dials.

    Output: one selection per row (``depth``, ``exposed``, ``ranked``, ``tools``), exactly
    :meth:`camdf.runtime.StopPolicy.select_batch` on the same requests and dials.
    """

    def load_context(self, context):
        from camdf.runtime.policy_file import POLICY_ARTIFACT, read_policy

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
