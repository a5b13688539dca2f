"""One owner of every wait (issue 51, point 4): the blocking primitives appear in ``camdf/common/waits.py`` only.

Read from the source with ``ast`` (nothing is imported). Anywhere else in ``camdf/``, each of these is refused:
a child process (``subprocess``), a network call that is not through the owner (``requests.<call>``,
``urllib.request``, ``http.client``, ``socket.create_connection``), a timeout wrapper (``asyncio.wait_for``,
``anyio.fail_after`` / ``move_on_after``), a store opened without the owner's regular-file check and lock bound
(``sqlite3.connect``), the machine's cores read another way (``os.cpu_count``, ``os.sched_getaffinity``), and a
``join()`` / ``wait()`` / ``result()`` / ``communicate()`` with no bound (a thread, an event, a future, a child).
The family beside it (``tests/unit/common/test_waits.py``, ``tests/integration/hostile/test_waits_hostile.py``)
shows each owner's bound against a tarpit, a FIFO, a silent server and a hung child.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "camdf"
OWNER = PACKAGE / "common" / "waits.py"
MODULES = {"subprocess", "urllib.request", "http.client", "httpx"}
CALLS = {("asyncio", "wait_for"), ("anyio", "fail_after"), ("anyio", "move_on_after"), ("os", "cpu_count"),
         ("os", "sched_getaffinity"), ("sqlite3", "connect"), ("socket", "create_connection")}
UNBOUNDED = {"join", "wait", "result", "communicate"}


def blocking_uses(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` of each blocking primitive in ``source`` (see the module's docstring)."""
    found, tree = [], ast.parse(source)
    imports_requests = any(isinstance(n, ast.Import) and any(a.name == "requests" for a in n.names)
                           for n in ast.walk(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module in MODULES | {"requests"}:
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, attr = node.func.value, node.func.attr
            if isinstance(owner, ast.Name) and (owner.id, attr) in CALLS:
                found.append((node.lineno, f"{owner.id}.{attr}()"))
            elif isinstance(owner, ast.Name) and owner.id == "requests" and imports_requests:
                found.append((node.lineno, f"requests.{attr}()"))
            elif attr in UNBOUNDED and not node.args and not node.keywords:
                found.append((node.lineno, f"{ast.unparse(node)[:60]} (no bound)"))
    return found


def test_no_module_but_the_owner_blocks():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER
                 for line, what in blocking_uses(path.read_text(encoding="utf-8"))]
    assert offenders == [], "blocking outside camdf/common/waits.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize("source,what", [
    ("import subprocess\nsubprocess.run(['x'])", "import subprocess"),
    ("from subprocess import run", "from subprocess import ..."),
    ("import requests\nrequests.get('http://x')", "requests.get()"),
    ("from requests import get", "from requests import ..."),
    ("import asyncio\nasync def f(a):\n    await asyncio.wait_for(a, 1)", "asyncio.wait_for()"),
    ("import anyio\nwith anyio.fail_after(3):\n    pass", "anyio.fail_after()"),
    ("import sqlite3\nsqlite3.connect('x.db')", "sqlite3.connect()"),
    ("import os\nos.cpu_count()", "os.cpu_count()"),
    ("t.join()", "t.join() (no bound)"),
    ("event.wait()", "event.wait() (no bound)"),
    ("future.result()", "future.result() (no bound)"),
    ("proc.communicate()", "proc.communicate() (no bound)"),
    ("import urllib.request", "import urllib.request"),
])
def test_the_scan_sees_each_primitive(source, what):
    assert [w for _, w in blocking_uses(source)] == [what]


@pytest.mark.parametrize("source", [
    "', '.join(names)", "t.join(5)", "event.wait(timeout=1)", "future.result(timeout=2)",
    "import requests\nisinstance(e, requests.exceptions.Timeout)", "os.path.join('a', 'b')",
    "requests = []\nrequests.append(1)",
])
def test_the_scan_passes_bounded_and_unrelated_calls(source):
    assert blocking_uses(source) == []
