"""The default-policy stage as `make default-policy` runs it (fewer domains): the built-in ranker fitted on every
catalog and shipped as text, the policy fitted on crosscat scores (each domain ranked by the ranker fitted on
the other catalogs), the ranking across catalogs logged to the run and tabulated from the store; the same
inputs give the same files, byte for byte."""

import json
import shutil
from pathlib import Path

import mlflow
import pytest

from camdf.data.io import write_domain
from camdf.reporting.evidence import Evidence
from camdf.reporting.store import ranking_frame
from camdf.reporting.tables.ranking import ranking
from camdf.tracking.client import Tracker
from tests.unit.rankers.test_crosscat import vendor_domain

from .test_pipeline import _run

# The stage's own domains cut to retail (the others are A30's, built by make data); two vendor catalogs beside it.
ONLY_RETAIL = [f"~transfer.domains.{d}" for d in ("airline", "telecom", "bfcl_multi_turn", "stabletoolbench")]
CATALOGS = ["retail", "alpha", "beta"]


@pytest.fixture(scope="module")
def data(data_dir, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("catalogs") / "data"
    shutil.copytree(data_dir, root)
    for k, name in enumerate(CATALOGS[1:]):
        write_domain(vendor_domain(name, k), root / name)
        manifest = {"config": {"acquirable_kinds": ["read"], "never_acquirable": []}, "summary": {"domain": name}}
        (root / name / "manifest.json").write_text(json.dumps(manifest) + "\n")
    return root


def _stage(out: Path, data: Path):
    return _run(["pipelines.default_policy", *ONLY_RETAIL, f"scorer.params.catalogs=[{','.join(CATALOGS)}]",
                 "scorer.params.rounds=20"], out, data, timeout=900)


def test_the_stage_ships_the_ranker_and_logs_its_ranking_across_catalogs(data, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    proc = _stage(first, data)
    ranker = first / "rankers" / "crosscat"
    manifest = json.loads((ranker / "manifest.json").read_text())
    assert manifest["ranker"] == "crosscat" and sorted(manifest["catalogs"]) == sorted(CATALOGS)
    assert (ranker / "crosscat.txt").read_text().startswith("tree\n")
    policy = json.loads((first / "policies" / "default" / "manifest.json").read_text())
    assert policy["source"]["scorer"] == "crosscat", proc.stdout[-1000:]
    # The run holds the rows; the table reads them from the store.
    tracker = Tracker(f"sqlite:///{first}/mlflow.db", "camdf")
    rows = ranking_frame(tracker)
    assert sorted(set(rows["catalog"])) == sorted(CATALOGS)
    assert sorted(set(rows["ranker"])) == ["bm25", "crosscat", "lexical_hybrid"]
    assert ((rows["recall@5"] >= 0) & (rows["recall@5"] <= 1)).all()
    assert (rows[rows["ranker"] == "bm25"]["vs_bm25"] == 0).all()
    report = ranking(Evidence(ranking=rows), {})
    assert len(report.frame) == 9 and "of 3 catalogs" in report.note
    # Same data, config and seed: the same ranker and policy, byte for byte.
    _stage(second, data)
    for rel in ("rankers/crosscat/crosscat.txt", "policies/default/boosters/0.txt", "policies/default/policy.json"):
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel


def test_without_a_catalog_built_the_stage_refuses_in_one_line(data, tmp_path):
    proc = _run(["pipelines.default_policy", *ONLY_RETAIL, "scorer.params.catalogs=[retail,gamma]"], tmp_path / "o",
                data, check=False, timeout=600)
    assert proc.returncode != 0
    assert "scorer.params.catalogs: gamma not built under" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o" / "rankers").exists()
    mlflow.set_tracking_uri(None)
