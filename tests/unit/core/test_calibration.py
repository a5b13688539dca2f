"""Per-tool calibration of membership probabilities and the reliability table, on synthetic miscalibrated data."""

import numpy as np
import pytest

from camdf.core.calibration import ToolCalibrator, cross_calibrate, fit_platt_groups
from camdf.core.reliability import ece_by_group, reliability_table

from .reference import fit_platt_groups_ref


def _data(rng, T, N=8, V=30):
    """Tools with their own distortion: p = sigmoid(a_t logit(pi) + b_t) reported for the true pi."""
    ids = np.stack([rng.choice(V, N, replace=False) for _ in range(T)])
    pi = rng.beta(0.6, 1.4, (T, N))
    member = rng.random((T, N)) < pi
    a = rng.uniform(0.4, 2.5, V)
    b = rng.normal(0.0, 1.2, V)
    logit = np.log(pi) - np.log1p(-pi)
    p = 1.0 / (1.0 + np.exp(-(a[ids] * logit + b[ids])))
    valid = np.ones((T, N), dtype=bool)
    valid[:, -1] = rng.random(T) < 0.5  # ragged lists
    return p, member, ids, valid


def test_reliability_table_by_hand():
    p = np.array([0.05, 0.15, 0.15, 0.95])
    y = np.array([0, 1, 0, 1])
    # per group: group 0 holds the two 0.15s (ECE 0.35), group 1 the rest (|0 - 0.05| / 2 + |1 - 0.95| / 2)
    assert ece_by_group(p, y, np.array([1, 0, 0, 1])) == pytest.approx(0.5 * 0.35 + 0.5 * 0.05)
    table, ece = reliability_table(p, y, n_bins=10)
    assert table["count"].tolist() == [1, 2, 1]
    np.testing.assert_allclose(table["freq"], [0.0, 0.5, 1.0])
    # |0 - 0.05| * 1/4 + |0.5 - 0.15| * 2/4 + |1 - 0.95| * 1/4
    assert ece == pytest.approx(0.05 / 4 + 0.35 / 2 + 0.05 / 4)
    _, ece_q = reliability_table(p, y, n_bins=2, strategy="quantile")
    assert 0 <= ece_q <= 1
    with pytest.raises(ValueError, match="strategy"):
        reliability_table(p, y, strategy="log")


def test_platt_groups_recovers_known_maps():
    rng = np.random.default_rng(0)
    m = 40_000
    groups = rng.integers(0, 2, m)
    z = rng.normal(0, 1.5, m)
    truth = np.array([[2.0, -1.0], [0.5, 0.7]])
    y = rng.random(m) < 1 / (1 + np.exp(-(truth[groups, 0] * z + truth[groups, 1])))
    theta = fit_platt_groups(z, y, groups, 3, np.array([1.0, 0.0]), 1e-3)
    np.testing.assert_allclose(theta[:2], truth, atol=0.08)
    np.testing.assert_allclose(theta[2], [1.0, 0.0])  # no observations: the prior


def test_per_tool_calibration_lowers_ece_below_raw_and_global(capsys):
    rng = np.random.default_rng(1)
    p, member, ids, valid = _data(rng, 1200)
    tr, te = slice(0, 800), slice(800, None)
    cal = ToolCalibrator(shrinkage=5.0).fit(p[tr], member[tr], ids[tr], valid[tr])
    glob = ToolCalibrator(shrinkage=1e9).fit(p[tr], member[tr], ids[tr], valid[tr])  # global map alone
    y, tools = member[te][valid[te]], ids[te][valid[te]]
    raw = p[te][valid[te]]
    q_global = glob.predict(p[te], ids[te], valid[te])[valid[te]]
    q_tool = cal.predict(p[te], ids[te], valid[te])[valid[te]]
    ece = {k: reliability_table(q, y)[1] for k, q in (("raw", raw), ("global", q_global), ("tool", q_tool))}
    per_tool = {k: ece_by_group(q, y, tools) for k, q in (("raw", raw), ("global", q_global), ("tool", q_tool))}
    with capsys.disabled():
        print(f"\nheld-out ECE raw / global Platt / per tool: {ece['raw']:.4f} / {ece['global']:.4f} / "
              f"{ece['tool']:.4f}; per-tool ECE {per_tool['raw']:.4f} / {per_tool['global']:.4f} / {per_tool['tool']:.4f}")
    # on average both maps fix the calibration; within tools only the per-tool map does
    assert ece["tool"] < 0.5 * ece["raw"] and ece["global"] < 0.5 * ece["raw"]
    assert per_tool["tool"] < 0.75 * per_tool["global"] < per_tool["raw"]
    ece_raw = ece["raw"]
    out = cross_calibrate(p, member, ids, valid, n_folds=4, random_state=0)
    assert out.shape == p.shape and (out[~valid] == 0).all()
    assert reliability_table(out[valid], member[valid])[1] < ece_raw


def test_rare_and_unseen_tools_fall_back_to_the_global_map():
    rng = np.random.default_rng(2)
    p, member, ids, valid = _data(rng, 400)
    ids = ids.copy()
    ids[0, 0] = 99  # seen once
    cal = ToolCalibrator(shrinkage=20.0).fit(p, member, ids, valid)
    assert cal.counts_[99] == 1
    np.testing.assert_allclose(cal.coef_[99], cal.global_, atol=0.06)  # one observation barely moves it
    frequent = np.argmax(cal.counts_)
    assert np.abs(cal.coef_[frequent] - cal.global_).max() > 0.1  # a frequent tool gets its own map
    q = np.array([[0.2, 0.7]])
    unseen = cal.predict(q, np.array([[-1, 500]]))
    z = np.log(q) - np.log1p(-q)
    np.testing.assert_allclose(unseen, 1 / (1 + np.exp(-(cal.global_[0] * z + cal.global_[1]))))
    with pytest.raises(AttributeError, match="fit"):
        ToolCalibrator().predict(q, np.array([[0, 1]]))


def _informative(rng, T=400, V=6, N=5):
    """A synthetic ranker over V tools: tool 0's score is perfectly informative (+1 +- 0.2 when the tool is in
    G_x, -1 +- 0.2 otherwise), the other tools' scores are weak (member shift 0.3 on unit noise)."""
    ids = np.stack([rng.choice(V, N, replace=False) for _ in range(T)])
    member = rng.random((T, N)) < np.where(ids == 0, 0.4, 0.3)
    noise = rng.normal(0.0, 1.0, (T, N))
    scores = np.where(ids == 0, np.where(member, 1.0, -1.0) + 0.2 * rng.uniform(-1, 1, (T, N)),
                      0.3 * member + noise)
    order = np.argsort(-scores, axis=1, kind="stable")  # ranked lists, as Instances hold them
    take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
    return take(scores), take(member), take(ids), np.ones((T, N), dtype=bool)


def test_score_calibration_follows_a_perfectly_informative_tool():
    """Per-tool Platt of the ranker's own score: the informative tool's probabilities go to 0 and 1 with it
    (ECE near 0 on held-out tasks), where one map shared by every tool cannot follow it."""
    from camdf.core.reliability import calibration_rows
    from camdf.core.score_calibration import ScoreCalibrator

    scores, member, ids, valid = _informative(np.random.default_rng(5))
    fit, held = slice(0, 200), slice(200, None)
    cal = ScoreCalibrator("raw").fit(scores[fit], member[fit], ids[fit], valid[fit])
    p = cal.predict(scores[held], ids[held], valid[held])
    tool0 = ids[held] == 0
    assert p[tool0 & member[held]].min() > 0.95 and p[tool0 & ~member[held]].max() < 0.05
    rows = calibration_rows(p, member[held], ids[held], valid[held]).set_index("tool")
    assert rows.loc["0", "ECE"] < 0.03
    assert rows.loc["per-tool mean", "ECE"] < 0.08
    shared = ScoreCalibrator("raw", precision=1e6).fit(scores[fit], member[fit], ids[fit], valid[fit])  # the global map
    p_shared = shared.predict(scores[held], ids[held], valid[held])
    assert reliability_table(p_shared[tool0], member[held][tool0], 5)[1] > 0.1
    # The portable one-task path gives the same probabilities, and the numbers round-trip.
    again = ScoreCalibrator.from_numbers(cal.to_numbers())
    np.testing.assert_array_equal(again.predict(scores[held], ids[held], valid[held]), p)
    from camdf.core.score_calibration import score_calibrate_task
    row = score_calibrate_task(cal.to_numbers(), scores[200].tolist(), ids[200].tolist())
    np.testing.assert_allclose(row, p[0], atol=1e-8)


def test_score_calibrator_refuses_bad_settings_and_unseen_tools_get_the_global_map():
    from camdf.core.score_calibration import ScoreCalibrator

    scores, member, ids, valid = _informative(np.random.default_rng(6), T=60)
    with pytest.raises(ValueError, match="feature"):
        ScoreCalibrator("logit").fit(scores, member, ids, valid)
    with pytest.raises(ValueError, match="precision"):
        ScoreCalibrator(precision=0.0).fit(scores, member, ids, valid)
    cal = ScoreCalibrator("normalised").fit(scores, member, ids, valid)
    unseen = cal.predict(scores[:1], np.full((1, ids.shape[1]), -1), valid[:1])
    x = (scores[0] - scores[0].min()) / (scores[0].max() - scores[0].min())
    np.testing.assert_allclose(unseen[0], 1 / (1 + np.exp(-(cal.global_[0] * x + cal.global_[1]))), atol=1e-8)
    with pytest.raises(ValueError, match="feature"):
        ScoreCalibrator.from_numbers({**cal.to_numbers(), "feature": "other"})


def test_newton_logistic_matches_scikit_learns_objective():
    from sklearn.linear_model import LogisticRegression

    from camdf.core.vector_calibration import fit_logistic_l2

    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 5))
    y = rng.random(150) < 1 / (1 + np.exp(-(X @ np.array([2.0, -1.0, 0.0, 0.5, 3.0]) + 0.3)))
    w, b = fit_logistic_l2(X, y, C=1.0)
    ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-5)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-5)
    sep = X[:, 0] > 0  # separable: the penalty keeps the weights finite
    w, _ = fit_logistic_l2(X, sep, C=1.0)
    assert np.isfinite(w).all() and w[0] > 1
@pytest.mark.parametrize("max_iter", [3, 100])
def test_platt_groups_equals_the_plain_newton_loop_bit_for_bit(max_iter):
    # Groups of very different sizes and separations converge at different iterations (one class alone,
    # near-separable, noisy, empty), which is where setting converged groups aside could drift.
    rng = np.random.default_rng(3)
    V = 300
    groups = np.concatenate([rng.integers(0, V, 6000), np.full(200, 7), np.full(50, 11)])
    z = rng.normal(0, 2.5, len(groups))
    a, b = rng.uniform(0.2, 3.0, V), rng.normal(0, 1.5, V)
    y = rng.random(len(groups)) < 1 / (1 + np.exp(-(a[groups] * z + b[groups])))
    y[groups == 7] = z[groups == 7] > 0   # separable
    y[groups == 11] = True                # one class
    for precision, prior in ((10.0, np.array([1.0, 0.0])), (0.5, rng.normal(1, 0.3, (V, 2))), (1e-3, [1.0, 0.0])):
        got = fit_platt_groups(z, y, groups, V + 5, np.broadcast_to(prior, (V, 2))[0] if np.ndim(prior) == 1
                               else np.vstack([prior, np.ones((5, 2))]), precision, max_iter=max_iter)
        ref = fit_platt_groups_ref(z, y, groups, V + 5, np.broadcast_to(prior, (V, 2))[0] if np.ndim(prior) == 1
                                   else np.vstack([prior, np.ones((5, 2))]), precision, max_iter=max_iter)
        np.testing.assert_array_equal(got.view(np.int64), ref.view(np.int64))


def test_calibration_rows_agree_with_the_reliability_table_tool_by_tool():
    from camdf.core.reliability import calibration_rows

    p, member, ids, valid = _data(np.random.default_rng(9), 120)
    rows = calibration_rows(p, member, ids, valid).set_index("tool")
    for t in np.unique(ids[valid])[:6]:
        sel = valid & (ids == t)
        table, ece = reliability_table(p[sel], member[sel], 5)
        assert rows.loc[str(t), "ECE"] == pytest.approx(ece)
        assert rows.loc[str(t), "worst bin gap"] == pytest.approx(table["gap"].abs().max())
    assert rows.loc["per-tool mean", "ECE"] == pytest.approx(ece_by_group(p[valid], member[valid], ids[valid], 5))
