"""Tests for the statistics of camdf.evaluation (bootstrap, permutation, classical, proportions): calibration, agreement with scipy/statsmodels,
reproducibility, input validation and exact values on tiny inputs.

Seeds below were fixed once when the tests were written (not searched for a
passing value); the simulation sizes are chosen so that a correctly calibrated
procedure fails the band with probability well below 1 %.
"""

from __future__ import annotations

import gc
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import ttost_paired

from camdf.evaluation import bootstrap, classical, permutation, proportions


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap():
    """Keep the session's long-lived objects out of the collector's reach while this module runs.

    ``multipletests`` calls ``gc.collect()`` on every call; with the session fixtures alive (domains,
    derivations, MLflow) each full collection walks the whole heap, about a second per call. Frozen
    objects are only skipped by the collector, so what the tests compute is unchanged.
    """
    gc.freeze()
    yield
    gc.unfreeze()


def _mean_diff(a, b, axis=-1):
    return np.mean(a - b, axis=axis)


# ---------------------------------------------------------------------------
# 1. calibration by simulation
# ---------------------------------------------------------------------------
N_REPS = 1500  # >= 400 required; 1500 gives SD(coverage) ~ 0.0056


def _coverage(make_pair, true_diff, seed):
    children = np.random.SeedSequence(seed).spawn(N_REPS)
    hits = 0
    for child in children:
        rng = np.random.default_rng(child)
        x, y = make_pair(rng)
        res = bootstrap.paired_bootstrap({"ref": y, "m": x}, "ref", n_resamples=2000,
                                  confidence=0.95, random_state=rng)
        hits += bool(res.ci_low.iloc[0] <= true_diff <= res.ci_high.iloc[0])
    return hits / N_REPS


def test_percentile_coverage_continuous_skewed():
    """Task effect + skewed (exponential) method noise, true difference 0.1."""

    def make_pair(rng):
        task = rng.normal(size=200)
        y = task + rng.normal(size=200)
        x = task + 0.1 + (rng.exponential(size=200) - 1.0)
        return x, y

    cov = _coverage(make_pair, 0.1, seed=20240611)
    assert 0.93 <= cov <= 0.97, cov


def test_percentile_coverage_paired_binary():
    """Paired successes from a known joint table; true difference p10 - p01."""
    p11, p10, p01, p00 = 0.45, 0.15, 0.07, 0.33

    def make_pair(rng):
        cell = rng.choice(4, size=200, p=[p11, p10, p01, p00])
        x = np.isin(cell, (0, 1)).astype(float)  # method succeeds
        y = np.isin(cell, (0, 2)).astype(float)  # reference succeeds
        return x, y

    cov = _coverage(make_pair, p10 - p01, seed=20240612)
    assert 0.93 <= cov <= 0.97, cov


def test_sign_flip_false_positive_rate_under_null():
    """x, y exchangeable within pairs (skewed but i.i.d. noise) => d symmetric."""
    reps = 2000
    children = np.random.SeedSequence(20240613).spawn(reps)
    rejections = 0
    for child in children:
        rng = np.random.default_rng(child)
        task = rng.normal(size=200)
        x = task + rng.exponential(size=200)
        y = task + rng.exponential(size=200)
        rejections += permutation.sign_flip_test(x, y, n_resamples=2000, random_state=rng).pvalue <= 0.05
    fpr = rejections / reps
    assert 0.03 <= fpr <= 0.07, fpr


def test_sign_flip_has_power():
    rng = np.random.default_rng(11)
    y = rng.normal(size=200)
    x = y + 0.5 + rng.normal(size=200)
    assert permutation.sign_flip_test(x, y, n_resamples=2000, random_state=1).pvalue < 0.001


# ---------------------------------------------------------------------------
# 2. agreement with scipy / statsmodels
# ---------------------------------------------------------------------------
def test_indices_are_the_ones_scipy_bootstrap_uses():
    """Record scipy's resamples directly: with paired=True scipy resamples one
    index vector, so adding ``arange(n)`` as an extra paired sample makes the
    statistic receive the index matrix itself."""
    n, B, seed = 37, 499, 123
    x = np.linspace(0.0, 1.0, n)
    seen = []

    def stat(a, idx, axis=-1):
        if idx.ndim == 2 and idx.shape == (B, n):
            seen.append(idx.astype(np.int64).copy())
        return np.mean(a, axis=axis)

    ss.bootstrap((x, np.arange(n)), stat, paired=True, vectorized=True,
                 n_resamples=B, method="percentile", rng=np.random.default_rng(seed))
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], bootstrap.bootstrap_indices(n, B, seed))


@pytest.mark.parametrize("method,scipy_method", [("percentile", "percentile"), ("bca", "BCa")])
def test_paired_bootstrap_matches_scipy(method, scipy_method):
    """Same seed => same index matrix (test above), so every row of our
    multi-method result must equal a separate scipy paired bootstrap."""
    rng = np.random.default_rng(5)
    n, B, seed = 80, 1999, 42
    ref = rng.normal(size=n)
    values = {
        "ref": ref,
        "cont": ref + 0.2 + rng.standard_t(3, size=n),
        "skew": ref + rng.exponential(size=n),
        "binary": (rng.random(n) < 0.6).astype(float),
    }
    res = bootstrap.paired_bootstrap(values, "ref", n_resamples=B, method=method,
                              random_state=seed).set_index("method")
    assert list(res.index) == ["cont", "skew", "binary"]
    for name in res.index:
        sp = ss.bootstrap((values[name], ref), _mean_diff, paired=True, vectorized=True,
                          n_resamples=B, method=scipy_method,
                          rng=np.random.default_rng(seed))
        row = res.loc[name]
        np.testing.assert_allclose(row.ci_low, sp.confidence_interval.low, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(row.ci_high, sp.confidence_interval.high, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(row.se, sp.standard_error, rtol=1e-10)
        np.testing.assert_allclose(row["diff"], np.mean(values[name] - ref), rtol=1e-13)


def test_paired_bootstrap_2d_array_and_shared_indices():
    rng = np.random.default_rng(8)
    mat = rng.normal(size=(4, 50))
    idx = bootstrap.bootstrap_indices(50, 999, 3)
    a = bootstrap.paired_bootstrap(mat, 2, indices=idx, names=["a", "b", "c", "d"])
    b = bootstrap.paired_bootstrap({k: r for k, r in zip("abcd", mat)}, "c", n_resamples=999,
                            random_state=3)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.method) == ["a", "b", "d"] and set(a.reference) == {"c"}


@pytest.mark.parametrize("method,scipy_method", [("percentile", "percentile"), ("bca", "BCa")])
def test_bootstrap_mean_ci_matches_scipy(method, scipy_method):
    x = np.random.default_rng(9).gamma(2.0, size=120)
    ours = bootstrap.bootstrap_mean_ci(x, n_resamples=2999, method=method, random_state=17)
    sp = ss.bootstrap((x,), np.mean, n_resamples=2999, method=scipy_method,
                      rng=np.random.default_rng(17))
    np.testing.assert_allclose([ours.ci_low, ours.ci_high],
                               [sp.confidence_interval.low, sp.confidence_interval.high],
                               rtol=1e-12)
    np.testing.assert_allclose(ours.se, sp.standard_error, rtol=1e-10)


def test_sign_flip_agrees_with_scipy_exact_permutation_test():
    """scipy enumerates all 2**n within-pair swaps when n_resamples >= 2**n.
    Our Monte-Carlo p-value must be within Monte-Carlo error of that."""
    rng = np.random.default_rng(21)
    y = rng.normal(size=12)
    x = y + 0.4 + rng.normal(size=12)

    def abs_mean_diff(a, b, axis=-1):
        return np.abs(np.mean(a - b, axis=axis))

    exact = ss.permutation_test((x, y), abs_mean_diff, permutation_type="samples",
                                vectorized=True, n_resamples=2**12,
                                alternative="greater").pvalue
    B = 40_000
    ours = permutation.sign_flip_test(x, y, n_resamples=B, random_state=2).pvalue
    tol = 4 * math.sqrt(exact * (1 - exact) / B) + 1 / (B + 1)
    assert abs(ours - exact) <= tol, (ours, exact)


def test_holm_matches_statsmodels_examples():
    rng = np.random.default_rng(4)
    for p in (rng.random(12), rng.random(30) ** 4,
              np.array([0.01, 0.04, 0.03, 0.04, 0.5, 1.0, 0.0, 0.01])):
        np.testing.assert_array_equal(classical.holm(p), multipletests(p, method="holm")[1])


# multipletests calls gc.collect() on every call (why camdf.evaluation.classical.holm does not call it), so
# keep the example count modest
@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=25))
def test_holm_property(pvals):
    p = np.array(pvals)
    adj = classical.holm(p)
    np.testing.assert_array_equal(adj, multipletests(p, method="holm")[1])  # bit for bit
    assert np.all(adj >= p) and np.all(adj <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)


def test_mcnemar_matches_scipy_binomtest_and_statsmodels():
    rng = np.random.default_rng(6)
    a = rng.random(300) < 0.6
    b = rng.random(300) < 0.5
    res = classical.mcnemar_exact(a, b)
    b01 = int(np.sum(~a & b))
    b10 = int(np.sum(a & ~b))
    assert (res.b01, res.b10, res.n_discordant) == (b01, b10, b01 + b10)
    assert res.pvalue == ss.binomtest(b10, b01 + b10, 0.5).pvalue
    table = [[np.sum(a & b), b10], [b01, np.sum(~a & ~b)]]
    np.testing.assert_allclose(res.pvalue, sm_mcnemar(table, exact=True).pvalue, rtol=1e-12)


def test_wilson_matches_statsmodels_and_formula():
    s = np.array([0, 1, 7, 50, 99, 100])
    n = np.array([10, 10, 20, 100, 100, 100])
    lo, hi = proportions.wilson_ci(s, n, confidence=0.9)
    slo, shi = proportion_confint(s, n, alpha=0.1, method="wilson")
    np.testing.assert_allclose(lo, slo, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(hi, shi, rtol=1e-14, atol=1e-15)
    z = ss.norm.ppf(0.95)
    p = s / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    np.testing.assert_allclose(lo, centre - half, atol=1e-12)
    np.testing.assert_allclose(hi, centre + half, atol=1e-12)


def test_tost_matches_statsmodels_worked_example():
    """Worked example: 40 tasks, paired successes of a new method (a) and the
    baseline (b); margin delta = 0.1 on the success-rate scale."""
    a = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1,
                  1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1], float)
    b = np.array([1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1,
                  1, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1], float)
    res = classical.tost_paired(a, b, delta=0.1, alpha=0.05)
    p_max, (t1, p1, df1), (t2, p2, df2) = ttost_paired(a, b, -0.1, 0.1)
    np.testing.assert_allclose([res.t_lower, res.p_lower], [t1, p1], rtol=1e-12)
    np.testing.assert_allclose([res.t_upper, res.p_upper], [t2, p2], rtol=1e-12)
    assert res.df == df1 == df2 == 39
    np.testing.assert_allclose(max(res.p_lower, res.p_upper), p_max, rtol=1e-12)
    # mean diff = 1/40: non-inferior at delta 0.1, but not shown equivalent
    assert res.diff == pytest.approx(1 / 40)
    assert res.noninferior == (p1 < 0.05)
    assert res.equivalent == (p_max < 0.05)
    assert res.noninferior and not res.equivalent


def test_tost_matches_statsmodels_continuous():
    rng = np.random.default_rng(30)
    b = rng.normal(size=60)
    a = b + 0.01 + 0.1 * rng.normal(size=60)
    res = classical.tost_paired(a, b, delta=0.1)
    p_max, (t1, p1, _), (t2, p2, _) = ttost_paired(a, b, -0.1, 0.1)
    np.testing.assert_allclose([res.p_lower, res.p_upper, p_max],
                               [p1, p2, max(res.p_lower, res.p_upper)], rtol=1e-12)
    assert res.equivalent and res.noninferior
    assert -0.1 < res.ci_low < res.ci_high < 0.1


# ---------------------------------------------------------------------------
# 3. reproducibility
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_same_random_state_bit_identical(method):
    rng = np.random.default_rng(12)
    vals = {k: rng.normal(size=150) for k in ("r", "a", "b")}
    r1 = bootstrap.paired_bootstrap(vals, "r", n_resamples=1000, method=method, random_state=99)
    r2 = bootstrap.paired_bootstrap(vals, "r", n_resamples=1000, method=method, random_state=99)
    r3 = bootstrap.paired_bootstrap(vals, "r", n_resamples=1000, method=method,
                             random_state=np.random.default_rng(99))
    pd.testing.assert_frame_equal(r1, r2, check_exact=True)
    pd.testing.assert_frame_equal(r1, r3, check_exact=True)
    r4 = bootstrap.paired_bootstrap(vals, "r", n_resamples=1000, method=method, random_state=100)
    assert not np.array_equal(r1.ci_low.to_numpy(), r4.ci_low.to_numpy())

    m1 = bootstrap.bootstrap_mean_ci(vals["a"], 1000, method=method, random_state=5)
    m2 = bootstrap.bootstrap_mean_ci(vals["a"], 1000, method=method, random_state=5)
    assert m1 == m2

    s1 = permutation.sign_flip_test(vals["a"], vals["r"], 1000, random_state=7)
    s2 = permutation.sign_flip_test(vals["a"], vals["r"], 1000, random_state=np.random.default_rng(7))
    assert s1 == s2
    np.testing.assert_array_equal(bootstrap.bootstrap_indices(150, 10, 1), bootstrap.bootstrap_indices(150, 10, 1))


def test_no_global_rng_state_touched():
    state = np.random.get_state()
    bootstrap.paired_bootstrap({"r": [0.0, 1.0, 2.0], "a": [1.0, 1.0, 3.0]}, "r", 50)
    permutation.sign_flip_test([1.0, 2.0], [0.0, 0.5], 50)
    after = np.random.get_state()
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]


# ---------------------------------------------------------------------------
# 4. input validation
# ---------------------------------------------------------------------------
_GOOD = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
_SHORT = np.array([0.0, 1.0, 1.0, 0.0])
_NAN = np.array([0.0, np.nan, 1.0, 0.0, 1.0])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: permutation.sign_flip_test(_GOOD, _SHORT), r"^x and y: unequal lengths 5 and 4$"),
        (lambda: permutation.sign_flip_test(_NAN, _GOOD), r"^x: contains NaN$"),
        (lambda: permutation.sign_flip_test(_GOOD, _NAN), r"^y: contains NaN$"),
        (lambda: permutation.sign_flip_test([], []), r"^x: empty$"),
        (lambda: permutation.sign_flip_test(_GOOD, _GOOD, n_resamples=0), r"^n_resamples:"),
        (lambda: permutation.sign_flip_test(_GOOD, _GOOD, random_state=None), r"^random_state:"),
        (lambda: permutation.sign_flip_test(_GOOD, _GOOD, random_state=-1), r"^random_state:"),
        (lambda: bootstrap.bootstrap_mean_ci([]), r"^x: empty$"),
        (lambda: bootstrap.bootstrap_mean_ci(_NAN), r"^x: contains NaN$"),
        (lambda: bootstrap.bootstrap_mean_ci([1.0, np.inf]), r"^x: contains inf$"),
        (lambda: bootstrap.bootstrap_mean_ci(_GOOD, confidence=1.0), r"^confidence: must be in \(0, 1\), got 1\.0$"),
        (lambda: bootstrap.bootstrap_mean_ci(_GOOD, confidence=0.0), r"^confidence:"),
        (lambda: bootstrap.bootstrap_mean_ci(_GOOD, confidence=95), r"^confidence:"),
        (lambda: bootstrap.bootstrap_mean_ci(_GOOD, method="basic"), r"^method:"),
        (lambda: bootstrap.bootstrap_mean_ci(np.ones((2, 2))), r"^x: must be 1-D"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _SHORT}, "r"),
         r"^values\['r'\] and values\['a'\]: unequal lengths 5 and 4$"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _NAN}, "r"), r"^values\['a'\]: contains NaN$"),
        (lambda: bootstrap.paired_bootstrap({"r": [], "a": []}, "r"), r"^values\['r'\]: empty$"),
        (lambda: bootstrap.paired_bootstrap({}, "r"), r"^values: empty$"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _GOOD}, "zz"), r"^reference:"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD}, "r"), r"^values: need at least one method"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _GOOD}, "r", confidence=1.5), r"^confidence:"),
        (lambda: bootstrap.paired_bootstrap(np.vstack([_GOOD, _NAN]), 0), r"^values: contains NaN$"),
        (lambda: bootstrap.paired_bootstrap(np.empty((2, 0)), 0), r"^values: empty$"),
        (lambda: bootstrap.paired_bootstrap(np.vstack([_GOOD, _GOOD]), 0, names=["a"]), r"^names:"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _GOOD}, "r", indices=np.zeros((3, 4), int)),
         r"^indices:"),
        (lambda: bootstrap.paired_bootstrap({"r": _GOOD, "a": _GOOD}, "r", indices=np.full((3, 5), 5)),
         r"^indices:"),
        (lambda: bootstrap.bootstrap_indices(0, 10, 0), r"^n:"),
        (lambda: bootstrap.bootstrap_indices(5, 0, 0), r"^n_resamples:"),
        (lambda: classical.holm([]), r"^pvalues: empty$"),
        (lambda: classical.holm([0.1, np.nan]), r"^pvalues: contains NaN$"),
        (lambda: classical.holm([0.1, 1.2]), r"^pvalues: must lie in \[0, 1\]$"),
        (lambda: classical.mcnemar_exact([1, 0, 1], [1, 0]), r"^a and b: unequal lengths 3 and 2$"),
        (lambda: classical.mcnemar_exact([1, 0, 2], [1, 0, 1]), r"^a: must be binary"),
        (lambda: classical.mcnemar_exact([], []), r"^a: empty$"),
        (lambda: proportions.wilson_ci(3, 0), r"^n: must be >= 1"),
        (lambda: proportions.wilson_ci(6, 5), r"^successes: must be <= n$"),
        (lambda: proportions.wilson_ci(-1, 5), r"^successes: must be >= 0"),
        (lambda: proportions.wilson_ci(2.5, 5), r"^successes: must be integer counts$"),
        (lambda: proportions.wilson_ci(2, 5, confidence=-0.1), r"^confidence:"),
        (lambda: classical.tost_paired(_GOOD, _GOOD, delta=-0.1), r"^delta: must be > 0, got -0\.1$"),
        (lambda: classical.tost_paired(_GOOD, _GOOD, delta=0.0), r"^delta: must be > 0, got 0\.0$"),
        (lambda: classical.tost_paired(_GOOD, _GOOD, delta=float("nan")), r"^delta:"),
        (lambda: classical.tost_paired(_GOOD, _GOOD, alpha=0.6), r"^alpha:"),
        (lambda: classical.tost_paired(_GOOD, _SHORT), r"^a and b: unequal lengths 5 and 4$"),
        (lambda: classical.tost_paired(_NAN, _GOOD), r"^a: contains NaN$"),
        (lambda: classical.tost_paired([1.0], [0.0]), r"^a: need at least 2 pairs"),
        (lambda: proportions.stratified_success(_GOOD, _SHORT), r"^success and covered: unequal lengths 5 and 4$"),
        (lambda: proportions.stratified_success(_GOOD, _NAN), r"^covered: contains NaN$"),
        (lambda: proportions.stratified_success([], []), r"^success: empty$"),
    ],
)
def test_bad_input_raises_value_error_naming_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------
# 5. exact values on tiny hand-built inputs
# ---------------------------------------------------------------------------
def test_bootstrap_indices_exact():
    idx = bootstrap.bootstrap_indices(6, 4, 2024)
    assert idx.shape == (4, 6) and idx.dtype == np.int64
    np.testing.assert_array_equal(idx, np.random.default_rng(2024).integers(0, 6, size=(4, 6)))


def test_percentile_interval_exact_with_hand_indices():
    # x = [0, 1]; resamples {0,0},{0,1},{1,1},{1,0} -> means 0, .5, 1, .5
    idx = np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
    r = bootstrap.bootstrap_mean_ci([0.0, 1.0], indices=idx)
    # linear quantile of [0, .5, .5, 1]: h = 3q -> q=.025: 0.0375, q=.975: 0.9625
    assert r.mean == 0.5
    assert r.ci_low == pytest.approx(0.0375, abs=1e-15)
    assert r.ci_high == pytest.approx(0.9625, abs=1e-15)
    assert r.se == pytest.approx(math.sqrt(1 / 6))  # var of [0,.5,.5,1], ddof=1
    assert r.n_resamples == 4 and r.n == 2


def test_paired_diff_exact_with_hand_indices():
    # d = a - r = [0, 1, -1]; resample means with indices below:
    # [0,0,0]->0, [1,1,1]->1, [2,2,2]->-1, [0,1,2]->0, [1,1,0]->2/3
    vals = {"r": [1.0, 0.0, 1.0], "a": [1.0, 1.0, 0.0]}
    idx = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 1, 2], [1, 1, 0]])
    res = bootstrap.paired_bootstrap(vals, "r", confidence=0.5, indices=idx)
    # sorted means [-1, 0, 0, 2/3, 1]; h = 4q: q=.25 -> 0, q=.75 -> 2/3
    row = res.iloc[0]
    assert row["method"] == "a" and row["reference"] == "r"
    assert row["diff"] == 0.0 and row.ci_low == 0.0
    assert row.ci_high == pytest.approx(2 / 3, abs=1e-15)
    assert row.n == 3 and row.n_resamples == 5


def test_constant_difference_gives_point_interval():
    vals = {"r": np.zeros(10), "a": np.full(10, 0.25)}
    for method in ("percentile", "bca"):
        row = bootstrap.paired_bootstrap(vals, "r", 200, method=method).iloc[0]
        assert row.ci_low == row.ci_high == row["diff"] == 0.25


def test_sign_flip_exact_values():
    # identical inputs: every resample is as extreme -> p = 1
    r = permutation.sign_flip_test([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], n_resamples=99)
    assert (r.pvalue, r.n_extreme, r.diff) == (1.0, 99, 0.0)
    # one pair: |±d| = |d| always -> p = 1
    assert permutation.sign_flip_test([3.0], [1.0], n_resamples=50).pvalue == 1.0
    # d = 1 on 20 pairs: only the two constant sign vectors (prob 2**-19) reach
    # |mean| = 1, so with 1000 resamples none does and p = 1 / 1001
    r = permutation.sign_flip_test(np.ones(20), np.zeros(20), n_resamples=1000, random_state=0)
    assert (r.n_extreme, r.pvalue, r.diff) == (0, 1 / 1001, 1.0)


def test_holm_exact():
    # sorted 0.01, 0.03, 0.04 -> 3*.01=.03, 2*.03=.06, 1*.04=.04 -> cummax .03,.06,.06
    np.testing.assert_allclose(classical.holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06], rtol=1e-15)
    np.testing.assert_array_equal(classical.holm([0.5]), [0.5])
    np.testing.assert_array_equal(classical.holm([0.6, 0.7]), [1.0, 1.0])


def test_mcnemar_exact_values():
    a = [1, 1, 1, 0, 0, 1]
    b = [0, 0, 1, 1, 0, 0]
    r = classical.mcnemar_exact(a, b)
    # b01 (a fail, b succeed) = 1, b10 = 3; p = 2 * P(Bin(4,.5) <= 1) = 2 * 5/16
    assert (r.b01, r.b10, r.n_discordant) == (1, 3, 4)
    assert r.pvalue == pytest.approx(0.625, abs=1e-15)
    none = classical.mcnemar_exact([True, False], [True, False])
    assert (none.b01, none.b10, none.pvalue) == (0, 0, 1.0)


def test_wilson_exact_values():
    lo, hi = proportions.wilson_ci(5, 10)
    z = ss.norm.ppf(0.975)
    half = z * math.sqrt(0.025 + z**2 / 400) / (1 + z**2 / 10)
    assert lo == pytest.approx(0.5 - half, abs=1e-14)
    assert hi == pytest.approx(0.5 + half, abs=1e-14)
    assert isinstance(lo, float)
    assert proportions.wilson_ci(0, 10)[0] == 0.0 and proportions.wilson_ci(10, 10)[1] == 1.0


def test_tost_exact_values():
    # d = [.1, 0, .2, .1]: mean .1, s = sqrt(.02/3), se = s/2, df = 3
    a = [0.6, 0.5, 0.7, 0.6]
    b = [0.5, 0.5, 0.5, 0.5]
    r = classical.tost_paired(a, b, delta=0.05, alpha=0.05)
    se = math.sqrt(0.02 / 3) / 2
    assert r.diff == pytest.approx(0.1) and r.se == pytest.approx(se) and r.df == 3
    assert r.t_lower == pytest.approx(0.15 / se)
    assert r.t_upper == pytest.approx(0.05 / se)
    assert r.p_lower == pytest.approx(ss.t.sf(0.15 / se, 3))
    assert r.p_upper == pytest.approx(ss.t.cdf(0.05 / se, 3))
    assert r.noninferior and not r.equivalent
    # zero variance: identical successes -> both one-sided nulls rejected
    z = classical.tost_paired([1, 0, 1], [1, 0, 1], delta=0.05)
    assert (z.p_lower, z.p_upper, z.noninferior, z.equivalent) == (0.0, 0.0, True, True)
    w = classical.tost_paired([0, 0, 0], [1, 1, 1], delta=0.05)
    assert (w.p_lower, w.p_upper, w.noninferior, w.equivalent) == (1.0, 0.0, False, False)


def test_stratified_success_exact():
    success = [1, 1, 0, 0, 1, 0, 1]
    covered = [1, 1, 1, 0, 0, 0, 1]
    df = proportions.stratified_success(success, covered).set_index("stratum")
    assert list(df.index) == ["covered", "not_covered", "all"]
    assert df.loc["covered", ["n", "successes"]].tolist() == [4, 3]
    assert df.loc["not_covered", ["n", "successes"]].tolist() == [3, 1]
    assert df.loc["all", ["n", "successes"]].tolist() == [7, 4]
    assert df.loc["covered", "rate"] == 0.75
    assert (df.loc["covered", "ci_low"], df.loc["covered", "ci_high"]) == proportions.wilson_ci(3, 4)
    empty = proportions.stratified_success([1, 0], [True, True]).set_index("stratum")
    assert empty.loc["not_covered", "n"] == 0 and np.isnan(empty.loc["not_covered", "rate"])
