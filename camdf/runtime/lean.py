"""A shipped stopper without scikit-learn: one request decided from the rule's portable numbers.

Loading a full :class:`camdf.runtime.StopPolicy` rebuilds scikit-learn estimators, and importing
scikit-learn takes about 2 s on a small machine: more than a shell call to ``camdf select``
should. A rule with a portable form (its card's ``portable``: camdf_risk, plugin_set, learned_set,
risk_set, cv_set and fallback_set; e.g. camdf_risk's membership model coefficients, conformal
threshold and calibration scores) decides one request from a handful of numbers. :func:`lean_numbers` writes them beside the full policy's numbers
(:mod:`camdf.runtime.policy_file`) when the model is logged (``artifacts/lean.json``); :class:`LeanPolicy` rebuilds the rule with its
card's portable class (``from_numbers``) and decides a single request of up to
:data:`~camdf.runtime.requests.SHORT_RANKING` tools through the same front door
(:class:`~camdf.runtime.door.FrontDoor`) and the same one-task arithmetic as the full policy,
so both give the same depth. A policy that decides over each request's ``top_n`` tools (the default
policy's 50) cuts the request first, so a request of 2,000 tools is one short ranking too. The CAM-DF
rules (``camdf``, ``camdf_transfer``) evaluate their booster with numpy
(:mod:`camdf.policies.camdf_portable`), to LightGBM's last bit. An exported folder
(:func:`camdf.runtime.export.read_export`) gives its lean form from ``policy.json`` (:func:`lean_of_export`),
which its manifest checksums. A batch, a longer ranking or a rule without a portable form
needs the full policy (:meth:`LeanPolicy.select_batch` answers None and :meth:`LeanPolicy.full`
loads it).

The lean form is tied to the full one by two checksums (:func:`write_lean`): ``policy_sha256``, the
SHA-256 of the ``policy.json`` bytes it was written beside, and ``sha256``, the SHA-256 of its own numbers
(canonical JSON, every key but ``sha256``). :meth:`LeanPolicy.read` checks both before it decides anything,
so a ``lean.json`` edited by hand, or copied from another policy's folder, is refused in one line naming
the file, the field and the expected value, instead of giving another depth than the full policy.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from camdf.common.dials import dial_names
from camdf.common.waits import read_regular
from camdf.core.membership import membership_task
from camdf.policies.plain import task_positions
from camdf.policies.registry import CARDS
from camdf.runtime.door import FrontDoor
from camdf.runtime.folder_schema import LEAN_FIELDS, check_fields
from camdf.runtime.requests import Selection

#: The artifact name of the lean numbers in a logged model.
LEAN_ARTIFACT = "lean"
LEAN_FILE = "lean.json"
#: Bytes of a lean.json that is read (a shipped one is a few hundred KB).
MAX_LEAN_BYTES = 256 * 2**20
#: Format 4 carries the checksums, 5 the policy's membership model, whether it is portable and its cost unit; a lean.json
#: of another format is not read (the full policy decides).
FORMAT = 5


def _canonical_sha256(numbers: dict) -> str:
    """The SHA-256 of ``numbers`` but its ``sha256`` key, as canonical JSON (sorted keys, no spaces)."""
    body = {k: v for k, v in numbers.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def write_lean(policy, path: Path, policy_path: Path) -> Path | None:
    """Write :func:`lean_numbers` of ``policy`` to ``path``, tied to the full policy's file ``policy_path``
    (its SHA-256) and to itself (the SHA-256 of its numbers); None (nothing written) when the rule has no
    portable form."""
    numbers = lean_numbers(policy)
    if numbers is None:
        return None
    numbers["policy_sha256"] = hashlib.sha256(Path(policy_path).read_bytes()).hexdigest()
    numbers["sha256"] = _canonical_sha256(numbers)
    Path(path).write_text(json.dumps(numbers), encoding="utf-8")
    return Path(path)


def _check_tie(numbers: dict, path: Path, policy_path: Path | None) -> None:
    """ValueError naming ``path`` when ``numbers`` were altered or belong to another ``policy.json``."""
    own = numbers.get("sha256")
    if own != _canonical_sha256(numbers):
        raise ValueError(f"{path}: sha256: expected the SHA-256 of its numbers ({_canonical_sha256(numbers)}), got "
                         f"{str(own)[:80]!r}: the lean form was altered after it was written")
    if policy_path is None:
        return
    try:
        tie = hashlib.sha256(read_regular(Path(policy_path), MAX_LEAN_BYTES, "a camdf policy's JSON")).hexdigest()
    except OSError as err:
        raise ValueError(f"{policy_path}: cannot read: {err.strerror or type(err).__name__} (the lean form "
                         f"{path.name} is checked against it)") from None
    if numbers.get("policy_sha256") != tie:
        raise ValueError(f"{path}: policy_sha256: expected {tie} (the SHA-256 of {policy_path}), got "
                         f"{str(numbers.get('policy_sha256'))[:80]!r}: the lean form belongs to another policy")


def lean_numbers(policy) -> dict | None:
    """The JSON-ready numbers of a fitted :class:`~camdf.runtime.StopPolicy` whose rule has a portable form
    (``to_numbers``), else None."""
    rule = policy.rule_
    known = CARDS.get(policy.method)
    if known is None or known.portable is None or not hasattr(rule, "to_numbers"):
        return None  # no class of the card reads the numbers without scikit-learn
    out = {"format": FORMAT, "method": policy.method, "kind": policy.kind, "lam": float(policy.lam),
           "dials": list(dial_names(rule.dials)), "vocab": list(policy.vocab_),
           "costs": {k: float(v) for k, v in policy.costs_.items()}, "rule": rule.to_numbers(),
           "top_n": getattr(policy, "top_n", None), "membership": policy.membership_.to_numbers(),
           "portable": bool(getattr(policy, "portable", False)), "cost_unit": getattr(policy, "cost_unit_", None)}
    if getattr(policy, "fit_range_", None) is not None:
        out["fit_range"] = policy.fit_range_
    return out


def lean_of_export(numbers: dict, cost_unit: str | None = None) -> dict | None:
    """:func:`lean_numbers` from a policy's numbers (:func:`camdf.runtime.policy_file.policy_numbers`, as an
    exported folder's ``policy.json`` holds them, checked) and its manifest's ``cost_unit``, without building
    the full policy; None when the rule has no portable form."""
    params = numbers["params"]
    known = CARDS.get(params["method"])
    if known is None or known.portable is None:
        return None
    built = CARDS.get(known.across_lambdas) if params.get("lam_grid") and known.across_lambdas else known
    out = {"format": FORMAT, "method": params["method"], "kind": params["kind"], "lam": float(params["lam"]),
           "dials": list(dial_names(built.dials)), "vocab": list(numbers["vocab"]), "costs": dict(numbers["costs"]),
           "rule": numbers["rule"], "top_n": params.get("top_n"), "membership": numbers["membership"],
           "portable": bool(params.get("portable")), "cost_unit": cost_unit}
    if numbers.get("fit_range") is not None:
        out["fit_range"] = numbers["fit_range"]
    return out


@dataclass
class LeanPolicy:
    """A policy's decisions for single short requests, from :func:`lean_numbers` and its card's portable class.

    ``full`` loads the complete :class:`~camdf.runtime.StopPolicy` for everything else.
    """

    numbers: dict
    full: Callable[[], Any] = field(repr=False)

    def __post_init__(self) -> None:
        n = self.numbers
        self.method = n["method"]
        self.lam = float(n["lam"])
        card = CARDS[self.method]
        self.rule = card.portable().from_numbers(n["rule"])
        self.door = FrontDoor(self.method, tuple(n["dials"]), list(n["vocab"]), n["costs"], card.defers, card.picks_prefix,
                              n.get("fit_range"), n.get("top_n"), n.get("cost_unit"),
                              portable=bool(n["portable"]))
        # The policy's membership estimates, which a rule's state features read (CamDF's p_next, p_suff, ...):
        # five signal coefficients, then one per training tool (membership_task).
        coef = n["membership"]["coef"]
        if coef is not None and len(coef) != 5 + len(self.door.vocab):
            raise ValueError(f"membership.coef: expected 5 + {len(self.door.vocab)} numbers (one per vocab tool), "
                             f"got {len(coef)}")
        self.membership = partial(membership_task, n["membership"])

    @classmethod
    def read(cls, path: Path, full: Callable[[], Any], policy_path: Path | None = None) -> "LeanPolicy | None":
        """The lean policy of ``path`` (a model's ``lean.json``), or None when it is not one this code reads
        (another format, or a method without a registered portable form).

        ValueError naming ``path`` when it holds a non-finite number, when its numbers do not match their
        ``sha256``, or (given ``policy_path``, the ``policy.json`` beside it) when its ``policy_sha256`` is not
        that file's SHA-256."""
        from camdf.runtime.finite import _paths

        try:
            numbers = json.loads(read_regular(path, MAX_LEAN_BYTES, "a lean policy's JSON").decode("utf-8"))
        except (OSError, ValueError):
            return None
        for where in _paths(numbers):  # a NaN here would decide silently: refused, not passed over
            raise ValueError(f"{path}: {where}: expected a finite number, got NaN or Infinity")
        old = numbers.get("format") if isinstance(numbers, dict) else None
        if type(old) is int and 1 <= old < FORMAT:
            return None  # written by an older camdf, without the checksums: the full policy decides
        check_fields(numbers, LEAN_FIELDS, str(path))
        _check_tie(numbers, path, policy_path)
        known = CARDS.get(numbers.get("method")) if isinstance(numbers.get("method"), str) else None
        if known is None or known.portable is None:
            return None
        return cls(numbers, full)

    def select_batch(self, requests: list[dict], lam: float | None = None, **dials: Any) -> list[Selection] | None:
        """:meth:`StopPolicy.select_batch <camdf.runtime.StopPolicy.select_batch>` for one request of at
        most ``SHORT_RANKING`` tools; None for anything else (use :meth:`full`). Refuses what it refuses."""
        lam, dials = self.door.call_dials(lam, dials)
        if not isinstance(requests, (list, tuple)) or len(requests) != 1:
            return None
        parsed = self.door.parse(requests)
        if not self.door.is_short(parsed):
            return None
        r = parsed[0]
        lv, dv = self.door.settings(r, self.lam if lam is None else lam, dials)
        order, task = self.door.one_task(r, lv, self.numbers["kind"], self.membership)
        return [self.door.selection(r, order, task_positions(self.rule, task, **dv), lv)]
