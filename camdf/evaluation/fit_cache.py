"""A lambda-conditioned rule fitted once per training batch and read back by every cell that trains it again.

``camdf_lambda`` trains across the lambda grid (``lambda_grid``), not at its cell's lambda, so the cells of
a lambda x d grid (A18: ten lambdas per d) refit the very same model on the very same batch. With a cache
folder :func:`fit_across` keys the fit by the content of everything it reads (every array of the training
batch and of its instances, the rule's class and parameters, the source of ``camdf.policies`` and
``camdf.core`` and the LightGBM version), keeps the fitted rule's portable numbers
(``to_numbers``: the booster in LightGBM's text format, never a pickle) in
``<cache>/models/<key>.npz`` with a checksum, and rebuilds it with ``from_numbers``: the same decisions
and tuned parameters, as the shipped policy's. Concurrent cells with the same key wait for the one fitting
it (a lock per key). A rule without a portable form is fitted as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from camdf.common.checked import read_checked_npz, write_checked_npz
from camdf.common.files import exclusive
from camdf.common.fingerprint import code_version, package_versions
from camdf.policies.base import StateBatch, StoppingRule

#: Layout of a cached fit; another value is never read.
FORMAT = 1


def fit_across(rule: StoppingRule, batch: StateBatch, cache_dir: str | Path | None) -> StoppingRule:
    """``rule`` fitted on ``batch`` (the training batch across the lambda grid), or the same fit read back."""
    if cache_dir is None or not hasattr(rule, "to_numbers") or not hasattr(type(rule), "from_numbers"):
        return rule.fit(batch)
    path = Path(cache_dir, "models", f"{batch_key(rule, batch)}.npz")
    with exclusive(path.with_suffix(".lock")):
        stored = read_checked_npz(path)
        if stored is not None and "numbers" in stored:
            return type(rule).from_numbers(json.loads(stored["numbers"].tobytes().decode("utf-8")))
        rule.fit(batch)
        text = json.dumps(rule.to_numbers(), sort_keys=True).encode("utf-8")
        write_checked_npz(path, {"numbers": np.frombuffer(text, dtype=np.uint8)})
    return rule


def batch_key(rule: StoppingRule, batch: StateBatch) -> str:
    """SHA-256 over the rule (class, parameters, the code that fits it) and every value of ``batch``."""
    h = hashlib.sha256()
    h.update(repr((FORMAT, type(rule).__module__, type(rule).__qualname__, sorted(rule.get_params().items()),
                   _code())).encode())
    _put(h, batch)
    return h.hexdigest()[:40]


@cache
def _code() -> tuple:
    return code_version("camdf.policies", "camdf.core"), tuple(sorted(package_versions(["lightgbm"]).items()))


def _put(h, value: Any) -> None:
    """Feed ``value`` into ``h``: arrays by dtype, shape and bytes (object arrays by their values), dataclasses
    field by field (an instance's ``train_views`` left out: a batch never reads them), mappings by sorted key."""
    if isinstance(value, np.ndarray):
        h.update(str((value.dtype.str, value.shape)).encode())
        h.update(repr(value.tolist()).encode() if value.dtype == object else np.ascontiguousarray(value).tobytes())
    elif is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__qualname__.encode())
        for f in fields(value):
            if f.name != "train_views":
                h.update(f.name.encode() + b"=")
                _put(h, getattr(value, f.name))
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            h.update(repr(k).encode() + b":")
            _put(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for v in value:
            _put(h, v)
        h.update(b"]")
    else:
        h.update(repr(value).encode() + b";")
