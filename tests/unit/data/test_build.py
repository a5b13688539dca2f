"""The data stage's content-keyed cache and the Hydra entry point."""

import shutil
import subprocess
import sys

from camdf.common.fingerprint import code_version
from camdf.data import read_domain
from camdf.pipeline.data_stage import build_domain, read_manifest

CONFIG = {"name": "valid_user", "acquirable_kinds": ["read", "generic"]}


def _build(fixture, out, **kw):
    calls = []

    def convert():
        calls.append(1)
        return read_domain(fixture)

    result = build_domain(convert, out, config=kw.pop("config", CONFIG), inputs=[str(fixture)], **kw)
    return result, len(calls)


def test_second_build_is_cached_and_a_config_change_rebuilds(fixture_domains, tmp_path):
    out = tmp_path / "valid_user"
    first, n1 = _build(fixture_domains / "valid_user", out)
    second, n2 = _build(fixture_domains / "valid_user", out)
    assert (first.cached, n1) == (False, 1)
    assert (second.cached, n2) == (True, 0)
    assert second.key == first.key == read_manifest(out)["key"]
    third, n3 = _build(fixture_domains / "valid_user", out, config={**CONFIG, "acquirable_kinds": ["read"]})
    assert (third.cached, n3) == (False, 1)
    assert {"catalog.json", "tasks.jsonl", "report.md", "manifest.json"} <= {p.name for p in out.iterdir()}


def test_input_bytes_and_package_versions_enter_the_key(fixture_domains, tmp_path, monkeypatch):
    src = tmp_path / "src"
    shutil.copytree(fixture_domains / "valid_user", src)
    out = tmp_path / "out"
    first, _ = _build(src, out)
    with (src / "tasks.jsonl").open("a") as fh:
        fh.write('{"id": "u-6", "text": "one more", "required": []}\n')
    second, n = _build(src, out)
    assert (second.cached, n) == (False, 1) and second.key != first.key
    assert second.summary["n_tasks"] == 6
    # The same inputs under another installed version of a package must rebuild.
    import camdf.pipeline.data_stage as build

    third, _ = _build(src, out, packages=["numpy"])
    monkeypatch.setattr(build, "package_versions", lambda names: {n: "0.0.0-other" for n in names})
    fourth, n4 = _build(src, out, packages=["numpy"])
    assert (fourth.cached, n4) == (False, 1) and fourth.key != third.key


def test_code_version_follows_source_bytes(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "conv.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = code_version("fakepkg")
    (pkg / "conv.py").write_text("X = 2\n")
    assert code_version("fakepkg") != before


def test_data_stage_entry_point_builds_user_domain(root, tmp_path):
    cmd = [sys.executable, "-m", "pipelines.data", "domain=user_example", f"paths.data_dir={tmp_path}",
           f"paths.output_dir={tmp_path}/outputs"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "user_example: built 5 tasks" in proc.stdout
    again = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert "user_example: cached 5 tasks" in again.stdout
    dom = read_domain(tmp_path / "user_example")
    assert len(dom.tasks) == 5
    assert "mean |G_x|: 1.400" in (tmp_path / "user_example" / "report.md").read_text()
