"""A fitted StopPolicy as data: JSON numbers (a booster in LightGBM's text model format inside), never a pickle.

:func:`policy_numbers` writes everything a :class:`~camdf.runtime.StopPolicy` decides with: its
parameters, the training vocabulary and costs, the membership model's coefficients and the
rule's portable form (``to_numbers()``); :func:`policy_from_numbers` rebuilds it with the
class of the rule's registry card (``from_numbers()``), so a loader has no per-method code and
a new rule that declares the pair ships as it is. Reading runs no code from the file: JSON is
parsed, numbers are checked, LightGBM parses its own text format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from camdf.common.waits import read_regular
from camdf.runtime.folder_schema import POLICY_FIELDS, check_fields

#: The artifact name of the policy's numbers in a logged model, and its file name.
POLICY_ARTIFACT = "policy"
POLICY_FILE = "policy.json"
#: The layout of :func:`policy_numbers`; a reader refuses another.
FORMAT = 1
#: A policy file larger than this is refused before it is parsed (a shipped policy is a few MB).
MAX_BYTES = 256 * 2**20


def policy_numbers(policy) -> dict:
    """The JSON-ready numbers of a fitted :class:`~camdf.runtime.StopPolicy`.

    Raises ValueError naming the method when its fitted rule has no portable form (``to_numbers``).
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(policy)
    rule = policy.rule_
    if not hasattr(rule, "to_numbers"):
        raise ValueError(f"method: the {policy.method} rule has no portable form (to_numbers), so it cannot ship")
    out = {"format": FORMAT, "params": policy.get_params(), "vocab": [str(v) for v in policy.vocab_],
           "costs": {str(k): float(v) for k, v in policy.costs_.items()},
           "membership": policy.membership_.to_numbers(), "rule": rule.to_numbers()}
    if getattr(policy, "fit_range_", None) is not None:
        out["fit_range"] = policy.fit_range_
    return out


def policy_from_numbers(numbers: Any):
    """The fitted :class:`~camdf.runtime.StopPolicy` of :func:`policy_numbers`.

    The rule is rebuilt by the ``from_numbers`` of the class its registry card builds (the
    method, or its lambda-conditioned form with ``lam_grid``). Raises ValueError naming the
    field when the numbers are not a policy this code reads.
    """
    from camdf.core.membership import MembershipModel
    from camdf.runtime.policy import StopPolicy

    if not isinstance(numbers, dict) or numbers.get("format") != FORMAT:
        got = numbers.get("format") if isinstance(numbers, dict) else type(numbers).__name__
        raise ValueError(f"format: expected a camdf policy of format {FORMAT}, got {got!r}")
    try:
        params = numbers["params"]
        if not isinstance(params, dict) or set(params) - set(StopPolicy._get_param_names()):
            raise ValueError(f"params: expected StopPolicy parameters, got {params!r:.200}")
        policy = StopPolicy(**params)
        template = policy._rule()  # an unfitted rule of the card it was fitted as (ValueError: unknown method)
        read = getattr(type(template), "from_numbers", None)
        if read is None:
            raise ValueError(f"method: the {policy.method} rule has no portable form (from_numbers)")
        policy.rule_ = read(numbers["rule"])
        policy.membership_ = MembershipModel.from_numbers(numbers["membership"])
        policy.vocab_ = [str(v) for v in numbers["vocab"]]
        policy.costs_ = {str(k): float(v) for k, v in dict(numbers["costs"]).items()}
        if numbers.get("fit_range") is not None:  # absent from a policy written before ranges were kept
            policy.fit_range_ = {k: [float(x) for x in v] for k, v in numbers["fit_range"].items()}
    except KeyError as err:
        raise ValueError(f"{err.args[0]}: missing from the policy's numbers") from None
    except (TypeError, AttributeError, OverflowError) as err:
        raise ValueError(f"not the numbers of a camdf policy ({err})") from None
    if len(policy.vocab_) != policy.membership_.n_vocab_:
        raise ValueError(f"vocab: {len(policy.vocab_)} tools, but the membership model has "
                         f"{policy.membership_.n_vocab_} identity columns")
    return policy


def write_policy(policy, path: Path) -> Path:
    """Write :func:`policy_numbers` of ``policy`` to ``path`` (JSON) and return it."""
    Path(path).write_text(json.dumps(policy_numbers(policy)), encoding="utf-8")
    return Path(path)


def _refuse_non_finite(numbers, path: Path) -> None:
    """A policy's numbers are finite: a NaN coefficient would answer every request "expose nothing"."""
    from camdf.runtime.finite import _paths

    for where in _paths(numbers):
        raise ValueError(f"{path}: {where}: expected a finite number, got NaN or Infinity")


def read_policy(path: Path):
    """The StopPolicy of a file :func:`write_policy` wrote; ValueError naming the file and what is wrong
    (unreadable, too large, not JSON - a pickle, say -, or not a policy's numbers). Nothing in it is run."""
    path = Path(path)
    try:
        text = read_regular(path, MAX_BYTES, f"a camdf policy's JSON of at most {MAX_BYTES >> 20} MB").decode("utf-8")
        numbers = json.loads(text)
        _refuse_non_finite(numbers, path)
        check_fields(numbers, POLICY_FIELDS, str(path))
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err.strerror or type(err).__name__}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError(f"{path}: not JSON (a camdf policy is {POLICY_FILE}; a pickle is never loaded)") from None
    try:
        return policy_from_numbers(numbers)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
