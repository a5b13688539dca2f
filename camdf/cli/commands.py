"""The ``camdf`` command line: ``camdf data validate PATH``, ``data summary``, ``select``, ``serve``
(:mod:`camdf.cli.serve`), ``export``, ``fit``
(:mod:`camdf.cli.fit`), ``preload`` (:mod:`camdf.cli.preload`), ``mcp-proxy``, ``results check``.

Exit codes: 0 on success, 2 on bad input (every problem listed on stderr), 1 on a fault of the
machine or store (one line, :func:`camdf.pipeline.boundary.cli_boundary`), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial
from pathlib import Path

from camdf.cli.fit import add_fit_command
from camdf.cli.options import command, flag_lam, parse_dial, policy_options
from camdf.cli.preload import add_preload_command
from camdf.cli.serve import add_serve_command
from camdf.common.markdown import markdown_table
from camdf.data.io import DomainFormatError, read_domain
from camdf.data.model import DEFAULT_ACQUIRABLE_KINDS
from camdf.data.overview import summarize
from camdf.policies.registry import dial_specs

# No usage telemetry from MLflow (read when mlflow is imported, which the commands do lazily; a user's setting wins).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


#: Bytes of one ``--input`` file of ``camdf select`` (a request or a batch of them).
MAX_REQUEST_BYTES = 256 * 2**20


def _names(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        domain = read_domain(args.path, acquirable_kinds=args.acquirable_kinds, never_acquirable=args.never_acquirable)
    except DomainFormatError as err:
        print(f"camdf data validate: {args.path}: refused, {len(err.problems)} problem(s):", file=sys.stderr)
        for problem in err.listed():  # one per line; past DomainFormatError's limit the rest are counted
            print(problem, file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"camdf data validate: {err}", file=sys.stderr)
        return 2
    s = summarize(domain)
    print(
        f"{args.path}: valid domain `{s['domain']}`: {s['n_tasks']} tasks, {s['n_tools']} tools "
        f"({s['n_acquirable']} acquirable), mean |G_x| {s['required_size_mean']:.3f}"
    )
    if s["dropped_required"]:
        print("required names dropped as not acquirable: " + json.dumps(s["dropped_required"]))
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    rows = []
    for manifest in sorted(Path(args.data_dir).glob("*/manifest.json")):
        if manifest.parent.name.startswith("."):  # a writer's temporary or swapped-out folder, not a domain
            continue
        s = json.loads(manifest.read_text())["summary"]
        splits = ", ".join(f"{k} {v}" for k, v in s["splits"].items())
        rows.append([s["domain"], s["n_tasks"], splits, s.get("n_groups", s["n_tasks"]), s["n_acquirable"],
                     f"{s['candidates_mean']:.1f}", f"{s['required_size_mean']:.3f}"])
    if not rows:
        print(f"camdf data summary: no built domains under {args.data_dir} (run `make data`)", file=sys.stderr)
        return 2
    header = ["domain", "tasks", "splits", "fold groups", "acquirable tools", "candidates / task", "mean |G_x|"]
    print("\n".join(markdown_table(header, rows, "lrlrrrr")))
    return 0


def cmd_ranking(args: argparse.Namespace) -> int:
    """Rank every built catalog with bm25, the lexical hybrid and the cross-catalog ranker fitted on the other
    catalogs (leave one catalog out), and print the table."""
    from camdf.evaluation.ranking_transfer import transfer_rows
    from camdf.rankers.loco import built_catalog, leave_one_out

    folders = sorted(m.parent for m in Path(args.data_dir).glob("*/manifest.json") if not m.parent.name.startswith("."))
    if args.domains:
        known = {f.name: f for f in folders}
        unknown = [d for d in args.domains if d not in known]
        if unknown:
            print(f"camdf data ranking: --domains: {', '.join(unknown)} not built under {args.data_dir} (built: "
                  f"{', '.join(known) or 'none'}; run `make data`)", file=sys.stderr)
            return 2
        folders = [known[d] for d in args.domains]
    if len(folders) < 2:
        print(f"camdf data ranking: expected at least two built catalogs under {args.data_dir} (one to score, "
              f"the others to learn from), found {len(folders)} (run `make data`)", file=sys.stderr)
        return 2
    catalogs = [built_catalog(f) for f in folders]
    rows = transfer_rows(catalogs, leave_one_out(catalogs))
    header = ["catalog", "queries", "tools", "ranker", "recall@5", "all gold@5", "gold in top 20",
              "per-API recall@5", "all gold@5 minus bm25 [95% CI]"]
    table = [[r["catalog"], r["queries"], r["tools"], r["ranker"], f"{r['recall@5']:.3f}", f"{r['all_gold@5']:.3f}",
              f"{r['gold_in_top20']:.3f}", f"{r['per_api_recall@5']:.3f}",
              "" if r["ranker"] == "bm25" else f"{r['vs_bm25']:+.3f} [{r['vs_bm25_low']:+.3f}, {r['vs_bm25_high']:+.3f}]"]
             for r in rows]
    print("\n".join(markdown_table(header, table, "lrrlrrrrl")))
    return 0


def _request_bytes(path: str) -> bytes:
    """The bytes of ``--input`` (``-``: stdin), a regular file of at most :data:`MAX_REQUEST_BYTES` (a FIFO is never
    waited on); ValueError naming the path when it cannot be read."""
    from camdf.common.waits import read_regular

    if path == "-":
        return sys.stdin.buffer.read()
    return read_regular(path, MAX_REQUEST_BYTES, "a JSON request file, or - for stdin", name=f"--input {path}")


def _alias(name: str, text: str) -> tuple[str, float]:
    """``VALUE`` of a dial's own flag (``--NAME VALUE``): the ``(name, value)`` of ``--dial NAME=VALUE``."""
    return parse_dial(f"{name}={text}")


def cmd_select(args: argparse.Namespace) -> int:
    """Read a request (a JSON object with `tools` (OpenAI function tools or MCP tool descriptions) and `scores`, or a
    `query` for the built-in bm25 ranker; optional `costs`, `lam`, the rule's dials), or a list of them, and
    print the selection(s) as JSON: `depth`, `exposed`, `ranked` and the exposed `tools`."""
    from camdf.runtime import load_policy
    from camdf.runtime.jsonio import parse_json

    try:
        request = parse_json(_request_bytes(args.input), "request" if args.input == "-" else args.input)
        policy = load_policy(args.policy, lean=True)  # a rule with a portable form loads without scikit-learn
        batch = request if isinstance(request, list) else [request]
        # A flag given on the command line wins over the request's own value (the request's wins over the
        # policy's): the flag is written into every request, so `--lam 5` is the lambda every decision uses.
        lam = flag_lam(args)
        given = {k: v for k, v in {"lam": lam, **dict(args.dial or [])}.items() if v is not None}
        # A lambda flag (--lam or --task-value) replaces a request's own lam and task_value.
        drop = {"lam", "task_value"} if lam is not None else set()
        batch = [{**{k: v for k, v in r.items() if k not in drop}, **given} if isinstance(r, dict) else r
                 for r in batch]
        dials = {k: v for k, v in given.items() if k != "lam"}  # checked as the call's too: errors name the flag
        selections = policy.select_batch(batch, lam=lam, **dials)
        if selections is None:  # the lean policy decides single short requests only
            selections = policy.full().select_batch(batch, lam=lam, **dials)
    except ValueError as err:
        print(f"camdf select: {err}", file=sys.stderr)
        return 2
    out = [s.to_json() for s in selections]
    json.dump(out if isinstance(request, list) else out[0], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write the policy of POLICY_URI (runs:/..., models:/..., a model folder) into DIR: policy.json, LightGBM boosters
    as text, manifest.json with the SHA-256 of each file. camdf.runtime.load_policy(DIR) reads it without
    MLflow; nothing in it is unpickled."""
    from camdf.runtime import load_policy
    from camdf.runtime.export import export_policy

    try:
        policy = load_policy(args.policy)
        if getattr(policy, "full", None) is not None and not hasattr(policy, "rule_"):
            policy = policy.full()
        folder = export_policy(policy, args.dir)
    except ValueError as err:
        print(f"camdf export: {err}", file=sys.stderr)
        return 2
    files = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["files"]
    print(f"{folder}: {policy.method} policy exported ({len(files)} files and manifest.json); "
          f"load it with camdf.runtime.load_policy({str(folder)!r})")
    return 0


def _scorer(spec: str | None):
    """The function ``--scorer MODULE:FUNCTION`` names (imported; ValueError naming the flag when it is not there)."""
    if spec is None:
        return None
    import importlib

    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"--scorer: expected MODULE:FUNCTION, got {spec!r}")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"--scorer {spec}: cannot import it: {type(err).__name__}: {err}") from None


def cmd_mcp_proxy(args: argparse.Namespace) -> int:
    """Serve an MCP proxy over stdio in front of the upstream servers. A 2026-07-28 client gets a fixed tools/list
    (search_tools, call_tool and the preload); an older client calls the select_tools meta-tool with the task,
    then tools/list answers the policy's selection (docs/harness.md)."""
    try:
        import anyio

        from camdf.adapters.mcp import ToolProxy, UpstreamError
    except ImportError as err:
        print(f"camdf mcp-proxy: needs the MCP SDK (pip install mcp): {err}", file=sys.stderr)
        return 2
    from camdf.runtime.toolset import ToolChooser

    try:
        chooser = ToolChooser(args.policy, lam=flag_lam(args), dials=dict(args.dial or []),
                              always_include=args.always_include, max_tools=args.max_tools,
                              min_tools=args.min_tools, scorer=_scorer(args.scorer))
        chooser.loaded()  # a policy that cannot load is refused at start, not failed open later
        proxy = ToolProxy(args.upstream or [], chooser, on_withheld=args.on_withheld, call_timeout=args.call_timeout,
                          search_k=args.search_k, env=args.env, preload=args.preload, search_max=args.search_max)
        anyio.run(proxy.run_stdio)
    except (ValueError, UpstreamError) as err:
        print(f"camdf mcp-proxy: {err}", file=sys.stderr)
        return 2
    return 0


def cmd_results_check(args: argparse.Namespace) -> int:
    from camdf.pipeline.identity import code_stamp
    from camdf.reporting.readme import results_stamp

    path = Path(args.readme)
    try:
        stamp = results_stamp(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"camdf results check: {path}: {err}", file=sys.stderr)
        return 2
    current = code_stamp()
    if stamp is None:
        print(f"{path}: the Results carry no source fingerprint; the checkout's is {current} (run `make reproduce`)")
        return 1
    if stamp != current:
        print(f"{path}: the Results were generated at source fingerprint {stamp}; the checkout's is {current} "
              "(a hash of camdf/, pipelines/ and conf/), so they may be stale (run `make reproduce`)")
        return 1
    if args.version_only:
        print(f"{path}: the Results' source fingerprint is the checkout's ({current}); numbers not compared "
              "(--version-only)")
        return 0
    from camdf.pipeline.results_check import check_numbers

    try:
        diffs = check_numbers(path, args.override or [])
    except LookupError as err:
        print(f"{path}: the numbers could not be recomputed: {err}")
        return 1
    if diffs:
        print(f"{path}: the Results differ from the store at source fingerprint {current} "
              f"({len(diffs)} line(s); run `make tables` to rewrite them):")
        for line in diffs:
            print(f"  {line}")
        return 1
    print(f"{path}: the Results match the checkout (source fingerprint {current}) and every number matches the "
          "store's recomputed tables")
    return 0


EPILOG = """examples:
  camdf data validate path/to/folder       check a domain folder (catalog.json + tasks.jsonl)
  camdf data summary data                  the built domains, one row each
  camdf data ranking data                  each catalog ranked by a ranker fitted on the others, beside bm25
  camdf select --input request.json        the prefix to expose for one request (or a list)
  echo '{"query": "...", "tools": [...]}' | camdf select
  camdf serve -p 5001                      the champion as a service on loopback (mlflow models serve)
  camdf export models:/camdf-stopper@champion policy/   the policy as a self-contained folder
  camdf fit --tools tools.json --tasks tasks.jsonl --out policy/
                                           a policy fitted on your own tools and logged tasks
  camdf mcp-proxy --upstream "python server.py" --policy policy/ --lam 0.1
                                           an MCP proxy exposing the policy's tools (docs/harness.md)
  camdf results check                      do the Results (docs/results.md) match the checkout and the store?

exit status: 0 done, 1 the Results are stale (results check) or a fault of the machine or store,
2 bad input (one line on stderr), 130 interrupted (Ctrl-C).
The task format: docs/task-format.md."""


class _Parser(argparse.ArgumentParser):
    """argparse, its errors as one line (not the usage text): ``camdf <command>: <what> (camdf ... --help)``."""

    def error(self, message: str):
        print(f"{self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def _data_commands(sub) -> None:
    data = sub.add_parser("data", help="domain folders in the task format").add_subparsers(dest="cmd", required=True)
    validate = data.add_parser("validate", help="check a domain folder (catalog.json + tasks.jsonl)")
    validate.add_argument("path", help="folder holding catalog.json and tasks.jsonl")
    validate.add_argument(
        "--acquirable-kinds", type=_names, default=list(DEFAULT_ACQUIRABLE_KINDS),
        help="comma-separated tool kinds that are acquirable (default: read,generic)",
    )
    validate.add_argument("--never-acquirable", type=_names, default=[], help="comma-separated tool names")
    validate.set_defaults(func=cmd_validate)
    summary = data.add_parser("summary", help="markdown table of the built domains (from their manifests)")
    summary.add_argument("data_dir", nargs="?", default="data", help="folder of built domains (default: data)")
    summary.set_defaults(func=cmd_summary)
    ranking = data.add_parser("ranking", help="ranking quality of every built catalog, the cross-catalog ranker "
                                              "fitted on the others (leave one catalog out) beside bm25")
    ranking.add_argument("data_dir", nargs="?", default="data", help="folder of built domains (default: data)")
    ranking.add_argument("--domains", type=_names, default=[], help="comma-separated built domains (default: all)")
    ranking.set_defaults(func=cmd_ranking)


def _select_command(sub) -> None:
    select = command(sub, "select", cmd_select, help="expose a prefix of a ranked tool list with a fitted policy")
    policy_options(
        select,
        policy="MLflow model URI (runs:/..., models:/...) or model folder (default: the package's default policy, "
               "fitted on every built-in domain for any catalog; models:/camdf-stopper@champion: the pipeline's "
               "champion in MLFLOW_TRACKING_URI or else the checkout's outputs/mlflow.db)",
        lam="lambda for every request, over a request's own `lam` (default: the request's, else the policy's)",
        dial_help="a run-time dial of the policy's rule for every request, over the request's own "
             "(repeatable; --NAME VALUE is the same, for every registered dial; default: the "
             "request's, else the policy's)",
        between=[("--input", {"default": "-", "help": "JSON request file (default: stdin)"})])
    for spec in dial_specs().values():  # --<dial> VALUE, an alias of --dial <dial>=VALUE, for every registered dial
        select.add_argument(f"--{spec.name}", dest="dial", action="append", metavar="VALUE",
                            type=partial(_alias, spec.name), help=f"--dial {spec.name}=VALUE ({spec.describe()})")


def _export_command(sub) -> None:
    export = command(sub, "export", cmd_export,
                     help="write a fitted policy as a self-contained folder (JSON, LightGBM text, manifest)")
    export.add_argument("policy", metavar="POLICY_URI", help="MLflow model URI or model folder")
    export.add_argument("dir", metavar="DIR", help="the folder to create (must not exist, or be empty)")


def _proxy_command(sub) -> None:
    proxy = command(sub, "mcp-proxy", cmd_mcp_proxy,
                    help="an MCP server (stdio) listing only the tools the policy exposes for the task")
    proxy.add_argument("--upstream", action="append", metavar="CMD_OR_URL",
                       help="an upstream MCP server: a command line (stdio) or an http(s):// URL (repeatable)")
    policy_options(proxy, policy="model URI or folder (default: the package's default policy)",
                    lam="lambda (default: the policy's)",
                    dial_help="a run-time dial of the policy's rule (repeatable)")
    proxy.add_argument("--always-include", type=_names, default=[], metavar="NAMES",
                       help="comma-separated tools always listed")
    proxy.add_argument("--max-tools", type=int, default=None, help="at most this many tools from the policy")
    proxy.add_argument("--min-tools", type=int, default=1,
                       help="at least this many tools from the policy, its best-ranked added (default 1; 0: none)")
    proxy.add_argument("--scorer", metavar="MODULE:FUNCTION", default=None,
                       help="your own retriever, scorer(query, tools) -> one score per tool, instead of bm25")
    proxy.add_argument("--env", action="append", metavar="KEY", default=None,
                       help="pass only this environment variable to stdio upstreams (repeatable; default: the whole "
                            "environment; the MCP SDK's safe defaults, PATH, HOME..., are always passed)")
    proxy.add_argument("--on-withheld", choices=["refuse", "forward"], default="refuse",
                       help="a call to a withheld tool: refused with an MCP error (default) or forwarded and "
                            "recorded as a miss")
    proxy.add_argument("--call-timeout", type=float, default=60.0, help="seconds an upstream has to answer")
    proxy.add_argument("--search-k", type=int, default=5,
                       help="tools one search_tools call exposes (a handshake-era client, a policy that defers)")
    proxy.add_argument("--preload", type=_names, default=[], metavar="NAMES", help="tools listed from the start")
    proxy.add_argument("--search-max", type=int, default=None, metavar="N", help="at most N tools a search")


def _results_commands(sub) -> None:
    results = sub.add_parser("results", help="the README Results").add_subparsers(dest="cmd", required=True)
    check = results.add_parser(
        "check", help="do the Results match the checkout's source fingerprint and the numbers recomputed from the store?",
        description="Compare the Results' source fingerprint with the checkout's, then rebuild every table and "
                    "finding from the MLflow store (MLFLOW_TRACKING_URI, else outputs/mlflow.db) as `make tables` "
                    "would and compare them line by line, number by number (run ids aside). Exit 0: they match; "
                    "1: stale, different, or no store to recompute from.")
    check.add_argument("readme", nargs="?", default=str(Path(__file__).resolve().parents[2] / "docs" / "results.md"),
                       help="file holding the Results, or a README with their headline block "
                            "(default: the checkout's docs/results.md)")
    check.add_argument("--version-only", action="store_true",
                       help="compare the source fingerprint only (no store needed)")
    check.add_argument("--override", action="append", metavar="KEY=VALUE",
                       help="an override of conf/tables.yaml the Results were built with (repeatable), "
                            "e.g. \"cell_overrides=['stats.n_resamples=500']\"")
    check.set_defaults(func=cmd_results_check)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="camdf", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Cost-aware tool acquisition: check domain folders, ask the fitted stopper how many\n"
                    "tools to expose, check the README Results.",
        epilog=EPILOG)
    sub = parser.add_subparsers(dest="group", required=True,
                                metavar="{data,select,serve,export,fit,preload,mcp-proxy,results}")
    for add in (_data_commands, _select_command, add_serve_command, _export_command, add_fit_command,
                add_preload_command, _proxy_command, _results_commands):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; any failure it does not handle itself is one line on stderr (exit 2, 1 or 130)."""
    from camdf.pipeline.boundary import cli_boundary

    args = build_parser().parse_args(argv)  # Ctrl-C until cli_boundary is in place: the start's guard (exit 130)
    command = " ".join(str(getattr(args, k)) for k in ("group", "cmd") if getattr(args, k, None))
    return cli_boundary(command, lambda: args.func(args))

