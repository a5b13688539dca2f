"""Cell claims on the tracking store (camdf.tracking): one winner per key, dead claims taken over."""

import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from camdf.tracking.leases import Claim, _proc_start
from camdf.tracking.client import EXPERIMENT_KIND, PROVENANCE, Tracker
from camdf.tracking.experiments import store_has_experiment
from camdf.tracking.probe import PROBE_PATH, TrackingUnreachable, check_server

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One SQLite store for the module (creating its tables takes seconds); each test has its own experiment."""
    folder = tmp_path_factory.mktemp("store")
    Tracker(f"sqlite:///{folder}/mlflow.db", "init", str(folder / "artifacts"))
    return folder


@pytest.fixture()
def exp(request) -> str:
    return request.node.name


def _tracker(store: Path, exp: str, **kw) -> Tracker:
    return Tracker(f"sqlite:///{store}/mlflow.db", exp, str(store / "artifacts"), claim_poll=0.1, **kw)


def _ids(runs) -> list[str]:
    return [r.info.run_id for r in runs]


def _finish(tracker: Tracker, claim, key: str, seconds: float = 0.0) -> str:
    with tracker.cell_run(key, key, {"p": "1"}, {"scorer": "test"}, claim=claim) as run:
        time.sleep(seconds)
    return run.info.run_id


def _foreign_claim(tracker: Tracker, key: str, ticket: str | None = "1"):
    """A RUNNING claim as another machine's worker leaves it (its pid means nothing here)."""
    tags = {"cell_key": key, "claim.token": "x", "claim.node": "elsewhere", "claim.pid": "1",
            "claim.heartbeat": f"{time.time():.3f}"}
    if ticket is not None:
        tags["claim.ticket"] = ticket
    return tracker.client.create_run(tracker.experiment_id, run_name="foreign", tags=tags)


def test_first_claim_wins_and_later_claims_reuse_its_finished_run(store, exp):
    t = _tracker(store, exp)
    claim = t.claim("k", "cell", {"domain": "retail"})
    assert claim.won and claim.run.info.status == "RUNNING"
    rid = _finish(t, claim, "k")
    again = t.claim("k", "cell", {})
    assert not again.won and again.run.info.run_id == rid
    assert _ids(t.runs()) == [rid]
    assert t.runs(status="RUNNING") == []
    assert t.finished("k").data.tags["domain"] == "retail"
    # Without a claim, cell_run behaves as before: its own run, FINISHED on success.
    with t.cell_run("k2", "cell", {"p": "1"}, {}) as run:
        pass
    assert t.finished("k2").info.run_id == run.info.run_id


def test_loser_waits_for_the_winner_and_reuses_its_run(store, exp):
    a, b = _tracker(store, exp), _tracker(store, exp)
    first = a.claim("k", "cell", {})
    assert first.won
    got = {}
    waiter = threading.Thread(target=lambda: got.update(claim=b.claim("k", "cell", {})))
    waiter.start()
    time.sleep(1.0)
    assert waiter.is_alive()  # blocked while the winner computes
    rid = _finish(a, first, "k")
    waiter.join(timeout=30)
    assert not got["claim"].won and got["claim"].run.info.run_id == rid
    assert _ids(a.runs(status=None)) == [rid]  # the loser's claim run is deleted


def test_claim_of_a_killed_process_is_taken_over_at_once(store, exp, tmp_path):
    uri = f"sqlite:///{store}/mlflow.db"
    code = ("import sys, time; from camdf.tracking.client import Tracker; "
            f"t = Tracker({uri!r}, {exp!r}, {str(store / 'artifacts')!r}); c = t.claim('k', 'cell', {{}}); "
            "print(c.run.info.run_id, flush=True); time.sleep(120)")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    dead = child.stdout.readline().strip()
    os.kill(child.pid, signal.SIGKILL)
    time.sleep(0.2)
    assert _proc_start(child.pid) is None  # a zombie (not yet reaped) counts as gone
    t = _tracker(store, exp, claim_timeout=300)
    start = time.time()
    claim = t.claim("k", "cell", {})
    assert claim.won and time.time() - start < 30  # not the 300 s heartbeat timeout
    old = t.client.get_run(dead)
    assert old.info.status == "KILLED" and old.data.tags["claim.taken_over_by"] == claim.run.info.run_id
    rid = _finish(t, claim, "k")
    assert _ids(t.runs()) == [rid]
    child.wait(timeout=30)


def test_silent_claim_from_another_machine_is_taken_over_after_the_timeout(store, exp):
    t = _tracker(store, exp)
    foreign = _foreign_claim(t, "k")
    start = time.time()
    claim = t.claim("k", "cell", {}, timeout=1.5)
    assert claim.won and time.time() - start >= 1.4  # waited for the heartbeat to go stale
    assert t.client.get_run(foreign.info.run_id).info.status == "KILLED"
    _finish(t, claim, "k")
    assert len(t.runs()) == 1


def test_claim_still_drawing_its_ticket_is_waited_for(store, exp):
    t = _tracker(store, exp)
    foreign = _foreign_claim(t, "k", ticket=None)  # created, no ticket yet
    fid = foreign.info.run_id

    def other_worker():
        time.sleep(0.7)
        t.client.set_tag(fid, "claim.ticket", "0")  # it drew the smaller ticket: it wins
        time.sleep(0.7)
        t.client.set_terminated(fid, status="FINISHED")

    worker = threading.Thread(target=other_worker)
    worker.start()
    claim = t.claim("k", "cell", {})
    worker.join()
    assert not claim.won and claim.run.info.run_id == fid
    assert _ids(t.runs()) == [fid]


def test_runs_of_other_kinds_with_the_key_are_not_cell_runs(store, exp):
    t = _tracker(store, exp)
    policy = t.client.create_run(t.experiment_id, tags={"cell_key": "k", "kind": "policy"})  # train stage
    claim = t.claim("k", "cell", {})
    assert claim.won  # neither reused nor waited for
    t.client.set_terminated(policy.info.run_id, status="FINISHED")
    rid = _finish(t, claim, "k")
    assert t.finished("k").info.run_id == rid


def test_run_taken_over_meanwhile_is_not_marked_finished(store, exp):
    t = _tracker(store, exp)
    claim = t.claim("k", "cell", {})
    with t.cell_run("k", "cell", {}, {}, claim=claim) as run:
        t.client.set_terminated(run.info.run_id, status="KILLED")  # another worker took it for dead
    assert t.client.get_run(run.info.run_id).info.status == "KILLED"
    assert t.finished("k") is None


def test_second_finished_run_of_a_key_is_not_written(store, exp):
    t = _tracker(store, exp)
    claim = t.claim("k", "cell", {})
    with t.cell_run("k", "cell", {}, {}, claim=claim) as run:
        with t.cell_run("k", "other", {}, {}) as other:  # finished elsewhere meanwhile
            pass
    mine = t.client.get_run(run.info.run_id)
    assert mine.info.status == "KILLED" and mine.data.tags["claim.duplicate_of"] == other.info.run_id
    assert _ids(t.runs()) == [other.info.run_id]


def test_failed_cell_ends_failed_and_is_claimed_again(store, exp):
    t = _tracker(store, exp)
    claim = t.claim("k", "cell", {})
    with pytest.raises(RuntimeError):
        with t.cell_run("k", "cell", {}, {}, claim=claim):
            raise RuntimeError("cell broke")
    assert t.client.get_run(claim.run.info.run_id).info.status == "FAILED"
    again = t.claim("k", "cell", {})
    assert again.won
    _finish(t, again, "k")
    with pytest.raises(ValueError, match="lost to run"):
        with t.cell_run("k", "cell", {}, {}, claim=Claim(again.run, won=False)):
            pass


WORKER = """
import json, sys, time
from pathlib import Path
uri, folder, n, keys = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")

def barrier(name):
    (folder / f"{name}.{sys.argv[5]}").touch()
    while len(list(folder.glob(f"{name}.*"))) < n:
        time.sleep(0.01)

from camdf.tracking.client import Tracker
barrier("imported")
t = Tracker(uri, sys.argv[6], str(folder / "artifacts"), claim_poll=0.05)  # all at once, a new experiment
barrier("opened")
out = {}
for key in keys:
    c = t.claim(key, key, {})
    if c.won:
        with t.cell_run(key, key, {"p": "1"}, {}, claim=c):
            time.sleep(0.2)
    out[key] = [c.run.info.run_id, c.won]
print(json.dumps(out))
"""


def test_concurrent_workers_compute_each_key_once(store, exp, tmp_path):
    n, keys = 3, [f"key{i}" for i in range(5)]
    uri = f"sqlite:///{store}/mlflow.db"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, uri, str(tmp_path), str(n), ",".join(keys), str(i), exp],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    t = _tracker(store, exp)
    finished = {r.data.tags["cell_key"]: r.info.run_id for r in t.runs()}
    assert len(t.runs()) == len(keys) and set(finished) == set(keys)  # one FINISHED run per key
    assert t.runs(status="RUNNING") == []
    for key in keys:
        assert {res[key][0] for res in results} == {finished[key]}  # every worker ends on that run
        assert sum(res[key][1] for res in results) == 1  # computed by exactly one worker


def test_proc_start_tells_live_processes_from_gone_ones():
    assert _proc_start(os.getpid())
    child = subprocess.Popen(["sleep", "30"])
    assert _proc_start(child.pid)
    child.kill()
    time.sleep(0.2)
    assert _proc_start(child.pid) is None  # a zombie
    child.wait()
    assert _proc_start(child.pid) is None


# -- the tracking server check ----------------------------------------------------------------------------
# tests/integration/test_mlflow_server.py has a real `mlflow server` fixture (`server`); these use a stdlib one.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: nothing listens there any more


@pytest.fixture()
def http_server():
    """Start a loopback HTTP server answering every GET with ``(status, content_type, body)``; yields a starter."""
    servers = []

    def start(status: int, content_type: str = "application/json", body: str = "{}"):
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                seen.append(self.path)
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # serve_forever polls for shutdown every poll_interval (0.5 s by default), which each teardown waited out.
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_unreachable_tracking_server_is_refused_at_once_naming_the_uri(monkeypatch):
    uri = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    start = time.perf_counter()
    with pytest.raises(TrackingUnreachable) as err:
        Tracker(uri, "camdf")
    print(f"refused {uri} in {time.perf_counter() - start:.3f} s")  # the target (well under 10 s) is a benchmark's
    message = str(err.value)
    assert message.startswith(f"tracking.uri: cannot reach the MLflow tracking server at {uri} (connection refused)")
    assert "unset MLFLOW_TRACKING_URI" in message and "\n" not in message
    assert err.value.uri == uri and isinstance(err.value, RuntimeError)
    again = pickle.loads(pickle.dumps(err.value))  # a worker process may raise it
    assert str(again) == message and again.uri == uri
    with pytest.raises(TrackingUnreachable, match="cannot reach"):  # the tables stage asks before making a Tracker
        store_has_experiment(uri, "camdf")
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    with pytest.raises(TrackingUnreachable, match="point tracking.uri at another store"):  # the URI came from config
        check_server(uri + "/")


def test_server_answering_the_probe_passes_the_check(http_server):
    uri, seen = http_server(200, body=json.dumps({"experiments": [{"experiment_id": "0", "name": "Default"}]}))
    check_server(uri)
    check_server(uri + "/")
    assert seen == [PROBE_PATH, PROBE_PATH]  # one GET per check
    for status in (401, 403):  # a server with authentication answered; the MLflow client sends the credentials
        check_server(http_server(status, "text/html", "<h1>login</h1>")[0])
    mlflow_error = json.dumps({"error_code": "INVALID_PARAMETER_VALUE", "message": "bad max_results"})
    check_server(http_server(400, body=mlflow_error)[0])  # MLflow answered; the client reports that itself


@pytest.mark.parametrize("status,content_type,body,expected", [
    (404, "text/html", "<h1>Not Found</h1>", "answers, but not as an MLflow tracking server (HTTP 404"),
    (200, "text/html", "<html>some other app</html>", "answers, but not as an MLflow tracking server (a page"),
    (503, "application/json", json.dumps({"error_code": "TEMPORARILY_UNAVAILABLE", "message": "db down"}),
     "answered HTTP 503 to GET /api/2.0/mlflow/experiments/search: db down"),
])
def test_server_that_is_not_mlflow_or_fails_is_refused(http_server, status, content_type, body, expected):
    uri, seen = http_server(status, content_type, body)
    with pytest.raises(TrackingUnreachable) as err:
        check_server(uri)
    assert uri in str(err.value) and expected in str(err.value)
    assert seen == [PROBE_PATH]


def test_server_that_never_answers_is_refused_after_the_timeout():
    with socket.socket() as listener:  # accepts connections (the kernel's backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(TrackingUnreachable, match=r"\(no answer within 0.5 s\)"):
            check_server(uri, timeout=0.5)


def test_local_stores_are_not_probed(tmp_path):
    for uri in (f"sqlite:///{tmp_path}/none.db", f"file://{tmp_path}/mlruns", str(tmp_path / "mlruns")):
        check_server(uri)  # no network, no error
    assert not list(tmp_path.iterdir())


def test_cell_runs_carry_the_numeric_environment(store, exp):
    from camdf.common.machine import numeric_environment

    expected = numeric_environment()
    t = _tracker(store, exp)
    claim = t.claim("k", "cell", {"scorer": "test"})
    _finish(t, claim, "k")
    with t.cell_run("k2", "cell", {}, {"domain": "retail"}) as run:  # without a claim
        pass
    for rid in (claim.run.info.run_id, run.info.run_id):
        tags = t.client.get_run(rid).data.tags
        assert not [k for k in tags if k.startswith(("numeric.", "claim."))]  # bookkeeping is not in the tags
        with tempfile.TemporaryDirectory() as tmp:
            provenance = json.loads(Path(t.client.download_artifacts(rid, PROVENANCE, tmp)).read_text())
        numeric = provenance["numeric"]
        assert {"numeric.blas.libraries", "numeric.numpy.cpu_features", "numeric.numpy.version",
                "numeric.python.version"} <= set(numeric)
        assert numeric == expected
    # The claimed run's claim tags moved into its provenance once it was FINISHED.
    with tempfile.TemporaryDirectory() as tmp:
        moved = json.loads(Path(t.client.download_artifacts(claim.run.info.run_id, PROVENANCE, tmp)).read_text())
    assert {"claim.token", "claim.ticket", "claim.heartbeat", "claim.pid"} <= set(moved["claim"])
    assert t.client.get_run(run.info.run_id).data.tags["domain"] == "retail"


def test_the_experiment_is_tagged_as_model_development(store, exp):
    t = _tracker(store, exp)
    assert t.client.get_experiment(t.experiment_id).tags[EXPERIMENT_KIND[0]] == "custom_model_development"
    t.client.set_experiment_tag(t.experiment_id, EXPERIMENT_KIND[0], "genai_development")
    _tracker(store, exp)  # opening it again restores the kind
    assert t.client.get_experiment(t.experiment_id).tags[EXPERIMENT_KIND[0]] == "custom_model_development"


def test_make_ui_opens_the_runs_view_and_creates_nothing(store, exp, tmp_path):
    from camdf.tracking.experiments import runs_view

    missing = tmp_path / "none.db"
    assert runs_view(f"sqlite:///{missing}", exp) == "" and not missing.exists()
    t = _tracker(store, exp)
    t.client.delete_experiment_tag(t.experiment_id, EXPERIMENT_KIND[0])  # a store older than the tag
    assert runs_view(t.uri, exp) == f"#/experiments/{t.experiment_id}/runs"
    assert t.client.get_experiment(t.experiment_id).tags[EXPERIMENT_KIND[0]] == EXPERIMENT_KIND[1]


# -- runs of other kinds: held with a heartbeat, ended by the next stage when stale --------------------------

def test_a_killed_stage_run_is_ended_by_the_next_stage_of_its_kind(store, exp, tmp_path):
    uri = f"sqlite:///{store}/mlflow.db"
    code = ("import time; from camdf.tracking.client import Tracker; "
            f"t = Tracker({uri!r}, {exp!r}, {str(store / 'artifacts')!r}); "
            "print(t.open_kind_run('policy', 'policy/x', {}), flush=True); time.sleep(120)")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    dead = child.stdout.readline().strip()
    t = _tracker(store, exp, claim_timeout=300)
    assert t.end_stale("policy") == []  # its process lives: not stale
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    with t.kind_run("tables", "tables", {}):  # another kind leaves it alone
        pass
    assert t.client.get_run(dead).info.status == "RUNNING"
    with t.kind_run("policy", "policy/y", {}) as run:
        assert run.info.status == "RUNNING"
    old = t.client.get_run(dead)
    assert old.info.status == "KILLED" and "stale.ended_by" in old.data.tags
    assert {r.info.status for r in t.runs("tags.kind = 'policy'", status=None)} == {"KILLED", "FINISHED"}


def test_a_silent_stage_run_from_another_machine_is_ended_after_the_timeout(store, exp):
    t = _tracker(store, exp)
    silent = t.client.create_run(t.experiment_id, run_name="sweep", tags={
        "kind": "sweep", "owner.node": "elsewhere", "owner.pid": "1", "owner.heartbeat": f"{time.time():.3f}"})
    legacy = t.client.create_run(t.experiment_id, run_name="sweep", tags={"kind": "sweep"})  # no owner tags
    assert t.end_stale("sweep", timeout=60) == []
    time.sleep(1.2)
    assert sorted(t.end_stale("sweep", timeout=1)) == sorted([silent.info.run_id, legacy.info.run_id])


def test_a_held_stage_run_keeps_its_heartbeat_fresh(store, exp):
    t = _tracker(store, exp, claim_timeout=2.5)  # a beat every 0.5 s
    rid = t.open_kind_run("policy", "policy/x", {})
    time.sleep(3.0)
    assert t.end_stale("policy") == [] and t.client.get_run(rid).info.status == "RUNNING"
    t.close_kind_run(rid)
    assert t.client.get_run(rid).info.status == "FINISHED"


def test_ctrl_c_in_a_stage_run_ends_it_killed(store, exp):
    t = _tracker(store, exp)
    with pytest.raises(KeyboardInterrupt):
        with t.kind_run("policy", "policy/x", {}) as run:
            raise KeyboardInterrupt
    assert t.client.get_run(run.info.run_id).info.status == "KILLED"


def test_ctrl_c_while_claiming_ends_the_claim_run(store, exp, monkeypatch):
    t = _tracker(store, exp)
    created = []
    make = t.client.create_run

    def create(*args, **kwargs):
        created.append(make(*args, **kwargs))
        return created[-1]

    set_tag = t.client.set_tag

    def interrupted(run_id, key, value):
        if key == "claim.ticket":  # Ctrl-C as the claim run, just created, draws its ticket
            raise KeyboardInterrupt
        return set_tag(run_id, key, value)

    monkeypatch.setattr(t.client, "create_run", create)
    monkeypatch.setattr(t.client, "set_tag", interrupted)
    with pytest.raises(KeyboardInterrupt):
        t.claim("k", "cell", {})
    assert len(created) == 1
    assert t.client.get_run(created[0].info.run_id).info.status == "KILLED"
    assert t.runs(status="RUNNING") == []


def test_a_sweep_callback_holding_its_parent_run_pickles_for_a_launcher_worker(store, exp):
    """joblib's launcher pickles the callbacks with every job: the parent run's heartbeat (a thread) must not go."""
    import pickle

    from camdf.pipeline.sweep_run import SweepRun

    t = _tracker(store, exp)
    callback = SweepRun()
    callback.tracker, callback.run_id = t, t.open_kind_run("sweep", "sweep x", {})
    with pytest.raises(TypeError):  # the live tracker itself holds the heartbeat's lock
        pickle.dumps(t)
    copy = pickle.loads(pickle.dumps(callback))
    assert copy.tracker is None and copy.run_id is None and copy.progress is None
    assert callback.tracker is t and callback.run_id  # the parent keeps its live state
    t.close_kind_run(callback.run_id)


def test_a_cells_headline_is_logged_first(store, exp):
    """MLflow's Compare view opens on the first metric the store returns, in the order they were logged: the
    headline, not `best_prefix/diff_vs_ref` (alphabetically first)."""
    import sqlite3

    from camdf.tracking.client import HEADLINE

    tracker = _tracker(store, exp)
    with tracker.kind_run("tables", "order", {}) as run:
        tracker.log_metrics(run.info.run_id, {"best_prefix/diff_vs_ref": 0.1, f"{HEADLINE}camdf_payoff": 0.2,
                                              "camdf/payoff_mean": 0.3, f"{HEADLINE}best_rule_payoff": 0.4})
    with sqlite3.connect(store / "mlflow.db") as db:
        keys = [k for (k,) in db.execute("SELECT key FROM metrics WHERE run_uuid = ? ORDER BY rowid",
                                         (run.info.run_id,))]
    assert keys == [f"{HEADLINE}best_rule_payoff", f"{HEADLINE}camdf_payoff", "best_prefix/diff_vs_ref",
                    "camdf/payoff_mean"]


def test_a_series_is_logged_as_one_metric_history_by_step(store, exp):
    """A sweep's lambda curves (camdf.reporting.sweep_report.lambda_curves) in a real store: one history per name,
    its points by step, and a run's last-value metrics beside them."""
    tracker = _tracker(store, exp)
    run = tracker.client.create_run(tracker.experiment_id, run_name="parent")
    rid = run.info.run_id
    tracker.log_metrics(rid, {"sweep/n_cells": 3})
    tracker.log_series(rid, {"Sweep/cost.d 1.0/camdf": [(40, 0.5), (120, 0.4), (300, 0.1)],
                             "Sweep/cost.d 1.0/full": [(40, 0.45), (120, 0.2), (300, -0.3)]})
    history = tracker.client.get_metric_history(rid, "Sweep/cost.d 1.0/camdf")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [(40, 0.5), (120, 0.4), (300, 0.1)]
    got = tracker.client.get_run(rid).data.metrics
    assert got["Sweep/cost.d 1.0/full"] == -0.3 and got["sweep/n_cells"] == 3
