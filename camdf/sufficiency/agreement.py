"""Markdown sections for ``data/<domain>/report.md``: sufficiency by execution, and derived versus annotated G_x.

Both are rendered from a :class:`~camdf.sufficiency.derive.Derivation` only, so
the numbers in the report are the ones the labels were made from. Every list is
complete (no sampling) and sorted in the domain's task order.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from camdf.common.markdown import markdown_table
from camdf.sufficiency.derive import MAX_ALTERNATIVES, Derivation, TaskResult

AGREEMENT = ("equal", "subset", "superset", "other")


def _names(tools: list[str] | None) -> str:
    if tools is None:
        return "(none sufficient)"
    return ", ".join(f"`{t}`" for t in tools) or "(empty)"


def _listing(title: str, header: list[str], rows: list[list[str]], empty: str = "(none)") -> list[str]:
    """Lines of a ``### title`` block: a markdown table of ``rows``, or ``empty`` when there are none."""
    lines = ["", f"### {title}", ""]
    if not rows:
        return lines + [empty]
    return lines + markdown_table(header, rows)


def _missing(m: dict[str, Any]) -> str:
    src = ", ".join(f"`{s}`" for s in m.get("sources", [])) or "no tool"
    return f"{m['value']} ({m['need']}: {m['what']}; known through {src})"


def _classes(r: TaskResult) -> str:
    parts = [f"+`{t}` ({why})" for t, why in (r.audit.get("added") or {}).items()]
    parts += [f"-`{t}` ({why})" for t, why in (r.audit.get("dropped") or {}).items()]
    return "; ".join(parts) or "-"


def summary(der: Derivation) -> dict[str, Any]:
    """The derivation's headline numbers (for the manifest and the report)."""
    res = der.results
    executable = [r for r in res if r.executable]
    sizes = [len(r.required) for r in res if r.required is not None]
    return {
        "n_tasks": len(res),
        "n_executable": len(executable),
        "n_sufficient_all": sum(r.required is not None for r in res),
        "n_executable_sufficient_all": sum(r.required is not None for r in executable),
        "share_executable_sufficient_all": (
            sum(r.required is not None for r in executable) / len(executable) if executable else 0.0
        ),
        "n_empty": sum(r.required == [] for r in res),
        "n_with_alternatives": sum(bool(r.alternatives) for r in res),
        "n_alternatives_beyond_cap": sum(r.alternatives_dropped for r in res),
        "derived_size_mean": float(np.mean(sizes)) if sizes else 0.0,
        "agreement": dict(Counter(agreement(r) for r in res if r.annotated_read)),
        "audit": audit_counts(der),
    }


def audit_counts(der: Derivation) -> dict[str, Any]:
    """Label audit over the tasks whose gold plan lists a read: per tool, how many derived sets add or
    drop it relative to the annotated set, and how many additions and drops fall in each reason class."""
    out: dict[str, Any] = {"added": {}, "dropped": {}, "reasons": {}}
    for r in der.results:
        if not r.annotated_read:
            continue
        for change in ("added", "dropped"):
            for tool, reason in (r.audit.get(change) or {}).items():
                out[change][tool] = out[change].get(tool, 0) + 1
                label = f"{change}: {reason}"
                out["reasons"][label] = out["reasons"].get(label, 0) + 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def agreement(r: TaskResult) -> str:
    """How the derived set relates to the annotated one: equal, subset, superset or other."""
    if r.required is None:
        return "other"
    d, a = set(r.required), set(r.annotated)
    if d == a:
        return "equal"
    if d < a:
        return "subset"
    if d > a:
        return "superset"
    return "other"


def explain(r: TaskResult) -> str:
    """Why the derived set differs from the annotated one, from the derivation's own evidence."""
    if r.required is None:
        return "no tool set is sufficient: " + "; ".join(_missing(m) for m in r.missing_all)
    parts = []
    extra = [t for t in r.annotated if t not in r.required]
    added = [t for t in r.required if t not in r.annotated]
    if added:
        misses = r.missing_annotated
        shown = "; ".join(_missing(m) for m in misses[:4]) + (f"; and {len(misses) - 4} more" if len(misses) > 4 else "")
        parts.append(f"the annotated set is not sufficient, it lacks {shown}")
    if extra:
        if any(set(alt) == set(r.annotated) for alt in r.alternatives):
            why = "the annotated set is another minimal sufficient set, with more tools"
        elif not r.missing_annotated:
            why = "the annotated set is sufficient but not minimal: the derived set already is"
        else:
            why = "the derived set is sufficient without it"
        parts.append(f"{_names(extra)} not needed: {why}")
    return "; ".join(parts)


def sufficiency_section(der: Derivation, label_source: str) -> str:
    """``## Sufficiency by execution``: executability, the share sufficient with every tool, empty sets."""
    s = summary(der)
    res = der.results
    lines = [
        "## Sufficiency by execution",
        "",
        f"G_x derived by running the domain's real tools (`camdf.sufficiency`, label source: {label_source}). "
        "A tool set is sufficient for a task when the knowledge closure of the task text under the set holds "
        "every identifier of the gold writes and every string to communicate, and the policy preconditions hold; "
        f"every one of the {2 ** len(der.tools)} subsets of the {len(der.tools)} acquirable tools is checked. "
        "Facts of a write are checked too where the domain names them (an address's street, city and zip "
        "code in retail: a value the text does not state must be read). Not checked, by rule: free text the "
        "agent composes (reasons, summaries) and the other details of a write (an address's state and "
        "country, names, dates of birth, cabins, counts, amounts).",
        "",
        f"- gold plans executable (no write raises on replay): {s['n_executable']} of {s['n_tasks']}",
        f"- sufficient with every acquirable tool exposed: {s['n_executable_sufficient_all']} of "
        f"{s['n_executable']} executable tasks ({100 * s['share_executable_sufficient_all']:.1f}%); "
        f"{s['n_sufficient_all']} of {s['n_tasks']} overall",
        f"- mean derived |G_x|: {s['derived_size_mean']:.3f}; tasks with alternative minimal sets: "
        f"{s['n_with_alternatives']} (every one recorded, up to {MAX_ALTERNATIVES} per task; beyond the cap: "
        f"{s['n_alternatives_beyond_cap']})",
        f"- empty derived G_x: {s['n_empty']}",
    ]
    hist = Counter(len(r.required) for r in res if r.required is not None)
    lines += ["", *markdown_table(["derived |G_x|", "tasks"], ((k, hist[k]) for k in sorted(hist)), "rr")]
    counts = Counter(t for r in res if r.required for t in r.required)
    alt_counts = Counter(t for r in res for alt in r.alternatives for t in set(alt))
    lines += ["", *markdown_table(["tool", "tasks requiring it (derived)", "in an alternative"],
                                  ([f"`{t}`", counts.get(t, 0), alt_counts.get(t, 0)] for t in der.tools), "lrr")]

    lines += _listing("Not sufficient with every tool",
                      ["task", "executable", "missing value (needed as: where; known through)"],
                      [[r.task_id, "yes" if r.executable else "no", ("; ".join(_missing(m) for m in r.missing_all))]
                       for r in res if r.required is None],
                      "(none: every task is sufficient with every acquirable tool exposed)")
    lines += _listing("Gold plans that do not execute", ["task", "error"],
                      [[r.task_id, (r.error)] for r in res if not r.executable])
    reads = [r for r in res if r.read_errors]
    if reads:
        lines += ["", f"Gold reads that raise while the plan still executes ({len(reads)} tasks; a first guess "
                      "at an email or an item id tried as a product id):", "",
                  *markdown_table(["task", "error"], ([r.task_id, "; ".join(r.read_errors)] for r in reads))]

    lines += _listing("Empty derived G_x", ["task", "why no tool is needed"],
                      [[r.task_id, (r.needs_no_information)] for r in res if r.required == []])

    arith = [r for r in res if r.expressions]
    if arith:
        lines += ["", "### Arithmetic recovered for numbers to communicate", "",
                  "No tool returns these numbers; `calculate` is called on the expression found over the numbers "
                  "of the records the gold plan touches (`camdf.sufficiency.arithmetic`).", "",
                  *markdown_table(["task", "expression(s)"],
                                  ([r.task_id, "; ".join(f"`{e}`" for e in r.expressions)] for r in arith))]
    bounded = [r for r in res if r.bounded]
    if bounded:
        lines += ["", "Closures that hit the bound on calls per tool: "
                  + ", ".join(f"{r.task_id} ({', '.join(r.bounded)})" for r in bounded)]
    return "\n".join(lines) + "\n"


def agreement_section(der: Derivation) -> str:
    """``## Derived versus annotated G_x`` for the tasks whose gold plan lists a read action."""
    res = [r for r in der.results if r.annotated_read]
    counts = Counter(agreement(r) for r in res)
    lines = [
        "## Derived versus annotated G_x",
        "",
        f"Tasks whose gold plan lists a read action: {len(res)} of {len(der.results)}. Annotated G_x: the "
        "acquirable tools among the gold actions; derived G_x: the minimal sufficient set chosen by execution "
        "(subset: derived inside annotated; superset: derived contains annotated).",
        "",
        *markdown_table(["agreement", "tasks"], ((k, counts.get(k, 0)) for k in AGREEMENT), "lr"),
    ]
    audit = audit_counts(der)
    lines += ["", "### Label audit", "",
              "Per tool, the derived sets that add it to or drop it from the annotated set; each change's "
              "reason class comes from the derivation: an added tool is named by what goes missing without it "
              "(`fact`: a value of a write the text does not state, such as an address; `identifier`; "
              "`communicate`; or a policy precondition: `authenticate`, `look_up`, `confirm_facts`); a dropped "
              "tool is `gold_read_failed` (every gold call of it raised), `alternative` (it belongs to another "
              "minimal sufficient set) or `not_needed`.", "",
              *markdown_table(["tool", "added", "dropped"],
                              ([f"`{t}`", audit["added"].get(t, 0), audit["dropped"].get(t, 0)] for t in der.tools),
                              "lrr"),
              "", *markdown_table(["reason class", "changes"], audit["reasons"].items(), "lr")]
    lines += _listing("Disagreements", ["task", "agreement", "annotated", "derived", "classes", "why"],
                      [[r.task_id, agreement(r), _names(r.annotated), _names(r.required), _classes(r), (explain(r))]
                       for r in res if agreement(r) != "equal"])
    return "\n".join(lines) + "\n"
