"""``camdf preload``: the fitted preload set of a catalog, printed as each harness's own setting.

Glue only: the arguments are checked, :func:`camdf.runtime.preload.plan_preload` fits the set (from logged tasks
or sample queries) and :mod:`camdf.adapters.harness_config` renders it. Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys


def _queries(path: str) -> list[str]:
    """One sample query a line (blank lines skipped); ValueError naming the file."""
    from pathlib import Path

    from camdf.runtime.fit_inputs import _bytes  # the house's checked file read

    data = _bytes(Path(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8") from None
    queries = [line.strip() for line in text.splitlines() if line.strip()]
    if not queries:
        raise ValueError(f"{path}: no query (expected one sample request a line)")
    return queries


def cmd_preload(args: argparse.Namespace) -> int:
    """Fit the preload set of a catalog (preload a tool iff the share of tasks needing it is at least its tokens / (a
    search round's tokens + its tokens)) and print it in a harness's own setting (docs/harness.md)."""
    from camdf.cli.options import flag_lam
    from camdf.runtime.fit_inputs import read_tasks, read_tools
    from camdf.adapters.harness_config import render
    from camdf.runtime.preload import plan_preload
    from camdf.runtime.toolset import ToolChooser

    try:
        if (args.tasks is None) == (args.queries is None):
            raise ValueError("give --tasks (logged tasks, with the tools each used) or --queries (sample requests, "
                             "one a line), one of them")
        tools = read_tools(args.tools)
        if args.tasks is not None:
            plan = plan_preload(tools, tasks=read_tasks(args.tasks, [t["name"] for t in tools], minimum=1),
                                search_cost=args.search_cost)
        else:
            chooser = ToolChooser(args.policy, lam=flag_lam(args), min_tools=0)
            chooser.loaded()  # a policy that cannot load is refused, not failed open on every query
            plan = plan_preload(tools, queries=_queries(args.queries), chooser=chooser, search_cost=args.search_cost)
        text = render(args.format, plan, tools, upstreams=args.upstream or [], server=args.server,
                      policy=args.policy)
    except ValueError as err:
        print(f"camdf preload: {err}", file=sys.stderr)
        return 2
    print(text)
    s = plan.summary()
    print(f"camdf preload: {len(plan.names)} of {len(tools)} tools preloaded ({s['preload_tokens']:g} of "
          f"{s['catalog_tokens']:g} schema tokens), from {plan.count} {plan.source}"
          + (f" ({plan.failed} queries failed)" if plan.failed else ""), file=sys.stderr)
    return 0


def add_preload_command(sub) -> None:
    """The ``preload`` subcommand and its options."""
    from camdf.adapters.harness_config import FORMATS
    from camdf.cli.options import catalog_options, command, policy_options
    from camdf.runtime.preload import SEARCH_COST

    cmd = command(sub, "preload", cmd_preload,
                  help="the tools to load up front when the rest are one search away, as a harness's setting")
    catalog_options(cmd, tasks_required=False, tasks_use="the share of tasks that used each tool")
    cmd.add_argument("--queries", default=None, help="sample requests, one a line: the share the policy exposes "
                                                     "each tool for")
    cmd.add_argument("--format", choices=FORMATS, default="json", help="what to print (default json)")
    cmd.add_argument("--upstream", action="append", metavar="CMD_OR_URL",
                     help="the upstream MCP servers, for claude-code and codex (repeatable)")
    cmd.add_argument("--server", default="camdf", help="the server's name in claude-code and codex (default camdf)")
    cmd.add_argument("--search-cost", type=float, default=SEARCH_COST, metavar="TOOLS",
                     help=f"a search round's price in mean tool definitions (default {SEARCH_COST:g})")
    policy_options(cmd, policy="model URI or folder deciding over --queries (default: the package's default policy)",
                   lam="lambda (default: the policy's)", dial_help=None)
