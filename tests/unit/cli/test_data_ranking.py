"""`camdf data ranking`: each built catalog ranked by the cross-catalog ranker fitted on the others, beside bm25;
a folder with too few catalogs or an unknown one is refused in one line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from camdf.data.io import write_domain
from tests.unit.rankers.test_crosscat import vendor_domain

ROOT = Path(__file__).resolve().parents[3]


def _built(data: Path, name: str, seed: int) -> None:
    folder = data / name
    write_domain(vendor_domain(name, seed), folder)
    manifest = {"config": {"acquirable_kinds": ["read"], "never_acquirable": []}, "summary": {"domain": name}}
    (folder / "manifest.json").write_text(json.dumps(manifest) + "\n")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "camdf.cli", "data", "ranking", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    for k, name in enumerate(("alpha", "beta", "gamma")):
        _built(root, name, k)
    return root


def test_every_catalog_gets_its_three_rankers(data):
    proc = _run(str(data))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert [(r[0], r[3]) for r in rows] == [(c, k) for c in ("alpha", "beta", "gamma")
                                            for k in ("bm25", "lexical_hybrid", "crosscat")]
    for r in rows:
        assert all(0.0 <= float(v) <= 1.0 for v in r[4:8])
        assert (r[8] == "") == (r[3] == "bm25")  # every ranker but bm25 carries its difference and interval


def test_too_few_catalogs_and_unknown_names_are_refused(data, tmp_path):
    one = _run(str(data), "--domains", "alpha")
    assert one.returncode == 2 and "expected at least two built catalogs" in one.stderr and not one.stdout
    unknown = _run(str(data), "--domains", "alpha,nowhere")
    assert unknown.returncode == 2 and "nowhere not built" in unknown.stderr
    empty = _run(str(tmp_path))
    assert empty.returncode == 2 and "found 0" in empty.stderr
