"""A sweep's record (its parent run's ``cell.<job>`` lines) is merged by concurrent sweeps, never overwritten."""

from camdf.pipeline.sweep_run import ENV, SWEEP, _cells, record_job
from camdf.tracking.client import Tracker


def test_a_logged_cell_is_never_set_back_to_running_by_a_concurrent_sweep(tmp_path, monkeypatch):
    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "camdf")
    parent = tracker.client.create_run(tracker.experiment_id, tags={"kind": SWEEP}).info.run_id
    monkeypatch.setenv(ENV, parent)
    record_job(tracker, 0, "running cell-a")  # sweep 1 starts job 0
    record_job(tracker, 0, "logged run-1")  # and logs it
    record_job(tracker, 0, "running cell-a")  # sweep 2, same jobs, starts job 0 later
    record_job(tracker, 1, "running cell-b")
    assert _cells(tracker.client.get_run(parent).data.tags) == {0: "logged run-1", 1: "running cell-b"}
    record_job(tracker, 0, "reused run-1")  # sweep 2 finds the cell done: a done line may replace a done line
    assert _cells(tracker.client.get_run(parent).data.tags)[0] == "reused run-1"


def test_a_sweep_past_the_job_limit_is_refused_before_it_is_built(monkeypatch):
    import pytest

    from camdf.pipeline.sweeps import expand

    big = ["cost.lam=" + ",".join(f"0.{i:03d}" for i in range(100)), "cost.d=" + ",".join(str(i) for i in range(100)),
           "seed=" + ",".join(str(i) for i in range(10 ** 4))]  # 10^8 jobs: never materialised
    with pytest.raises(ValueError, match="100000000 jobs, more than the limit of 5000"):
        expand(big)
    monkeypatch.setenv("CAMDF_MAX_JOBS", "20000")
    assert len(expand(big[:2])) == 10_000
