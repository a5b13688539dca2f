"""The ``camdf`` command line (data validate / summary, select)."""

from camdf.common.process import guard_start, started_as_command

if started_as_command():
    guard_start()  # Ctrl-C during the imports: one line, exit 130 (camdf.common.process)

from camdf.cli.commands import main  # noqa: E402  after the guard

__all__ = ["main"]
