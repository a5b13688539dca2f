"""Execution-cost telemetry: each tool's mean output length when tau2's gold calls run for real.

The ``execution`` cost regime of :mod:`camdf.costs.regimes` reads the measured
lengths this module writes into the catalog's ``cost`` fields at the data stage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from camdf.common.files import write_atomic
from camdf.common.markdown import markdown_table
from camdf.common.fingerprint import code_version, hash_json, hash_paths
from camdf.costs.tokens import count_tokens, default_tokenizer_path, tool_definition
from camdf.data.model import Domain, Tool
from camdf.integrations.tau2.convert import get_environment, package_version


def _run_calls(env, calls: list[tuple[str, dict]]) -> list[tuple[str, str, bool]]:
    """Run calls in order on ``env``; (tool, output text, error) for each."""
    from tau2.data_model.message import ToolCall

    out = []
    for i, (name, args) in enumerate(calls):
        msg = env.get_response(ToolCall(id=f"call-{i}", name=name, arguments=args, requestor="assistant"))
        out.append((name, msg.content or "", bool(msg.error)))
    return out


def _borrowed_arguments(tool: Tool, gold: list[dict]) -> dict | None:
    """Arguments for ``tool`` taken from the task's gold calls by parameter name, or None."""
    params = tool.parameters or {}
    props = params.get("properties") or {}
    values: dict[str, Any] = {}
    for action in gold:
        for key, val in (action.get("arguments") or {}).items():
            values.setdefault(key, val)
    if not all(r in values for r in params.get("required") or []):
        return None
    return {k: values[k] for k in props if k in values}


def measure_execution(
    domain: Domain,
    *,
    environment: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    tokenizer_path: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """Measure each acquirable tool's mean output length in a real tau2 environment.

    Every task's gold actions (``meta.gold_actions``, write actions included, since
    later reads see their effects) run in order in a fresh environment
    (:func:`camdf.integrations.tau2.convert.get_environment`); the output text the agent would read
    is counted in tokens.  Only calls that succeed enter the mean.  A tool no
    gold action calls falls back, in this order, to:

    1. ``task arguments``: it is called once per task, after the gold actions, on
       the argument values the task's gold calls pass under the same parameter
       names (a tool without required parameters is called on what it accepts);
    2. ``median``: the median of the measured tools' means (and of every tool's
       means if none was measured; an error if nothing ran at all).

    Parameters
    ----------
    domain : Domain
        Tasks must carry ``meta.gold_actions``.
    environment : str, optional
        tau2 domain whose environment runs the calls (default ``domain.name``);
        acquirable tools that environment lacks (e.g. distractors) fall back to the median.
    cache_dir : path, optional
        The result is stored under ``<cache_dir>/costs/execution/`` keyed by the
        code, the tau2 version, the tokenizer, the tools and every gold call.

    Returns
    -------
    DataFrame
        Index = acquirable tools (catalog order); columns ``n_calls`` (successful
        calls measured), ``n_errors``, ``mean_tokens``, ``source`` (``gold calls``,
        ``task arguments`` or ``median``).
    """
    env_name = environment or domain.name
    gold = [t.meta.get("gold_actions") for t in domain.tasks]
    if not any(gold):
        raise ValueError(
            f"execution costs: domain `{domain.name}` has no task with meta.gold_actions "
            "(measured telemetry exists for tau2 retail and airline only)"
        )
    tok_path = str(tokenizer_path or default_tokenizer_path())
    key = hash_json(
        {
            "code": code_version("camdf.costs.tokens", "camdf.integrations.tau2.execution"),
            "tau2": package_version(),
            "environment": env_name,
            "tokenizer": hash_paths([tok_path]),
            "tools": [tool_definition(t) for t in domain.tools if domain.is_acquirable(t)],
            "gold": gold,
        }
    )
    path = None if cache_dir is None else Path(cache_dir) / "costs" / "execution" / env_name / f"{key}.json"
    if path is not None and path.is_file():
        return pd.DataFrame(json.loads(path.read_text())).set_index("tool")

    acq = domain.acquirable
    env_tools = set(get_environment(env_name).tools.get_tools())
    by_name = domain.tool_by_name
    outputs: dict[str, list[tuple[str, bool]]] = {n: [] for n in acq}
    borrowed: dict[str, list[tuple[str, bool]]] = {n: [] for n in acq}
    called = {a["name"] for g in gold for a in (g or [])}
    for actions in gold:
        if not actions:
            continue
        env = get_environment(env_name)
        for name, text, err in _run_calls(env, [(a["name"], a.get("arguments") or {}) for a in actions]):
            if name in outputs:
                outputs[name].append((text, err))
        extra = []
        for name in acq:
            if name in env_tools and name not in called:
                args = _borrowed_arguments(by_name[name], actions)
                if args is not None:
                    extra.append((name, args))
        for name, text, err in _run_calls(env, extra):
            borrowed[name].append((text, err))
    rows = []
    for name in acq:
        runs, source = (outputs[name], "gold calls") if outputs[name] else (borrowed[name], "task arguments")
        ok = [text for text, err in runs if not err]
        mean = float(count_tokens(ok, tok_path).mean()) if ok else float("nan")
        rows.append({"tool": name, "n_calls": len(ok), "n_errors": len(runs) - len(ok), "mean_tokens": mean,
                     "source": source if ok else "median"})
    frame = pd.DataFrame(rows).set_index("tool")
    measured = frame["mean_tokens"].dropna()
    if measured.empty:
        raise ValueError(f"execution costs: no gold call of domain `{domain.name}` succeeded in `{env_name}`")
    frame["mean_tokens"] = frame["mean_tokens"].fillna(float(measured.median()))
    if path is not None:
        write_atomic(path, json.dumps(frame.reset_index().to_dict(orient="list"), indent=1))
    return frame


def execution_section(measurements: Mapping[str, pd.DataFrame], digits: int = 1) -> str:
    """Markdown section listing measured execution costs, one table per domain.

    Parameters
    ----------
    measurements : mapping of str to DataFrame
        Domain name -> :func:`measure_execution` output.
    """
    lines = [
        "## Measured execution costs",
        "",
        "Mean output length (MiniLM WordPiece tokens) of each acquirable tool when the gold calls "
        "of every task run in a fresh tau2 environment; `task arguments` = called on the argument "
        "values of the task's gold calls, `median` = no successful call, the median of the others.",
    ]
    for name, frame in measurements.items():
        lines += ["", f"### {name}", ""]
        lines += markdown_table(
            ["tool", "mean tokens", "calls", "errors", "source"],
            ([f"`{tool}`", f"{r.mean_tokens:.{digits}f}", int(r.n_calls), int(r.n_errors), r.source]
             for tool, r in frame.iterrows()),
            "lrrrl",
        )
    return "\n".join(lines) + "\n"
