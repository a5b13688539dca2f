"""A fitted rule kept for the process's next cell that hands it the same training states (:func:`fitted`,
:func:`shared_fits`).

A lambda-conditioned rule (``camdf_lambda``) learns from the training tasks at every lambda of the grid, not at
the cell's own, so the cells of a lambda sweep (A18: ten lambdas at each d, run one after another in one process)
give it the same training states fold by fold: it was fitted ten times on the same numbers. A rule's fit is a
function of its parameters and its training states alone (seeded; LightGBM deterministic), so the rule fitted on
identical states is the same rule: the memo keys a fit by a digest of the rule's class and parameters and of every
array of the batch, and hands back the rule fitted first. Outcomes are the same bytes with or without it
(tests/unit/evaluation/test_fit_memo.py); it lives in the process only (nothing is written or read back).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import fields, is_dataclass

import numpy as np

#: Inputs whose fits are kept, the least recently used dropped first: A18 visits a d again after the other four
#: d's 5 repeats x 5 folds = 100 rule fits, so 125 rules per d-cycle are kept, beside the 25 training batches
#: whose pool members and membership models every d shares, with room to spare.
CAPACITY = 256

_SHARED: OrderedDict[str, dict] = OrderedDict()
#: ``fits`` (rules fitted) and ``reused`` (fits handed back), for tests and progress lines.
COUNTS = {"fits": 0, "reused": 0}


def clear() -> None:
    """Forget every kept rule (and the counts)."""
    _SHARED.clear()
    COUNTS.update(fits=0, reused=0)


def digest(value) -> str:
    """SHA-256 of ``value``: arrays by dtype, shape and bytes (object arrays by their strings), dataclasses field
    by field, mappings by sorted key, sequences in order, scalars by type and repr. Raises TypeError on anything
    else (a callable, an open file), so nothing unhashable is keyed by its identity."""
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()


def _feed(h, value) -> None:
    if value is None:
        h.update(b"N;")
    elif isinstance(value, np.ndarray):
        h.update(f"A{value.dtype.str}{value.shape};".encode())
        if value.dtype == object:
            items = [f"{type(x).__name__}:{x}" for x in value.ravel().tolist()]
            h.update(np.array([len(s) for s in items], dtype=np.int64).tobytes())
            h.update("".join(items).encode("utf-8", "surrogatepass"))
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif is_dataclass(value) and not isinstance(value, type):
        h.update(f"D{type(value).__module__}.{type(value).__qualname__};".encode())
        for f in fields(value):
            h.update(f"{f.name}=".encode())
            _feed(h, getattr(value, f.name))
    elif isinstance(value, dict):
        h.update(f"M{len(value)};".encode())
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(f"L{type(value).__name__}{len(value)};".encode())
        for item in value:
            _feed(h, item)
    elif isinstance(value, (str, bytes, bool, int, float, complex, np.generic)):
        h.update(f"S{type(value).__name__}:{value!r};".encode())
    else:
        raise TypeError(f"digest: cannot key a {type(value).__name__}")


def fitted(policy, batch):
    """``policy`` fitted on ``batch``, or the rule fitted earlier in this process on identical states with
    identical parameters (then ``policy`` itself is left unfitted): kept in :func:`shared_fits` under the rule's
    class, parameters and batch."""
    try:
        kept = shared_fits("fitted", type(policy).__module__, type(policy).__qualname__,
                           policy.get_params(deep=False), batch)
    except TypeError:  # a parameter or a field the digest cannot key: fit, keep nothing
        kept = {}
    if "rule" in kept:
        COUNTS["reused"] += 1
        return kept["rule"]
    COUNTS["fits"] += 1
    policy.fit(batch)
    kept["rule"] = policy
    return policy


def shared_fits(*parts) -> dict:
    """The dict of fits made on the inputs ``parts`` in this process (empty the first time): a caller stores
    there, by their settings, fits that depend on these inputs alone and reads them back in a later cell
    (:class:`camdf.policies.cv_set.CVSet`'s pool members: calibrators and set models read the scores, labels and
    membership probabilities, never lambda or the costs, so the cells of a d or payoff sweep share them).
    Raises TypeError when a part cannot be keyed (:func:`digest`)."""
    key = digest(parts)
    if key in _SHARED:
        _SHARED.move_to_end(key)
        return _SHARED[key]
    _SHARED[key] = kept = {}
    while len(_SHARED) > CAPACITY:
        _SHARED.popitem(last=False)
    return kept
