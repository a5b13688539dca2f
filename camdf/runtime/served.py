"""The models-from-code file of a logged StopPolicy: MLflow runs it to build the pyfunc model.

:func:`camdf.runtime.publish.log_policy` logs this file as the model's code, so the model folder
holds no pickled object of camdf's: MLflow copies the file, and loading it imports the installed
camdf and builds an empty :class:`~camdf.runtime.model.StopPolicyModel`, whose ``load_context``
reads the policy's JSON numbers from the folder's artifacts.
"""

from mlflow.models import set_model

from camdf.runtime.model import StopPolicyModel

set_model(StopPolicyModel())
