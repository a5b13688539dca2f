"""A trace per decision (camdf.runtime.tracing) in a real MLflow store: one span with the decision's attributes,
joined to a LangChain agent's own trace when MLflow's LangChain autolog is on; nothing when tracing is off."""

import mlflow
import pytest
from langchain_core.messages import HumanMessage

from camdf.adapters.langchain import CamdfToolSelector
from camdf.runtime import load_policy, tracing

from .conftest import CATALOG, LAM, QUERY
from .test_langchain import _agent, _model


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module (creating one costs seconds); each test reads the traces it adds."""
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("tracing")
    # First: clearing a URI an earlier test set also unsets MLFLOW_TRACKING_URI, so it goes before the setenv.
    mlflow.set_tracking_uri(None)
    mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{folder / 'mlflow.db'}")  # read from the environment
    mp.delenv("MLFLOW_EXPERIMENT_ID", raising=False)  # set by mlflow.set_experiment: restored by mp.undo()
    # An artifact folder of its own: by default MLflow writes trace artifacts to ./mlruns of the working folder.
    mlflow.set_experiment(experiment_id=mlflow.create_experiment("tracing", artifact_location=(folder / "a").as_uri()))
    yield set()
    tracing.enable(False)
    mlflow.set_tracking_uri(None)
    mp.undo()


def _new_traces(seen: set):
    """The traces logged since the last call."""
    new = [t for t in mlflow.search_traces(return_type="list", flush=True) if t.info.trace_id not in seen]
    seen.update(t.info.trace_id for t in new)
    return new


def test_one_select_gives_one_trace_with_the_decision(store, policy_dir, expected):
    policy = load_policy(str(policy_dir))
    policy.select(CATALOG, query=QUERY, lam=LAM)
    assert _new_traces(store) == []  # off by default
    tracing.enable()
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    traces = _new_traces(store)
    assert len(traces) == 1 and len(traces[0].data.spans) == 1
    span = traces[0].data.spans[0]
    a = span.attributes
    assert span.name == "camdf.select" and a["camdf.rule"] == "camdf" and a["camdf.lam"] == LAM
    assert a["camdf.dials"] == policy.dial_defaults()
    assert a["camdf.candidates"] == [t["name"] for t in CATALOG] and a["camdf.exposed"] == sel.exposed == expected
    assert a["camdf.cost"] == pytest.approx(len(expected))  # unknown tools cost 1 each
    assert a["camdf.policy_uri"] == str(policy_dir) and a["camdf.policy_version"] == "7"
    assert a["camdf.latency_ms"] > 0 and a["camdf.fail_open"] is False


def test_the_span_joins_the_harness_trace_and_records_a_failure(store, policy_dir, expected):
    tracing.enable()
    _new_traces(store)
    mlflow.langchain.autolog()
    try:
        _agent(_model(), CamdfToolSelector(str(policy_dir), lam=LAM)).invoke({"messages": [HumanMessage(QUERY)]})
    finally:
        mlflow.langchain.autolog(disable=True)
    (trace,) = _new_traces(store)
    spans = {s.span_id: s for s in trace.data.spans}
    (ours,) = [s for s in spans.values() if s.name == "camdf.select"]
    assert ours.parent_id in spans and spans[ours.parent_id].name != "camdf.select"  # a child of LangChain's
    assert ours.attributes["camdf.exposed"] == expected

    class Broken:
        method = "broken"

        def select(self, *args, **kwargs):
            raise RuntimeError("policy exploded")

    with pytest.warns(UserWarning):
        _agent(_model(), CamdfToolSelector(Broken())).invoke({"messages": [HumanMessage(QUERY)]})
    failed = [s for t in _new_traces(store) for s in t.data.spans if s.attributes.get("camdf.fail_open")]
    assert len(failed) == 1 and len(failed[0].attributes["camdf.exposed"]) == len(CATALOG)
    assert "policy exploded" in failed[0].attributes["camdf.error"]
