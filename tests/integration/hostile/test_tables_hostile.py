"""The tables writer under hostile folders (camdf.reporting.build.write_set): a symlinked folder, a user's own
files, a build with nothing to write (an anchor no cell matches) and SIGKILL at any point of a build.

Each case asserts what is refused (one ValueError naming the folder), that nothing but the files a build
listed is ever replaced, and that a killed build leaves a complete set: the previous one or the new one.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from camdf.reporting.build import MANIFEST, _recover, write_set

from .folders import snapshot

ROOT = Path(__file__).resolve().parents[3]
OLD = {"table2.md": "old 2\n", "table2.csv": "a,b\n1,2\n", "a18.md": "old a18\n", "fig.png": b"\x89PNG old"}
NEW = {"table2.md": "new 2\n", "table2.csv": "a,b\n3,4\n", "a18.md": "new a18\n", "fig.png": b"\x89PNG new"}


def _set(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}


def _bytes(files: dict) -> dict[str, bytes]:
    return {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}


def test_a_build_replaces_its_own_files_and_leaves_a_users_alone(tmp_path):
    out = tmp_path / "tables"
    write_set(out, OLD)
    (out / "my-notes.md").write_text("mine")
    (out / "mine").mkdir()
    (out / "mine" / "table9.md").write_text("mine too")
    written, kept = write_set(out, NEW)
    assert sorted(p.name for p in written) == sorted(NEW) and kept == []
    assert _set(out) == {**_bytes(NEW), "my-notes.md": b"mine"}
    assert (out / "mine" / "table9.md").read_text() == "mine too"
    assert not (tmp_path / ".tables.staging").exists()


def test_a_table_with_no_matching_cells_keeps_the_previous_one(tmp_path):
    out = tmp_path / "tables"
    write_set(out, OLD)
    written, kept = write_set(out, {k: v for k, v in NEW.items() if not k.startswith("table2")})
    assert kept == ["table2.csv", "table2.md"]
    assert _set(out) == {**_bytes(NEW), "table2.md": b"old 2\n", "table2.csv": b"a,b\n1,2\n"}
    # an empty anchor: nothing built, everything kept, still listed for the next build
    written, kept = write_set(out, {})
    assert written == [] and kept == sorted(OLD)
    assert sorted(json.loads((out / MANIFEST).read_text())["files"]) == sorted(OLD)


@pytest.mark.parametrize("which", ["tables", "staging"])
def test_a_symlinked_folder_is_refused_and_nothing_is_written_through_it(which, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "table2.md").write_text("a user's file")
    out = tmp_path / "outputs" / "tables"
    out.parent.mkdir()
    link = out if which == "tables" else out.parent / ".tables.staging"
    os.symlink(elsewhere, link)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as err:
        write_set(out, NEW)
    assert str(err.value).startswith(f"{link}: is a symbolic link") and len(str(err.value).splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_a_file_linked_in_by_name_is_replaced_not_written_through(tmp_path):
    out = tmp_path / "tables"
    write_set(out, OLD)
    target = tmp_path / "precious.md"
    target.write_text("precious")
    (out / "table2.md").unlink()
    os.symlink(target, out / "table2.md")
    write_set(out, NEW)
    assert target.read_text() == "precious" and not (out / "table2.md").is_symlink()


_CHILD = """
import sys
from pathlib import Path
from camdf.reporting.build import write_set
files = {f"t{i:03d}.{ext}": (f"{sys.argv[2]} {i} " * 4000) for i in range(150) for ext in ("md", "csv", "tex")}
print("go", flush=True)
write_set(Path(sys.argv[1]), files)
print("done", flush=True)
"""


def _files(tag: str) -> dict[str, bytes]:
    return {f"t{i:03d}.{ext}": (f"{tag} {i} " * 4000).encode() for i in range(150) for ext in ("md", "csv", "tex")}


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.3, 0.6])
def test_sigkill_at_any_point_leaves_a_complete_set(delay, tmp_path):
    out = tmp_path / "tables"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", _CHILD, str(out), "old"], check=True, env=env, capture_output=True)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(out), "new"], env=env, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline().strip() == "go"
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    old, new = _files("old"), _files("new")
    _recover(out)  # what the next build does first
    assert _set(out) in (old, new)
    assert not (tmp_path / ".tables.staging").exists()
