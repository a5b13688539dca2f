"""Task filters of a domain config (``where:``): which converted tasks the data stage keeps.

``where`` is a mapping with any of these keys (a task is kept when it passes all):

- ``required: non_empty`` keeps tasks whose G_x has at least one tool (an empty G_x is a
  success for every method, exposing nothing included); ``any`` (the default) keeps all.
- ``split: [train, test, ...]`` keeps tasks whose split is listed (``"(none)"``: no split).
- ``meta: {field: [values]}`` keeps tasks whose ``meta[field]`` is one of the values
  (a task without the field fails), e.g. ``meta: {gold_executable: [true]}``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from camdf.data.model import Domain

WHERE_KEYS = ("required", "split", "meta")
REQUIRED = ("any", "non_empty")


def check_where(where: Any, field: str = "domain.where") -> dict[str, Any]:
    """``where`` normalised (``None`` -> ``{}``), else ValueError naming the key and what is expected."""
    if where is None:
        return {}
    if not isinstance(where, dict):
        raise ValueError(f"{field}: expected a mapping with keys among {', '.join(WHERE_KEYS)}, got {where!r}")
    unknown = sorted(set(where) - set(WHERE_KEYS))
    if unknown:
        raise ValueError(f"{field}.{unknown[0]}: unknown filter (expected one of {', '.join(WHERE_KEYS)})")
    out: dict[str, Any] = {}
    if where.get("required") is not None:
        if where["required"] not in REQUIRED:
            raise ValueError(f"{field}.required: expected one of {', '.join(REQUIRED)}, got {where['required']!r}")
        out["required"] = where["required"]
    if where.get("split") is not None:
        split = where["split"]
        if not isinstance(split, (list, tuple)) or not split or not all(isinstance(s, str) for s in split):
            raise ValueError(f"{field}.split: expected a non-empty list of split names, got {split!r}")
        out["split"] = list(split)
    if where.get("meta") is not None:
        meta = where["meta"]
        if not isinstance(meta, dict) or not meta:
            raise ValueError(f"{field}.meta: expected a mapping of meta field -> list of values, got {meta!r}")
        for key, values in meta.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise ValueError(f"{field}.meta.{key}: expected a non-empty list of values, got {values!r}")
        out["meta"] = {str(k): list(v) for k, v in meta.items()}
    return out


def apply_where(domain: Domain, where: Any) -> tuple[Domain, dict[str, Any]]:
    """The domain with only the tasks ``where`` keeps, and the counts: ``kept``, ``removed`` (total)
    and ``removed_by`` (the first filter each removed task failed, in :data:`WHERE_KEYS` order)."""
    where = check_where(where)
    kept, removed_by = [], {}
    for task in domain.tasks:
        reason = None
        if where.get("required") == "non_empty" and not task.required:
            reason = "required"
        elif "split" in where and (task.split or "(none)") not in where["split"]:
            reason = "split"
        elif "meta" in where:
            for key, values in where["meta"].items():
                if key not in task.meta or task.meta[key] not in values:
                    reason = f"meta.{key}"
                    break
        if reason is None:
            kept.append(task)
        else:
            removed_by[reason] = removed_by.get(reason, 0) + 1
    if not kept:
        raise ValueError(f"domain.where: keeps none of the {len(domain.tasks)} tasks of {domain.name!r} "
                         f"(removed by {removed_by})")
    counts = {"where": where, "kept": len(kept), "removed": len(domain.tasks) - len(kept), "removed_by": removed_by}
    return (replace(domain, tasks=kept) if removed_by else domain), counts
