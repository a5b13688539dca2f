"""The options every command that decides with a policy shares: ``--policy``, ``--lam``, ``--task-value``,
``--dial``, and the lambda they give (:mod:`camdf.cli.commands`, :mod:`camdf.cli.preload`)."""

from __future__ import annotations

import argparse


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
