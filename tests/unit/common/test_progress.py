"""The progress helper: the items pass through unchanged, quiet under CI or without a terminal, and a bar
drawn on a terminal (rich's console forced to one)."""

import io
import os

import pytest
from rich.console import Console

from camdf.common import progress


@pytest.mark.parametrize("ci,tty,expected", [("true", True, True), ("1", True, True), ("false", True, False),
                                             ("0", True, False), ("", True, False), ("", False, True)])
def test_quiet_under_ci_or_without_a_terminal(ci, tty, expected, monkeypatch):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: tty, raising=False)
    assert progress.quiet() is expected


def test_tracked_yields_every_item_when_quiet(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert list(progress.tracked(iter(range(5)), 5, "x")) == [0, 1, 2, 3, 4]


def test_tracked_draws_a_bar_on_a_terminal(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(progress, "quiet", lambda: False)
    monkeypatch.setattr("rich.console.Console", lambda **kw: Console(file=out, force_terminal=True, width=100))
    assert list(progress.tracked(range(3), 3, "deriving")) == [0, 1, 2]
    assert "deriving" in out.getvalue() and "3/3" in out.getvalue()


def test_tracked_stands_aside_for_a_live_display(monkeypatch):
    """Inside a sweep's live display (rich allows one per process) the items still all pass."""
    from rich.progress import Progress

    monkeypatch.setattr(progress, "quiet", lambda: False)
    with Progress(console=Console(file=io.StringIO(), force_terminal=True)):
        assert list(progress.tracked(range(4), 4, "inner")) == [0, 1, 2, 3]


@pytest.mark.parametrize("before", [None, "true"])
def test_no_download_bars_turns_mlflow_bars_off_and_restores_the_setting(before, monkeypatch):
    if before is None:
        monkeypatch.delenv(progress.MLFLOW_BARS, raising=False)
    else:
        monkeypatch.setenv(progress.MLFLOW_BARS, before)
    with pytest.raises(RuntimeError), progress.no_download_bars():
        assert os.environ[progress.MLFLOW_BARS] == "false"
        raise RuntimeError("the setting is restored on an error too")
    assert os.environ.get(progress.MLFLOW_BARS) == before
