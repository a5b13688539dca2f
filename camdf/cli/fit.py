"""``camdf fit``: fit a policy on your own tools and logged tasks, keep the base unless it is beaten out of fold.

Glue only: the arguments are checked, :class:`camdf.runtime.fitting.PolicyFitter` fits and compares, the
comparison is printed and the shipped policy exported (written beside ``--out`` and moved into place, so a
failure leaves no folder). Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_fit(args: argparse.Namespace) -> int:
    """Rank every task's tools with the built-in bm25 ranker over your catalog, price each tool by its schema tokens,
    fit the candidate rule(s) and compare them out of fold with the base policy on your tasks (payoff = success
    - tokens / task value); export the better one to --out with the comparison in its manifest (docs/harness.md,
    `camdf fit`)."""
    from camdf.runtime.fit_compare import comparison_lines
    from camdf.runtime.fit_inputs import read_tasks, read_tools
    from camdf.runtime.fitting import PolicyFitter

    out = Path(args.out)
    try:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):  # before minutes of work, not after
            raise ValueError(f"--out {out}: exists and is not an empty folder (camdf fit writes a new folder)")
        tools = read_tools(args.tools)
        tasks = read_tasks(args.tasks, [t["name"] for t in tools])
        fitter = PolicyFitter(methods=args.method or None, task_value=args.task_value, base=args.base,
                              top_n=args.top_n, n_folds=args.folds, random_state=args.seed)
        fitter.fit(tools, tasks)
        print("\n".join(comparison_lines(fitter.report_)))
        folder = fitter.export(out)
    except ValueError as err:
        print(f"camdf fit: {err}", file=sys.stderr)
        return 2
    print(f"{folder}: {fitter.policy_.method} policy exported ({fitter.shipped_}); costs in schema tokens at task "
          f"value {args.task_value:g}; load it with camdf.runtime.load_policy({str(folder)!r})")
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def add_fit_command(sub) -> None:
    """The ``fit`` subcommand and its options."""
    from camdf.cli.options import catalog_options, command
    from camdf.costs.units import DEFAULT_TASK_VALUE

    fit = command(sub, "fit", cmd_fit,
                  help="fit a policy on your own tools and logged tasks (kept only if it beats the base out of fold)")
    catalog_options(fit, tasks_required=True, tasks_use="what a policy is fitted on and judged by")
    fit.add_argument("--out", required=True, help="the policy folder to create (must not exist, or be empty)")
    fit.add_argument("--task-value", type=_positive_float, default=DEFAULT_TASK_VALUE,
                     help=f"tokens of tool definitions one solved task is worth (lambda = 1 / task value; "
                          f"default {DEFAULT_TASK_VALUE:g})")
    fit.add_argument("--method", action="append", metavar="RULE",
                     help="a candidate rule (repeatable; default: the base policy's own rule); the best out of fold "
                          "faces the base")
    fit.add_argument("--base", default=None, help="the policy to keep unless beaten (folder or URI; default: the "
                                                  "package's default policy)")
    fit.add_argument("--top-n", type=_positive_int, default=50,
                     help="ranked tools kept per task, and per request when deciding (default 50)")
    fit.add_argument("--folds", type=_positive_int, default=5, help="inner folds of the comparison (default 5)")
    fit.add_argument("--seed", type=int, default=0, help="seeds the folds, the rules and the bootstrap (default 0)")
