"""A StopPolicy as data (camdf.runtime.policy_file): every shippable rule round-trips through JSON with the same
decisions, and malformed numbers are refused naming the field."""

import json

import numpy as np
import pytest

from camdf.runtime import StopPolicy
from camdf.runtime.policy import policy_methods
from camdf.runtime.policy_file import FORMAT, policy_from_numbers, policy_numbers, read_policy, write_policy

from ..core.test_theory import _family
from .test_runtime import _openai

# Every shippable card, and the lambda-conditioned form of each that has one.
CASES = [(m, None) for m in policy_methods()] + [("camdf", [0.05, 0.2, 0.5])]


def _requests(seed: int, count: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    vocab = ["a", "b", "c", "d", "x"]
    out = []
    for _ in range(count):
        n = int(rng.integers(1, 70))  # beyond SHORT_RANKING too
        names = list(rng.permutation(vocab[: min(n, 5)] + [f"new{j}" for j in range(n - min(n, 5))]))
        out.append({"tools": [_openai(m) for m in names], "scores": rng.normal(0.5, 0.3, n).tolist(),
                    "costs": rng.uniform(0.1, 7.0, n).tolist(), "lam": float(rng.choice([0.05, 0.2, 0.5]))})
    return out


@pytest.fixture(scope="module", params=CASES, ids=[f"{m}{'-lam_grid' if g else ''}" for m, g in CASES])
def fitted(request):
    method, grid = request.param
    return StopPolicy(method=method, lam=0.2, lam_grid=grid).fit(_family(60, True), costs={"x": 6.0})


def test_the_full_policy_round_trips_with_the_same_decisions(fitted, tmp_path):
    back = read_policy(write_policy(fitted, tmp_path / "policy.json"))
    assert type(back.rule_) is type(fitted.rule_) and back.get_params() == fitted.get_params()
    assert back.vocab_ == fitted.vocab_ and back.costs_ == fitted.costs_
    requests = _requests(7, 300)
    before = [s.depth for s in fitted.select_batch(requests)]
    assert [s.depth for s in back.select_batch(requests)] == before
    assert len(set(before)) > 1 or fitted.method != "camdf_lite"  # the requests tell rules' decisions apart
    # the one-request fast path and each dial the rule takes
    for r in requests[:60]:
        assert back.select_batch([r])[0].depth == fitted.select_batch([r])[0].depth
    for dial, value in {"alpha": 0.3}.items():
        if dial in fitted.door.dials:
            assert ([s.depth for s in back.select_batch(requests, **{dial: value})]
                    == [s.depth for s in fitted.select_batch(requests, **{dial: value})])
    # the membership model's probabilities, bit for bit
    inst, _, _ = fitted.instances(requests[:40])
    assert np.array_equal(back.membership_.predict_proba(inst), fitted.membership_.predict_proba(inst))


def test_the_numbers_are_plain_json(fitted):
    text = json.dumps(policy_numbers(fitted))
    assert json.loads(text)["format"] == FORMAT
    assert "pickle" not in text and "__reduce__" not in text


@pytest.fixture(scope="module")
def numbers():
    policy = StopPolicy(method="camdf", lam=0.2).fit(_family(40, True))
    return json.loads(json.dumps(policy_numbers(policy)))


def _edit(numbers, path, value):
    out = json.loads(json.dumps(numbers))
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


@pytest.mark.parametrize("path,value,phrase", [
    (("format",), 99, "format: expected a camdf policy of format"),
    (("params", "method"), "full", "method: expected one of"),
    (("params", "exec"), "x", "params: expected StopPolicy parameters"),
    (("rule", "booster"), "import os", "rule.booster: expected LightGBM's text model format"),
    (("rule", "booster"), "tree\nnot a model", "rule.booster: header line 'not a model'"),
    (("rule", "params", "device"), "gpu", "params: ['device'] are not parameters of CamDF"),
    (("membership", "coef"), [1.0, 2.0], "membership.coef: expected 5 + n_vocab"),
    (("vocab",), ["a"], "vocab: 1 tools, but the membership model has"),
    (("rule",), KeyError, "rule: missing from the policy's numbers"),
    (("costs",), [1, 2], "not the numbers of a camdf policy"),
])
def test_malformed_numbers_are_refused_naming_the_field(numbers, path, value, phrase):
    with pytest.raises(ValueError) as err:
        policy_from_numbers(_edit(numbers, path, value))
    assert phrase in str(err.value), err.value


def test_a_file_that_is_not_json_is_refused_naming_it(tmp_path):
    path = tmp_path / "policy.json"
    path.write_bytes(b"\x80\x04\x95")  # a pickle's first bytes
    with pytest.raises(ValueError, match=r"policy.json: not JSON .*a pickle is never loaded"):
        read_policy(path)
    path.write_text("[" * 100_000)
    with pytest.raises(ValueError, match="not JSON"):
        read_policy(path)
