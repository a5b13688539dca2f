"""The logged model's interface without MLflow: its typed signature, and request and selection frames.

One row per request, with the columns ``tools`` (a list of OpenAI function tools or MCP
tool descriptions), ``scores`` and ``costs`` (lists of numbers, optional) and ``query``
(optional); the params are ``lam`` and the registered rules' run-time dials (by name, from the cards).
MLflow is imported only inside :func:`signature`.
"""

from __future__ import annotations

import math
from typing import Any

from camdf.policies.registry import dial_specs

#: The request fields a row of the model's input carries (the typed signature's columns).
INPUT_COLUMNS = ("tools", "scores", "costs", "query")


def dial_params() -> tuple[str, ...]:
    """The model's params besides ``lam``: every registered rule's run-time dial, by name."""
    return tuple(sorted(dial_specs()))


def signature(policy):
    """The model's :class:`mlflow.models.ModelSignature`: the request columns in, the selection out.

    Inputs: ``tools`` (array of objects, required), ``scores`` and ``costs`` (arrays of
    doubles, optional), ``query`` (string, optional). Params: ``lam`` (default: the lambda
    the policy was trained at) and every registered rule's dial (:func:`dial_params`): the
    policy's own default where its rule has the
    dial, else None (the rule refuses it). Outputs: ``depth`` (optional, absent for a set rule),
    ``exposed`` and ``ranked`` (tool names) and ``tools`` (the exposed tools as given), and ``deferred``
    (tool names left to the harness's search) when the policy's rule defers.
    """
    from mlflow.models import ModelSignature
    from mlflow.types.schema import AnyType, Array, ColSpec, ParamSchema, ParamSpec, Schema

    inputs = Schema([ColSpec(Array(AnyType()), "tools"), ColSpec(Array("double"), "scores", required=False),
                     ColSpec(Array("double"), "costs", required=False), ColSpec("string", "query", required=False)])
    # depth is absent (null) when the shipped rule is a set rule: its exposed tools are any subset of the ranking.
    depth = ColSpec("long", "depth") if policy.picks_prefix else ColSpec("long", "depth", required=False)
    deferred = [ColSpec(Array("string"), "deferred")] if policy.door.defers else []
    outputs = Schema([depth, ColSpec(Array("string"), "exposed"), ColSpec(Array("string"), "ranked"),
                      ColSpec(Array(AnyType()), "tools"), *deferred])
    defaults = policy.dial_defaults()
    params = ParamSchema([ParamSpec("lam", "double", float(policy.lam)),
                          *[ParamSpec(d, "double", None if defaults.get(d) is None else float(defaults[d]))
                            for d in dial_params()]])
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
    """The model's output frame: one row per selection (``depth``, ``exposed``, ``ranked``, ``tools``, and
    ``deferred`` when the rule defers)."""
    import pandas as pd

    frame = pd.DataFrame({"depth": [s.depth for s in selections],
                          "exposed": [s.exposed for s in selections],
                          "ranked": [s.ranked for s in selections], "tools": [s.tools for s in selections]})
    if any(s.defers for s in selections):
        frame["deferred"] = [s.deferred for s in selections]
    return frame


