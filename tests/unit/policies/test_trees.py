"""The numpy reader of LightGBM text models (camdf.policies.trees): LightGBM's raw scores to the last bit on the
boosters the project fits, and a one-line refusal of a hostile model text before LightGBM sees it."""

import re
import subprocess
import sys

import numpy as np
import pytest

from camdf.core.features import FEATURES
from camdf.core.membership import MembershipModel
from camdf.policies import StateBatch
from camdf.policies.boosting import booster_of, read_booster
from camdf.policies.camdf import CamDF
from camdf.policies.camdf_portable import PortableCamDF
from camdf.policies.tree_text import MAX_TREES
from camdf.policies.trees import read_forest

from ..core.test_features import _random_instances


def _fitted(seed: int, target: str = "classify", identity: bool = True) -> tuple[CamDF, np.ndarray]:
    """A CamDF rule fitted on a synthetic StateBatch, and its design matrix with NaN, zeros and odd ids put in."""
    inst = _random_instances(seed, n_tasks=120, max_n=20, vocab=24)
    p = MembershipModel().fit(inst, inst.member).predict_proba(inst)
    batch = StateBatch.across_lambdas(inst, p, [0.02, 0.1, 0.4], "exact")
    grid = ({"num_leaves": 15, "min_child_samples": 5, "n_estimators": 40},)
    rule = CamDF(features=list(FEATURES), tool_identity=identity, target=target, grid=grid, random_state=seed)
    rule.fit(batch)
    X = rule._matrix(batch)
    rng = np.random.default_rng(seed)
    odd = X.copy()
    odd[rng.random(X.shape) < 0.15] = np.nan
    odd[rng.random(X.shape) < 0.15] = 0.0
    odd[rng.random(X.shape) < 0.05] = 1e-40  # LightGBM reads |x| <= 1e-35f as 0
    if identity:
        odd[:, -1] = rng.choice([-1.0, 0.0, 1.0, 2.7, 5.0, 11.0, 40.0, 1e12, np.nan, -0.5], len(X))
    return rule, np.vstack([X, odd])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("target", ["classify", "regress"])
def test_raw_scores_are_lightgbms_to_the_last_bit(seed, target):
    rule, X = _fitted(seed, target)
    booster = booster_of(rule.model_)
    text = booster.model_to_string()
    forest = read_forest(text, "booster", rule.n_columns())
    want = booster.predict(X, raw_score=True)
    got = forest.raw_score(X)
    assert np.abs(got - want).max() <= 1e-12
    assert ((got >= 0) == (want >= 0)).all()
    assert forest.n_trees == booster.num_trees()


@pytest.mark.parametrize("target", ["classify", "regress", "regress_init"])
def test_fit_booster_is_lightgbms_estimator_bit_for_bit(target):
    """fit_booster skips the estimator's text round trip, nothing else: the model text (trees, leaves and the
    parameters section) equals the one LGBMClassifier / LGBMRegressor fits on the same states."""
    import lightgbm as lgb

    from camdf.core.payoff import at_depth
    from camdf.policies.boosting import BASE_PARAMS, fit_booster

    rule, _ = _fitted(7)
    inst = _random_instances(7, n_tasks=120, max_n=20, vocab=24)
    batch = StateBatch.across_lambdas(inst, MembershipModel().fit(inst, inst.member).predict_proba(inst),
                                      [0.02, 0.1, 0.4], "exact")
    X, valid, cat = rule._matrix(batch), batch.inst.valid, [rule.n_columns() - 1]
    params = {**BASE_PARAMS, "num_leaves": 7, "min_child_samples": 10, "random_state": 3}
    if target == "classify":
        y, w = batch.label[valid].astype(int), batch.weight[valid]
        want = lgb.LGBMClassifier(**params).fit(X, y, sample_weight=w, categorical_feature=cat).booster_
        got = fit_booster(params, "binary", X, y, weight=w, categorical_feature=cat)
    else:
        y = (batch.u[:, :-1] - at_depth(batch.u, batch.inst.n)[:, None])[valid]
        init = np.linspace(-0.2, 0.2, len(y)) if target == "regress_init" else None
        want = lgb.LGBMRegressor(**params).fit(X, y, init_score=init, categorical_feature=cat).booster_
        got = fit_booster(params, "regression", X, y, init_score=init, categorical_feature=cat)
    assert got.model_to_string() == want.model_to_string()
    np.testing.assert_array_equal(got.predict(X, raw_score=True), want.predict(X, raw_score=True))


def test_categorical_splits_and_missing_types_are_exercised():
    texts = [booster_of(_fitted(s)[0].model_).model_to_string() for s in (0, 1, 2, 3)]
    types = {int(d) for t in texts for line in t.splitlines() if line.startswith("decision_type=")
             for d in line.split("=")[1].split()}
    assert any(d & 1 for d in types), types  # a categorical split on the tool identity
    assert any(d & 1 == 0 for d in types)


def test_the_portable_rule_decides_as_the_fitted_one():
    rule, X = _fitted(5)
    portable = PortableCamDF.from_numbers(rule.to_numbers())
    assert (portable.stops(X) == rule._predict(rule.model_, X)).all()


# -- hostile texts ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text():
    return booster_of(_fitted(0)[0].model_).model_to_string()


def _tree(text: str, k: int, key: str, value: str) -> str:
    """``text`` with field ``key`` of tree ``k`` set to ``value`` (and tree_sizes kept right, as an attacker would)."""
    head, _, rest = text.partition(f"Tree={k}\n")
    block, sep, tail = rest.partition("\n\n")
    block = re.sub(rf"^{key}=.*$", f"{key}={value}", block, flags=re.M)
    out = head + f"Tree={k}\n" + block + sep + tail
    return _resize(out)


def _resize(text: str) -> str:
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("Tree=")] + [lines.index("end of trees")]
    sizes = [sum(len(line) + 1 for line in lines[a:b]) for a, b in zip(heads, heads[1:])]
    return re.sub(r"^tree_sizes=.*$", "tree_sizes=" + " ".join(map(str, sizes)), text, count=1, flags=re.M)


def _hostile(text: str) -> dict[str, str]:
    first = text.split("Tree=0\n")[1].split("\n\n")[0]
    left = re.search(r"^left_child=(.*)$", first, re.M).group(1).split()
    leaves = re.search(r"^leaf_value=(.*)$", first, re.M).group(1).split()
    features = re.search(r"^split_feature=(.*)$", first, re.M).group(1).split()
    tree = "Tree=0\n" + first + "\n\n\n"
    many = text.split("Tree=0\n")[0] + "".join(tree.replace("Tree=0", f"Tree={k}") for k in range(MAX_TREES + 1))
    return {
        "num_leaves": _tree(text, 0, "num_leaves", "2000000000"),
        "negative child": _tree(text, 0, "left_child", " ".join(["-99999"] + left[1:])),
        "child cycle": _tree(text, 0, "left_child", " ".join([left[0]] + ["0"] + left[2:])),
        "feature index": _tree(text, 0, "split_feature", " ".join(["999"] + features[1:])),
        "NaN leaf": _tree(text, 0, "leaf_value", " ".join(["nan"] + leaves[1:])),
        "huge leaf": _tree(text, 0, "leaf_value", " ".join(["1e999"] + leaves[1:])),
        "short array": _tree(text, 0, "threshold", "0.5"),
        "decision type": _tree(text, 0, "decision_type", " ".join(["12"] * len(features))),
        "many trees": _resize(many + "end of trees" + text.split("end of trees")[1]),
        "tree sizes": re.sub(r"^tree_sizes=(\d+)", lambda m: f"tree_sizes={int(m.group(1)) + 1}", text,
                             count=1, flags=re.M),
        "two classes": text.replace("num_class=1", "num_class=2", 1),
        "unknown key": _tree(text, 0, "shrinkage", "1\nlinear_coeff=1"),
    }


#: What each refusal names.
WHAT = {"num_leaves": "tree 0: num_leaves", "negative child": "tree 0: left_child", "child cycle": "left_child",
        "feature index": "tree 0: split_feature", "NaN leaf": "tree 0: leaf_value", "huge leaf": "tree 0: leaf_value",
        "short array": "tree 0: threshold: expected", "decision type": "tree 0: decision_type",
        "many trees": "trees, more than", "tree sizes": "tree_sizes[0]", "two classes": "num_class",
        "unknown key": "tree 0: line 'linear_coeff=1'"}


def test_hostile_texts_are_refused_in_one_line_before_lightgbm_sees_them(text, monkeypatch):
    import lightgbm as lgb

    def never(*args, **kwargs):
        raise AssertionError("LightGBM was handed a text the check refuses")

    monkeypatch.setattr(lgb, "Booster", never)
    for name, bad in _hostile(text).items():
        with pytest.raises(ValueError) as err:
            read_booster(bad, "rule.booster", 23)
        message = str(err.value)
        assert "\n" not in message and message.startswith("rule.booster: "), (name, message)
        assert WHAT[name] in message, (name, message)
        with pytest.raises(ValueError):
            read_forest(bad, "rule.booster", 23)


def test_the_check_reads_the_fitted_text_and_the_rules_columns(text):
    read_forest(text, "b", 23)
    with pytest.raises(ValueError, match=r"^b: max_feature_idx: expected 23 \(the rule's 24 columns\), got 22$"):
        read_forest(text, "b", 24)


def test_lightgbm_itself_aborts_on_the_num_leaves_text(text):
    """Why the check exists: the same text kills a process that hands it to LightGBM."""
    bad = _hostile(text)["num_leaves"]
    code = "import sys, lightgbm; lightgbm.Booster(model_str=sys.stdin.read())"
    proc = subprocess.run([sys.executable, "-c", code], input=bad, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0


def test_a_forest_without_missing_types_reads_values_as_numbers_with_or_without_nan():
    """A model fitted with ``use_missing=False`` (every split missing type None, as crosscat's) takes the plain
    path (x <= threshold) on a block without NaN and LightGBM's full decision on one with NaN: LightGBM's scores
    either way, zeros and near-zero values included."""
    import lightgbm as lgb

    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 6))
    X[rng.random(X.shape) < 0.2] = 0.0
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    booster = lgb.train({"objective": "binary", "use_missing": False, "num_leaves": 7, "verbose": -1,
                         "deterministic": True, "num_threads": 1}, lgb.Dataset(X, y), num_boost_round=30)
    forest = read_forest(booster.model_to_string(), "booster", 6)
    assert forest._plain
    odd = X.copy()
    odd[rng.random(X.shape) < 0.05] = 1e-40
    with_nan = odd.copy()
    with_nan[rng.random(X.shape) < 0.1] = np.nan
    for rows in (X, odd, with_nan):
        assert np.array_equal(forest.raw_score(rows), booster.predict(rows, raw_score=True))
