"""The per-domain data report: tasks per split, acquirable tools, |G_x| and more."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from camdf.common.markdown import markdown_table
from camdf.data.model import Domain


def n_groups(domain: Domain) -> int:
    """Distinct fold groups of ``domain``'s tasks; a task without a ``group`` counts as a group of its own."""
    return len({t.group for t in domain.tasks if t.group is not None}) + sum(t.group is None for t in domain.tasks)


def summarize(domain: Domain) -> dict[str, Any]:
    """Machine-readable summary of a domain (the numbers the report shows).

    ``n_groups`` counts the fold groups (:func:`n_groups`: ungrouped tasks are
    singleton groups) and ``n_ungrouped`` the tasks without a ``group``. Linear in
    the tasks and their ``required`` and ``candidates`` lists.
    """
    acq = domain.acquirable
    sizes = np.array([len(t.required) for t in domain.tasks], dtype=int)
    required_counts = Counter(name for t in domain.tasks for name in t.required)
    n_candidates = np.array([domain.n_candidates(t) for t in domain.tasks], dtype=int)  # O(|candidates|) each
    return {
        "domain": domain.name,
        "source": domain.source,
        "n_tasks": len(domain.tasks),
        "n_groups": n_groups(domain),
        "n_ungrouped": sum(t.group is None for t in domain.tasks),
        "splits": dict(sorted(Counter(t.split or "(none)" for t in domain.tasks).items())),
        "n_tools": len(domain.tools),
        "n_acquirable": len(acq),
        "acquirable": acq,
        "candidates_mean": float(n_candidates.mean()) if len(n_candidates) else 0.0,
        "required_size_mean": float(sizes.mean()) if len(sizes) else 0.0,
        "required_size_hist": {int(k): int(v) for k, v in sorted(Counter(sizes.tolist()).items())},
        "required_counts": {name: required_counts.get(name, 0) for name in acq},
        "never_required": [name for name in acq if required_counts.get(name, 0) == 0],
        "dropped_required": dict(domain.dropped_required),
        "gold_lists_no_read": sum(bool(t.meta.get("gold_lists_no_read")) for t in domain.tasks),
        "with_alternatives": sum(bool(t.alternatives) for t in domain.tasks),
    }


def render_report(domain: Domain, summary: dict[str, Any], extra_sections: list[str] | None = None) -> str:
    """Markdown report for ``data/<domain>/report.md``."""
    s = summary
    kinds = {t.name: t.kind for t in domain.tools}
    lines = [
        f"# Data report: {s['domain']}",
        "",
        f"Source: {s['source']}",
        "",
        f"- tasks: {s['n_tasks']}",
        "- tasks per split: " + ", ".join(f"{k} {v}" for k, v in s["splits"].items()),
        f"- fold groups (`folds.protocol: group`): {s['n_groups']}"
        + (f" ({s['n_ungrouped']} tasks without a group, each its own)" if s["n_ungrouped"] else ""),
        f"- tools in catalog: {s['n_tools']}; acquirable: {s['n_acquirable']} "
        f"(kinds {', '.join(domain.acquirable_kinds)}"
        + (f"; never acquirable: {', '.join(domain.never_acquirable)}" if domain.never_acquirable else "")
        + ")",
        f"- mean candidates per task: {s['candidates_mean']:.2f}",
        f"- mean |G_x|: {s['required_size_mean']:.3f}"
        + (f" (label source: {s['label_source']})" if s.get("label_source") else ""),
        f"- tasks with alternatives: {s['with_alternatives']}",
    ]
    if s.get("filter"):
        f = s["filter"]
        lines.append(f"- task filter `where: {f['where']}`: kept {f['kept']}, removed {f['removed']}"
                     + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(f["removed_by"].items())) + ")"
                        if f["removed_by"] else ""))
    if s["gold_lists_no_read"]:
        lines.append(
            f"- tasks whose gold actions list no read action: {s['gold_lists_no_read']} "
            "(their annotated G_x is empty or partial for the wrong reason; see the derived G_x)"
        )
    if s["dropped_required"]:
        lines.append(
            "- required names dropped as not acquirable: "
            + ", ".join(f"{k} x{v}" for k, v in s["dropped_required"].items())
        )
    lines += ["", "## Distribution of |G_x|", ""]
    lines += markdown_table(["size", "tasks"], s["required_size_hist"].items(), "rr")
    if s["n_acquirable"] <= 60:
        lines += ["", "## Acquirable tools", ""]
        lines += markdown_table(["tool", "kind", "tasks requiring it"],
                                ([f"`{n}`", kinds[n], c] for n, c in s["required_counts"].items()), "llr")
    lines += ["", "## Tools never required", ""]
    lines += [", ".join(f"`{n}`" for n in s["never_required"]) or "(none)"]
    for section in extra_sections or []:
        lines += ["", section.rstrip()]
    return "\n".join(lines) + "\n"
