"""Distractors: real tool definitions from other domains, acquirable, never required."""

import subprocess
import sys

import pytest

from camdf.data import read_domain, write_domain
from camdf.integrations.bfcl.convert import convert_multi_turn
from camdf.data.distractors import SEPARATOR, with_distractors
from camdf.integrations.tau2.convert import convert_customer_service, convert_telecom
from camdf.core.folds import assign_folds
from camdf.rankers import ranking_quality, score_domain
from camdf.rankers.problem import VIEW, evaluation_view

SOURCES = ["airline", "telecom", "bfcl_multi_turn"]
KINDS = ("read", "generic")
NEVER = ("transfer_to_human_agents",)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    for name, dom in {
        "retail": convert_customer_service("retail"),
        "airline": convert_customer_service("airline"),
        "telecom": convert_telecom(),
        "bfcl_multi_turn": convert_multi_turn(),
    }.items():
        write_domain(dom, folder / name, validate=False)
    return folder


@pytest.fixture(scope="module")
def retail_d100(data):
    return with_distractors("retail", 100, 0, data, SOURCES, KINDS, NEVER)


def test_hundred_real_acquirable_distractors_that_no_task_requires(data, retail_d100):
    base = read_domain(data / "retail", KINDS, NEVER)
    added = [t for t in retail_d100.tools if SEPARATOR in t.name]
    assert len(added) == 100 and len(retail_d100.acquirable) == len(base.acquirable) + 100
    assert len({t.name for t in retail_d100.tools}) == len(retail_d100.tools)
    assert all(retail_d100.is_acquirable(t) for t in added)
    assert not any(t.name.endswith("transfer_to_human_agents") for t in added)
    names = {t.name for t in added}
    for task in retail_d100.tasks:
        assert not names & set(task.required)
        assert not any(names & set(alt) for alt in task.alternatives)
    assert [t.required for t in retail_d100.tasks] == [t.required for t in base.tasks]
    # Real definitions: each distractor is a source tool under its prefixed name.
    sources = {s: read_domain(data / s, ("read", "write", "generic")).tool_by_name for s in SOURCES}
    for tool in added:
        source, name = tool.name.split(SEPARATOR, 1)
        assert sources[source][name].description == tool.description
        assert sources[source][name].parameters == tool.parameters
    # The base tools keep their relative order; distractors are interleaved, not appended.
    assert [t.name for t in retail_d100.tools if SEPARATOR not in t.name] == [t.name for t in base.tools]
    assert SEPARATOR in retail_d100.tools[0].name or SEPARATOR in retail_d100.tools[5].name


def test_seeded_and_validated(data, retail_d100, tmp_path):
    again = with_distractors("retail", 100, 0, data, SOURCES, KINDS, NEVER)
    assert [t.name for t in again.tools] == [t.name for t in retail_d100.tools]
    other = with_distractors("retail", 100, 1, data, SOURCES, KINDS, NEVER)
    assert [t.name for t in other.tools] != [t.name for t in retail_d100.tools]
    written = read_domain(write_domain(retail_d100, tmp_path / "retail_d100"), KINDS, NEVER)
    assert written.tools == retail_d100.tools and written.tasks == retail_d100.tasks
    with pytest.raises(ValueError, match="offer only"):
        with_distractors("retail", 10_000, 0, data, SOURCES, KINDS, NEVER)
    with pytest.raises(ValueError, match="must not include the base"):
        with_distractors("retail", 1, 0, data, ["retail"], KINDS, NEVER)


def test_explicit_candidate_lists_get_the_distractors(data, fixture_domains, tmp_path):
    write_domain(read_domain(fixture_domains / "valid_user"), tmp_path / "valid_user")
    (tmp_path / "airline").symlink_to(data / "airline")
    dom = with_distractors("valid_user", 3, 0, tmp_path, ["airline"], KINDS)
    added = [t.name for t in dom.tools if SEPARATOR in t.name]
    u5 = next(t for t in dom.tasks if t.id == "u-5")
    assert dom.candidates_of(u5) == [n for n in dom.acquirable if n in {"lookup_account", "search_help_center", *added}]
    assert all(dom.tool_by_name[n].kind in KINDS for n in added)  # write tools become generic


def test_retail_d100_scores_and_reports_like_any_domain(retail_d100):
    folds = assign_folds([t.id for t in retail_d100.tasks], n_folds=5)
    for scorer in ("bm25", "supervised", "prior"):
        scored = score_domain(retail_d100, scorer, folds)
        views = scored[VIEW].nunique() if VIEW in scored.columns else 1  # learned scorers: one view per outer fold
        assert len(scored) == len(retail_d100.tasks) * 107 * views
        frame = evaluation_view(scored)
        assert len(frame) == len(retail_d100.tasks) * 107
        q = ranking_quality(frame, retail_d100)
        assert q["mean_candidates"] == 107 and 0 <= q["mrr"] <= 1


def test_data_stage_builds_retail_d100(root, data, tmp_path):
    cmd = [sys.executable, "-m", "pipelines.data", "domain=retail_d100", f"paths.data_dir={data}",
           f"paths.output_dir={tmp_path}/outputs", "hydra/job_logging=none", "hydra/hydra_logging=none"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "retail_d100: built 114 tasks, 107 acquirable tools" in proc.stdout
    again = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert "retail_d100: cached" in again.stdout
