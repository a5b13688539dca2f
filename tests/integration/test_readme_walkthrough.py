"""The README's first-ten-minutes walkthrough, run as written, its output compared with the README's.

The block between ``<!-- walkthrough -->`` and ``<!-- /walkthrough -->`` is a console
transcript: ``$ command`` lines, each followed by the lines it prints. Every command runs
in a shell, in order, in a copy of the checkout's layout (its files linked, fresh ``data/``
and ``outputs/``; ``CAMDF_ROOT`` points the stages there), so nothing is written into the
checkout. The README's lines must appear in the command's output in the same order, where
``...`` stands for any text (a path, a run id) and a line ``...`` alone for any lines.
``make setup`` finds the session's venv set up, so it prints nothing here.
"""

import os
import shutil
import re
import subprocess
from pathlib import Path

from .test_pipeline import check_smoke_store

ROOT = Path(__file__).resolve().parents[2]
LINKED = [".venv", "camdf", "conf", "pipelines", "Makefile", "pyproject.toml"]
#: Copied, not linked: the stages refuse a Results path (README.md, docs/results.md) that resolves outside the
#: checkout, as a link would.
COPIED = ["README.md", "docs"]


def transcript(readme: str) -> list[tuple[str, list[str]]]:
    """(command, expected lines) of the walkthrough block, in order."""
    block = re.search(r"<!-- walkthrough -->\n```console\n(.*?)```\n<!-- /walkthrough -->", readme, re.S)
    assert block, "README.md has no walkthrough block"
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    return steps


def _pattern(line: str) -> re.Pattern:
    return re.compile("^" + ".*".join(re.escape(part) for part in line.split("...")) + "$")


def missing_lines(expected: list[str], actual: list[str]) -> list[str]:
    """The expected lines not found in ``actual`` in order (``...`` alone skips any lines)."""
    pos = 0
    for i, line in enumerate(expected):
        if line == "...":
            continue
        pattern = _pattern(line.rstrip())
        while pos < len(actual) and not pattern.match(actual[pos].rstrip()):
            pos += 1
        if pos == len(actual):
            return expected[i:]
        pos += 1
    return []


def test_matcher_keeps_order_and_wildcards():
    out = ["a 1", "noise", "b /x/y", "c"]
    assert missing_lines(["a ...", "...", "b .../y", "c"], out) == []
    assert missing_lines(["b .../y", "a ..."], out) == ["a ..."]
    assert missing_lines(["d"], out) == ["d"]


def test_readme_walkthrough_prints_what_the_readme_shows(tmp_path, smoke_reference):
    """The walkthrough as written (~70 s), then the smoke grid's tables checked on the store it made (against the session's reference sweep) (the
    walkthrough runs `make reproduce-smoke`: :func:`check_smoke_store`, ~100 s), so the grid is swept once."""
    steps = transcript((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [cmd.split()[0] for cmd, _ in steps][:2] == ["make", ".venv/bin/python"]
    co = tmp_path / "checkout"
    co.mkdir()
    for name in LINKED:
        (co / name).symlink_to(ROOT / name)
    for name in COPIED:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, co / name)
    (co / "data").mkdir()
    (co / "outputs").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "CAMDF_"))}
    env["CAMDF_ROOT"] = str(co)
    for cmd, expected in steps:
        proc = subprocess.run(["bash", "-c", cmd], cwd=co, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=900)  # one stream, in the order a terminal shows it
        lines = proc.stdout.splitlines()
        assert proc.returncode == 0, f"$ {cmd}\n" + "\n".join(lines[-40:])
        assert not missing_lines(expected, lines), (f"$ {cmd}\nmissing: {missing_lines(expected, lines)}\n"
                                                     "printed:\n" + "\n".join(lines[-60:]))
    assert sorted(p.name for p in co.iterdir()) == sorted([*LINKED, *COPIED, "data", "outputs"])  # nothing else written
    assert (co / "outputs" / "mlflow.db").is_file() and (co / "data" / "retail" / "tasks.jsonl").is_file()
    (tmp_path / "smoke").mkdir()
    check_smoke_store(tmp_path / "smoke", co / "outputs", co / "data", smoke_reference.tables)
