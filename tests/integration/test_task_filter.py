"""The task filter of a domain config (``where``): applied by the data stage, counted in the report and the run."""

import json

import mlflow
import pytest

from camdf.data.filters import apply_where, check_where
from camdf.data.io import read_domain

from .test_pipeline import ROOT, _run

FOLDER = ROOT / "tests" / "fixtures" / "domains" / "valid_user"


def test_non_empty_filter_drops_the_empty_g_x_tasks_in_data_report_and_run(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    proc = _run(["pipelines.data", "domain=user_example", "+domain.where.required=non_empty"], out, data)
    assert "4 tasks (filter kept 4, removed 1)" in proc.stdout
    tasks = [json.loads(line) for line in (data / "user_example" / "tasks.jsonl").read_text().splitlines()]
    assert [t["id"] for t in tasks] == ["u-1", "u-2", "u-3", "u-5"] and all(t["required"] for t in tasks)
    report = (data / "user_example" / "report.md").read_text()
    assert "- task filter `where: {'required': 'non_empty'}`: kept 4, removed 1 (required 1)" in report
    _run(["pipelines.evaluate", "domain=user_example", "+domain.where.required=non_empty", "folds.n_folds=2",
          "folds.repeats=1", "method.names=[full,none,fixed_k]", "stats.n_resamples=200"], out, data)
    uri = f"sqlite:///{out}/mlflow.db"
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.search_runs([client.get_experiment_by_name("camdf").experiment_id])[0]
    assert run.data.metrics["cell/n_tasks"] == 4 and run.data.metrics["cell/n_tasks_filtered_out"] == 1
    assert run.data.params["domain.where.required"] == "non_empty"
    assert run.data.metrics["none/success"] == 0.0  # the empty-G_x task no longer counts as a free success


def test_a_bad_filter_is_refused_before_anything_is_written(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    proc = _run(["pipelines.data", "domain=user_example", "+domain.where.required=some"], out, data, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "domain.where.required: expected one of any, non_empty, got 'some'" in proc.stderr
    assert not (data / "user_example").exists()


@pytest.mark.parametrize(("where", "message"), [
    ({"nope": 1}, r"^domain\.where\.nope: unknown filter"),
    ({"split": "train"}, r"^domain\.where\.split: expected a non-empty list"),
    ({"meta": {"note": "x"}}, r"^domain\.where\.meta\.note: expected a non-empty list"),
    ([1], r"^domain\.where: expected a mapping"),
])
def test_check_where_names_the_key(where, message):
    with pytest.raises(ValueError, match=message):
        check_where(where)


def test_split_and_meta_filters_and_the_first_failed_filter_is_counted():
    domain = read_domain(FOLDER)
    kept, counts = apply_where(domain, {"split": ["train"], "meta": {"note": ["help-center only"]}})
    assert [t.id for t in kept.tasks] == ["u-2"]
    assert counts["removed_by"] == {"split": 3, "meta.note": 1} and counts["kept"] == 1
    with pytest.raises(ValueError, match="keeps none of the 5 tasks"):
        apply_where(domain, {"split": ["validation"]})
