"""The options every command that decides with a policy shares: ``--policy``, ``--lam``, ``--task-value``,
``--dial``, and the lambda they give (:mod:`camdf.cli.commands`, :mod:`camdf.cli.preload`)."""

from __future__ import annotations

import argparse
import inspect


def parse_dial(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` of ``--dial`` (the value a number); argparse names the flag when it is not."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name.strip():
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=NUMBER, got {text!r}") from None


def flag_lam(args: argparse.Namespace) -> float | None:
    """The lambda of the command line: --lam, or 1 / --task-value (ValueError when both are given)."""
    if args.task_value is None:
        return args.lam
    if args.lam is not None:
        raise ValueError("--task-value: give --lam or --task-value, not both (lambda = 1 / task value)")
    from camdf.costs.units import lam_from_task_value

    return lam_from_task_value(args.task_value, "--task-value")


def policy_options(cmd: argparse.ArgumentParser, policy: str, lam: str, dial_help: str | None,
                   between=()) -> None:
    """The options every command that decides with a policy takes: ``--policy``, ``--lam``, ``--dial`` (with their
    helps); ``between``: ``(flag, kwargs)`` pairs added after ``--policy`` (where ``--help`` lists them)."""
    cmd.add_argument("--policy", default=None, help=policy)
    for flag, kwargs in between:
        cmd.add_argument(flag, **kwargs)
    cmd.add_argument("--lam", type=float, default=None, help=lam)
    cmd.add_argument("--task-value", type=float, default=None, metavar="TOKENS",
                     help="the tokens of tool definitions one solved task is worth, for a policy priced in tokens "
                          "(the default policy's default: 5,000): lambda = 1 / TOKENS (give it or --lam)")
    if dial_help is not None:  # None: a command without run-time dials
        cmd.add_argument("--dial", type=parse_dial, action="append", metavar="NAME=VALUE", help=dial_help)


#: What ``--tools`` reads (``camdf fit``, ``camdf preload``).
TOOLS_HELP = ("your tools: an MCP tools/list result ({\"tools\": [...]}) or a list of tools (OpenAI, MCP or Anthropic "
              "shape)")
#: One logged task, a line of the ``--tasks`` JSONL.
TASK_LINE = "{\"query\": \"...\", \"tools_used\": [\"name\", ...]}"


def catalog_options(cmd: argparse.ArgumentParser, tasks_required: bool, tasks_use: str) -> None:
    """``--tools`` (required) and ``--tasks`` (the logged tasks, ``tasks_use`` saying what they are read for)."""
    cmd.add_argument("--tools", required=True, help=TOOLS_HELP)
    cmd.add_argument("--tasks", required=tasks_required, default=None,
                     help=f"JSONL of logged tasks, one a line ({TASK_LINE}): {tasks_use}")


def command(sub, name: str, func, help: str) -> argparse.ArgumentParser:
    """The subcommand ``name`` running ``func``; ``func``'s docstring is what ``camdf NAME --help`` describes."""
    cmd = sub.add_parser(name, help=help, description=inspect.cleandoc(func.__doc__ or ""))
    cmd.set_defaults(func=func)
    return cmd
