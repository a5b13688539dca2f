"""The ``camdf`` command line (data validate / summary, select)."""

from camdf.cli.commands import main

__all__ = ["main"]
