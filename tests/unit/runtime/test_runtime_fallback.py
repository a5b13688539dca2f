"""A policy that knows the search fallback (issue 43, acceptance 3): it answers with the preloaded tools and the
deferred ones, and the served model (the logged pyfunc, loaded by MLflow) and `camdf select` say what the library says."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from camdf.policies import CARDS, make_policy
from camdf.runtime import StopPolicy
from camdf.runtime.policy_file import POLICY_ARTIFACT, POLICY_FILE, write_policy

from ..core.test_theory import _family
from .test_runtime import _openai
from .test_runtime_policy_file import _requests

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def policy():
    return StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 2}).fit(
        _family(60, True), costs={"x": 6.0})


def test_every_card_says_whether_its_rule_defers():
    assert {m for m, c in CARDS.items() if c.defers} == {"fallback_set"}
    assert all(make_policy(m).defers == c.defers for m, c in CARDS.items())


def test_a_fallback_policy_answers_with_preloaded_and_deferred_tools(policy):
    selections = policy.select_batch(_requests(3, 80))
    for s in selections:
        assert set(s.exposed) | set(s.deferred) == set(s.ranked) and not set(s.exposed) & set(s.deferred)
        out = s.to_json()
        assert out["deferred"] == s.deferred and out["exposed"] == s.exposed
    assert any(s.deferred for s in selections) and any(s.exposed for s in selections)
    # A dearer search preloads at least as much in total, and the dials move the decision.
    dear = policy.select_batch(_requests(3, 80), search_cost=500.0)
    assert sum(map(len, (s.exposed for s in dear))) > sum(map(len, (s.exposed for s in selections)))
    # A rule that does not defer says nothing of deferred tools.
    plain = StopPolicy(method="plugin_set", lam=0.2).fit(_family(60, True))
    assert "deferred" not in plain.select_batch(_requests(3, 1))[0].to_json()


def test_the_short_request_path_decides_as_the_vectorised_one(policy):
    for r in _requests(5, 40):
        one = policy.select_batch([r])[0]
        inst, order, _ = policy.instances([r])
        mask = policy.exposed(inst, r.get("lam"))[0]
        assert one.exposed == [inst.tools[0, j] for j in np.flatnonzero(mask)]


def test_served_model_and_camdf_select_agree_with_the_library(policy, tmp_path):
    import mlflow

    from camdf.runtime.publish import SERVED

    requests = [{k: v for k, v in r.items() if k != "lam"} for r in _requests(11, 12)]  # the model's columns
    library = [s.to_json() for s in policy.select_batch(requests)]
    assert any(s["deferred"] for s in library) and any(s["exposed"] for s in library)
    path = write_policy(policy, tmp_path / POLICY_FILE)
    folder = tmp_path / "model"
    mlflow.pyfunc.save_model(str(folder), python_model=str(SERVED), artifacts={POLICY_ARTIFACT: str(path)},
                             pip_requirements=[f"mlflow=={mlflow.__version__}"])
    served = mlflow.pyfunc.load_model(str(folder)).predict(pd.DataFrame(requests))
    assert served["exposed"].map(list).tolist() == [s["exposed"] for s in library]
    assert served["deferred"].map(list).tolist() == [s["deferred"] for s in library]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(requests[:3]))
    proc = subprocess.run([sys.executable, "-m", "camdf.cli", "select", "--policy", str(folder), "--input",
                           str(request), "--search_cost", "2"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert [(s["exposed"], s["deferred"]) for s in json.loads(proc.stdout)] == \
        [(s["exposed"], s["deferred"]) for s in library[:3]]
