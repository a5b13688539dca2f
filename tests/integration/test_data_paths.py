"""Safe data paths for the data stage: plain domain names only, no stale temporaries, one summary row per domain."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from camdf.data.io import check_domain_name, read_domain, remove_stale_temporaries, write_domain
from camdf.data.overview import summarize
from camdf.pipeline.data_stage import build_domain

from .test_pipeline import QUIET, ROOT, _env, _run

BAD_NAMES = ["", ".", "..", "../x", "a/b"]
# The real retail conversion without the derivation of labels and the measured execution costs (~2 s, not ~30 s).
FAST = ["domain.label_source=annotated", "domain.report_execution_costs=false"]


def _listing(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (hidden ones too): a file's bytes, None for a folder."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def _override(value: str) -> str:
    return "domain.name=''" if value == "" else f"domain.name={value}"


def _summary_rows(data: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "data", "summary", str(data)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [line.split("|")[1].strip() for line in proc.stdout.splitlines()[2:]]


def _temporaries(data: Path, name: str = "retail") -> list[Path]:
    return sorted(data.glob(f".{name}.*"))


@pytest.mark.parametrize("value", BAD_NAMES, ids=["empty", "dot", "dotdot", "parent", "slash"])
def test_bad_domain_name_is_refused_before_anything_is_read_or_written(value, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    (data / "sentinel").mkdir(parents=True)
    (data / "sentinel" / "manifest.json").write_text('{"keep": true}\n')
    (data / "README.md").write_text("# tracked data README\n")
    data_before, outside_before = _listing(data), sorted(p.name for p in tmp_path.iterdir())
    start = time.perf_counter()
    proc = _run(["pipelines.data", "domain=retail", _override(value)], out, data, check=False)
    elapsed = time.perf_counter() - start
    print(f"refused domain.name={value!r} in {elapsed:.2f} s")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: domain.name: expected a plain name (letters, digits, `_`, `-`), got {value!r}"]
    assert proc.stdout == ""
    assert _listing(data) == data_before
    # Only Hydra's output folder may be new, and empty: the job folder Hydra wrote was removed, no cache was made.
    assert {p.name for p in tmp_path.iterdir()} <= {*outside_before, "out"}
    assert not out.exists() or _listing(out) == {}


@pytest.mark.parametrize("value", [*BAD_NAMES, " a", "a b", ".x", "-x", "a.b", "é", "a\n", None, 3])
def test_check_domain_name_refuses_anything_but_a_plain_name(value):
    with pytest.raises(ValueError, match=r"^domain\.name: expected a plain name \(letters, digits, `_`, `-`\), got "):
        check_domain_name(value)


@pytest.mark.parametrize("value", ["retail", "retail_d100", "bfcl_multi_turn", "A-1", "7"])
def test_check_domain_name_accepts_plain_names(value):
    assert check_domain_name(value) == value


def _domain_files(dom) -> dict[str, str]:
    return {"manifest.json": json.dumps({"key": "k", "summary": summarize(dom)}) + "\n"}


def test_writer_and_stage_refuse_a_bad_folder_before_touching_anything(fixture_domains, tmp_path):
    dom = read_domain(fixture_domains / "valid_user")
    data = tmp_path / "data"
    (data / "keep").mkdir(parents=True)
    (data / "README.md").write_text("x\n")
    before = _listing(tmp_path)
    calls = []
    for folder in [data / "..", data / "keep" / "..", data / ".keep", data / "a b", data / "-x"]:
        with pytest.raises(ValueError, match="plain name"):
            write_domain(dom, folder)
        with pytest.raises(ValueError, match="plain name"):
            build_domain(lambda: calls.append(1), folder, config={})
    for bad in BAD_NAMES:  # the stage's folder is data/<name>: the name is checked as given
        with pytest.raises(ValueError, match="plain name"):
            build_domain(lambda: calls.append(1), data / "ok", config={"name": bad})
    assert calls == [] and _listing(tmp_path) == before


def test_writer_removes_only_its_own_stale_temporaries(fixture_domains, tmp_path):
    dom, other = read_domain(fixture_domains / "valid_user"), read_domain(fixture_domains / "valid_user")
    dom.name, other.name = "retail", "other"
    data = tmp_path / "data"
    write_domain(other, data / "other", extra_files=_domain_files(other))
    manifest = _domain_files(dom)["manifest.json"]
    stale = [data / ".retail.x1y2z3", data / ".retail.old-123"]
    kept = [data / ".other.abc", data / ".retail_d100.abc", data / ".retailx.abc"]
    for folder in stale + kept:
        folder.mkdir()
        (folder / "manifest.json").write_text(manifest)  # each would be a summary row if hidden folders were listed
    (data / ".retail.note").write_text("a file, not a writer's folder\n")
    (data / "retail.bak").mkdir()
    live = data / ".retail.live"  # a temporary a running writer holds: kept
    live.mkdir()
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        write_domain(dom, data / "retail", extra_files=_domain_files(dom))
    finally:
        os.close(fd)
    assert not any(p.exists() for p in stale)
    assert all(p.is_dir() for p in kept) and live.is_dir() and (data / ".retail.note").is_file()
    assert (data / "retail.bak").is_dir()
    assert read_domain(data / "retail").name == "retail"
    assert _summary_rows(data) == ["other", "retail"]  # one row per domain: hidden folders are never listed
    assert remove_stale_temporaries(data / "retail") == [live]  # unlocked now: stale
    assert all(p.is_dir() for p in kept) and (data / "other").is_dir()


# The real data stage, with the writer's validation of its temporary folder made to hang, so the kill lands
# while `.retail.<random>/` exists and holds every file (manifest.json included).
CHILD = r"""
import sys, time
from pathlib import Path
import camdf.data.io.read as reader  # the writer checks its temporary folder through this module's read_domain

read = reader.read_domain
def hanging_read(folder, *args, **kwargs):
    if Path(folder).name.startswith("."):
        time.sleep(600)
    return read(folder, *args, **kwargs)
reader.read_domain = hanging_read
import runpy
sys.argv = ["pipelines/data.py", *sys.argv[1:]]
runpy.run_path("pipelines/data.py", run_name="__main__")  # as `python -m pipelines.data` runs it
"""


def _killed_stage(data: Path, out: Path, *extra: str) -> None:
    cmd = [sys.executable, "-c", CHILD, "domain=retail", *FAST, *extra,
           f"paths.output_dir={out}", f"paths.data_dir={data}", *QUIET]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    try:
        while not any((t / "manifest.json").is_file() for t in _temporaries(data)):
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.time() < deadline, "the data stage made no temporary folder in 120 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("prior", [False, True], ids=["first-build", "forced-rebuild"])
def test_sigkilled_write_leaves_a_temporary_that_the_rerun_removes(prior, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    (data / "README.md").write_text("# tracked data README\n")
    if prior:
        _run(["pipelines.data", "domain=retail", *FAST], out, data)
    before = _listing(data)
    _killed_stage(data, out, *(["force=true"] if prior else []))
    assert len(_temporaries(data)) == 1  # what the killed run left
    # The swap never happened: the previous folder (or none) is intact, and the summary ignores the temporary.
    assert {k: v for k, v in _listing(data).items() if not k.startswith(".retail.")} == before
    if prior:
        assert _summary_rows(data) == ["retail"]
    rerun = _run(["pipelines.data", "domain=retail", *FAST], out, data)
    assert ("cached" if prior else "built") in rerun.stdout
    assert _temporaries(data) == []
    assert sorted(p.name for p in data.iterdir()) == ["README.md", "retail"]
    assert read_domain(data / "retail").name == "retail"
    assert _summary_rows(data) == ["retail"]
