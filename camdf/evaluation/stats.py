"""Statistics for paired comparisons of methods evaluated on the same tasks.

Every method of a cell (one domain x budget x seed, say) is evaluated on the
same ``n`` tasks, so comparisons are *paired*: the unit of resampling is the
task, and all method-vs-reference differences of a cell are resampled with one
shared ``(B, n)`` index matrix (:func:`bootstrap_indices`).

What this module adds, and what it delegates to statsmodels
-----------------------------------------------------------
* :func:`paired_bootstrap` -- percentile and BCa intervals of the mean
  difference of *all* methods against a reference at once, from one index
  matrix.  Resample means are computed as ``counts @ values.T / n`` (counts
  from :func:`numpy.bincount`), never with a Python loop over resamples.
  With the same seed it reproduces ``scipy.stats.bootstrap(..., paired=True)``
  (same index matrix, same quantile rule, same BCa formulas).
* :func:`bootstrap_mean_ci` -- the same for a single mean (payoff CI).
* :func:`sign_flip_test` -- vectorised paired randomisation test with the
  ``(1 + #extreme) / (1 + B)`` correction.
* :func:`holm`, :func:`mcnemar_exact`, :func:`wilson_ci`, :func:`tost_paired`
  -- validated wrappers that delegate the computation to statsmodels
  (``multipletests(method='holm')``, ``mcnemar(exact=True)``,
  ``proportion_confint(method='wilson')``, ``ttost_paired``) and add only the
  documented edge cases where statsmodels returns NaN or rounding noise.
* :func:`stratified_success` -- success rates by coverage stratum with Wilson
  intervals.

Conventions
-----------
* Randomness only enters through a ``random_state`` argument (a non-negative
  ``int`` or a :class:`numpy.random.Generator`), turned into a local
  :func:`numpy.random.default_rng`; nothing touches global RNG state.
* Bad input raises :class:`ValueError` whose message starts with the name of
  the offending argument, e.g. ``"x and y: unequal lengths 5 and 4"``.
"""

from __future__ import annotations

import contextlib
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import ttost_paired

__all__ = [
    "BootstrapMeanResult",
    "McNemarResult",
    "SignFlipResult",
    "TOSTResult",
    "bootstrap_indices",
    "bootstrap_mean_ci",
    "holm",
    "mcnemar_exact",
    "paired_bootstrap",
    "sign_flip_test",
    "stratified_success",
    "tost_paired",
    "wilson_ci",
]

#: Rows of the index matrix processed per block when forming resample means.
#: Measured on the reference machine (B=10k, n=2285, m=12): 128 rows was the
#: fastest of 64-1024 (the count block, 2.3 MB, stays in cache).  Fixed, so
#: results do not depend on the machine.
_BLOCK_ROWS = 128

_CI_METHODS = ("percentile", "bca")


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------
def _rng(random_state: int | np.random.Generator) -> np.random.Generator:
    """Turn ``random_state`` into a local Generator (never global state)."""
    if isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)  # returns the same object
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state: must be >= 0, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise ValueError(
        "random_state: must be a non-negative int or numpy.random.Generator, "
        f"got {type(random_state).__name__}"
    )


def _float_array(x, name: str) -> np.ndarray:
    """``np.asarray(x, float64)``, with a ValueError naming ``name`` when it cannot convert."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not convertible to a float array ({exc})") from None


def _as_1d(x, name: str) -> np.ndarray:
    """Float64 1-D copy-free view of ``x``; rejects empty, NaN and inf."""
    arr = _float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be 1-D, got shape {arr.shape}")
    _check_values(arr, name)
    return arr


def _check_values(arr: np.ndarray, name: str) -> None:
    if arr.size == 0:
        raise ValueError(f"{name}: empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: contains NaN")
    if np.isinf(arr).any():
        raise ValueError(f"{name}: contains inf")


def _check_pair(x: np.ndarray, y: np.ndarray, xname: str, yname: str) -> None:
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{xname} and {yname}: unequal lengths {x.shape[0]} and {y.shape[0]}")


def _as_binary(x, name: str) -> np.ndarray:
    arr = _as_1d(x, name)
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name}: must be binary (bool or 0/1)")
    return arr.astype(bool)


def _check_unit_open(value, name: str, upper: float = 1.0) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name}: must be a real number in (0, {upper:g}), got {value!r}")
    value = float(value)
    if not (0.0 < value < upper):
        raise ValueError(f"{name}: must be in (0, {upper:g}), got {value!r}")
    return value


def _check_n_resamples(n_resamples) -> int:
    if (
        not isinstance(n_resamples, numbers.Integral)
        or isinstance(n_resamples, bool)
        or n_resamples < 1
    ):
        raise ValueError(f"n_resamples: must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def _check_method(method) -> str:
    m = str(method).lower()
    if m not in _CI_METHODS:
        raise ValueError(f"method: must be 'percentile' or 'bca', got {method!r}")
    return m


def _check_indices(indices, n: int) -> np.ndarray:
    idx = np.asarray(indices)
    if idx.ndim != 2 or idx.shape[0] == 0:
        raise ValueError(f"indices: must have shape (B, n) with B >= 1, got {idx.shape}")
    if idx.shape[1] != n:
        raise ValueError(f"indices: has {idx.shape[1]} columns but the data have n = {n}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices: must be an integer array, got dtype {idx.dtype}")
    lo, hi = idx.min(), idx.max()
    if lo < 0 or hi >= n:
        raise ValueError(f"indices: entries must lie in [0, {n}), got range [{lo}, {hi}]")
    return idx


# ---------------------------------------------------------------------------
# bootstrap core
# ---------------------------------------------------------------------------
def bootstrap_indices(
    n: int, n_resamples: int, random_state: int | np.random.Generator
) -> np.ndarray:
    """Draw one bootstrap index matrix to be shared by all method pairs of a cell.

    Parameters
    ----------
    n : int
        Number of tasks (paired observations), ``n >= 1``.
    n_resamples : int
        Number of bootstrap resamples ``B >= 1``.
    random_state : int or numpy.random.Generator
        Seed or generator; an int is turned into ``np.random.default_rng(int)``.

    Returns
    -------
    numpy.ndarray, shape (B, n), dtype int64
        Row ``b`` lists the task indices of resample ``b``, drawn uniformly
        with replacement from ``{0, ..., n-1}``.

    Notes
    -----
    The draw is ``rng.integers(0, n, size=(B, n))`` -- the same call that
    ``scipy.stats.bootstrap(..., paired=True, rng=rng)`` makes (with the
    default ``batch=None``), so for the same seed both use identical resamples.
    Memory is ``8 B n`` bytes (183 MB for B = 10 000, n = 2 285).
    """
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n: must be a positive integer, got {n!r}")
    n_resamples = _check_n_resamples(n_resamples)
    rng = _rng(random_state)
    return rng.integers(0, int(n), size=(n_resamples, int(n)))


def _single_thread_blas():
    """Context limiting BLAS to one thread (no-op if threadpoolctl is missing).

    The products here are very skinny (``(k_rows, n) @ (n, m)`` with m ~ 10);
    on the 2-core reference machine multi-threaded OpenBLAS was 2-6x slower
    and erratic for them, single-threaded it is ~0.04 s for the full
    B = 10 000 x n = 2 285 x 11 workload.  The limit is restored on exit.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            _BLAS_CONTROLLER = False
        else:
            _BLAS_CONTROLLER = ThreadpoolController()
    if _BLAS_CONTROLLER is False:
        return contextlib.nullcontext()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


_BLAS_CONTROLLER = None


def _resample_means(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    r"""Means of every row of ``values`` under every bootstrap resample.

    Parameters
    ----------
    values : ndarray, shape (k, n), float64
    indices : ndarray, shape (B, n), integer

    Returns
    -------
    ndarray, shape (B, k)
        :math:`\bar v^{*}_{bk} = \frac1n \sum_j c_{bj} v_{kj}` with
        :math:`c_{bj} = \#\{i : \mathrm{indices}_{bi} = j\}`.

    Notes
    -----
    Counts come from one :func:`numpy.bincount` per block of ``_BLOCK_ROWS``
    rows (row ``b``'s indices offset by ``b n``); the sums are then a float64
    matrix product ``counts @ values.T``.  For integer-valued data (successes)
    the sums are exact.  Cost: ``O(B n)`` for the counts plus ``O(B n k)``
    flops; memory ``O(_BLOCK_ROWS n)`` beyond the output.
    """
    B, n = indices.shape
    vt = np.ascontiguousarray(values.T, dtype=np.float64)  # (n, k)
    out = np.empty((B, vt.shape[1]), dtype=np.float64)
    block = min(_BLOCK_ROWS, B)
    offsets = (np.arange(block, dtype=np.int64) * n)[:, None]
    flat = np.empty((block, n), dtype=np.int64)
    counts = np.empty((block, n), dtype=np.float64)
    with _single_thread_blas():
        for start in range(0, B, block):
            rows = indices[start : start + block]
            k = rows.shape[0]
            np.add(rows, offsets[:k], out=flat[:k])
            np.copyto(counts[:k], np.bincount(flat[:k].ravel(), minlength=k * n).reshape(k, n))
            np.matmul(counts[:k], vt, out=out[start : start + k])
    out /= n
    return out


def _bca_levels(
    values: np.ndarray, theta_hat: np.ndarray, theta_b: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""BCa quantile levels for the mean of each row of ``values``.

    Parameters
    ----------
    values : ndarray, shape (k, n)
    theta_hat : ndarray, shape (k,)
        Observed means.
    theta_b : ndarray, shape (B, k)
        Bootstrap means.
    alpha : float
        Tail probability per side, ``(1 - confidence) / 2``.

    Returns
    -------
    alpha_1, alpha_2 : ndarray, shape (k,)

    Notes
    -----
    Efron & Tibshirani (1993) eq. 14.14-14.15, as in ``scipy.stats.bootstrap``:

    .. math::
        \hat z_0 = \Phi^{-1}\!\Big(\frac{\#\{\theta^*_b < \hat\theta\}
                   + \#\{\theta^*_b \le \hat\theta\}}{2B}\Big),\qquad
        \hat a = \frac{\sum_i U_i^3}{6 (\sum_i U_i^2)^{3/2}},

    with jackknife :math:`U_i = (n-1)(\bar\theta_{(\cdot)} - \hat\theta_{(i)})`,
    :math:`\hat\theta_{(i)} = (n\bar v - v_i)/(n-1)` (closed form for the mean),
    and :math:`\alpha_{1,2} = \Phi\big(\hat z_0 + \frac{\hat z_0 + z}{1 - \hat a
    (\hat z_0 + z)}\big)` at :math:`z = \Phi^{-1}(\alpha), \Phi^{-1}(1-\alpha)`.
    If all ``values`` of a row are equal, :math:`\hat a` is 0/0 and is set to 0
    (the interval collapses to the point), where scipy would return NaN.
    """
    B = theta_b.shape[0]
    below = np.count_nonzero(theta_b < theta_hat, axis=0)
    below_eq = np.count_nonzero(theta_b <= theta_hat, axis=0)
    z0 = special.ndtri((below + below_eq) / (2.0 * B))

    n = values.shape[1]
    if n > 1:
        theta_i = (values.sum(axis=1, keepdims=True) - values) / (n - 1)  # (k, n)
        u = (n - 1) * (theta_i.mean(axis=1, keepdims=True) - theta_i)
        num = np.sum(u**3, axis=1) / n**3
        den = np.sum(u**2, axis=1) / n**2
        with np.errstate(divide="ignore", invalid="ignore"):
            a_hat = np.where(den > 0, num / (6.0 * np.where(den > 0, den, 1.0) ** 1.5), 0.0)
    else:
        a_hat = np.zeros(values.shape[0])

    z_a = float(special.ndtri(alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        num1 = z0 + z_a
        alpha_1 = special.ndtr(z0 + num1 / (1 - a_hat * num1))
        num2 = z0 - z_a
        alpha_2 = special.ndtr(z0 + num2 / (1 - a_hat * num2))
    return alpha_1, alpha_2


def _intervals(
    values: np.ndarray, theta_b: np.ndarray, confidence: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile or BCa intervals, shape (k,) each, from ``theta_b`` (B, k)."""
    alpha = (1.0 - confidence) / 2.0
    if method == "percentile":
        q = np.quantile(theta_b, [alpha, 1.0 - alpha], axis=0)  # 'linear', as scipy
        return q[0], q[1]
    theta_hat = values.mean(axis=1)
    a1, a2 = _bca_levels(values, theta_hat, theta_b, alpha)
    lo = np.full(values.shape[0], np.nan)
    hi = np.full(values.shape[0], np.nan)
    for k in range(values.shape[0]):  # loop over methods (not resamples)
        if np.isfinite(a1[k]) and np.isfinite(a2[k]):
            lo[k], hi[k] = np.quantile(theta_b[:, k], [a1[k], a2[k]])
    if np.isnan(lo).any():
        warnings.warn(
            "BCa interval undefined for some rows (the observed mean lies outside "
            "the bootstrap distribution); returning NaN for them. Use more "
            "resamples or method='percentile'.",
            RuntimeWarning,
            stacklevel=3,
        )
    return lo, hi


def _resolve_indices(indices, n: int, n_resamples, random_state) -> np.ndarray:
    if indices is None:
        return bootstrap_indices(n, _check_n_resamples(n_resamples), random_state)
    return _check_indices(indices, n)


# ---------------------------------------------------------------------------
# public bootstrap API
# ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BootstrapMeanResult:
    """Bootstrap confidence interval of a single mean.

    Attributes
    ----------
    mean : float
        Sample mean :math:`\\bar x`.
    ci_low, ci_high : float
        Interval end points.
    se : float
        Bootstrap standard error (SD of the resample means, ``ddof=1``).
    n, n_resamples : int
        Sample size and number of resamples ``B``.
    confidence : float
    method : str
        ``'percentile'`` or ``'bca'``.
    """

    mean: float
    ci_low: float
    ci_high: float
    se: float
    n: int
    n_resamples: int
    confidence: float
    method: str


def bootstrap_mean_ci(
    x,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "percentile",
    random_state: int | np.random.Generator = 0,
    *,
    indices: np.ndarray | None = None,
) -> BootstrapMeanResult:
    r"""Bootstrap confidence interval for the mean of one sample (e.g. a payoff).

    Parameters
    ----------
    x : array_like, shape (n,)
        Observations (finite, non-empty).
    n_resamples : int, default 10_000
        ``B``; ignored when ``indices`` is given.
    confidence : float in (0, 1), default 0.95
    method : {'percentile', 'bca'}, default 'percentile'
        Percentile interval :math:`[\theta^*_{(\alpha)}, \theta^*_{(1-\alpha)}]`
        with :math:`\alpha = (1-\text{confidence})/2`, or the BCa interval
        (see :func:`paired_bootstrap`).
    random_state : int or numpy.random.Generator, default 0
        Used only when ``indices`` is None.
    indices : ndarray, shape (B, n), optional
        A shared index matrix from :func:`bootstrap_indices`, so that this CI
        uses the same resamples as the paired comparisons of the cell.

    Returns
    -------
    BootstrapMeanResult

    Notes
    -----
    Resample means :math:`\bar x^*_b = \frac1n\sum_i x_{I_{bi}}` are computed
    for all ``b`` at once; quantiles use linear interpolation (numpy/scipy
    default), so the result equals ``scipy.stats.bootstrap((x,), np.mean,
    rng=np.random.default_rng(seed))`` for the same seed.
    """
    xv = _as_1d(x, "x")
    confidence = _check_unit_open(confidence, "confidence")
    method = _check_method(method)
    idx = _resolve_indices(indices, xv.shape[0], n_resamples, random_state)
    values = xv[None, :]
    theta_b = _resample_means(values, idx)
    lo, hi = _intervals(values, theta_b, confidence, method)
    se = float(np.std(theta_b[:, 0], ddof=1)) if idx.shape[0] > 1 else float("nan")
    return BootstrapMeanResult(
        mean=float(xv.mean()),
        ci_low=float(lo[0]),
        ci_high=float(hi[0]),
        se=se,
        n=int(xv.shape[0]),
        n_resamples=int(idx.shape[0]),
        confidence=confidence,
        method=method,
    )


def _method_matrix(values, names) -> tuple[list[str], np.ndarray]:
    """Stack ``values`` (dict or 2-D array) into names and an (m, n) matrix."""
    if isinstance(values, Mapping):
        if names is not None:
            raise ValueError("names: only allowed when values is a 2-D array")
        if len(values) == 0:
            raise ValueError("values: empty")
        keys = [str(k) for k in values]
        if len(set(keys)) != len(keys):
            raise ValueError("values: method names collide after str()")
        rows = [_as_1d(v, f"values[{k!r}]") for k, v in zip(keys, values.values())]
        first = keys[0]
        for k, r in zip(keys[1:], rows[1:]):
            _check_pair(rows[0], r, f"values[{first!r}]", f"values[{k!r}]")
        return keys, np.vstack(rows)
    mat = _float_array(values, "values")
    if mat.ndim != 2:
        raise ValueError(f"values: must be a dict of 1-D arrays or a 2-D array (m, n), got shape {mat.shape}")
    _check_values(mat, "values")
    if names is None:
        names = [str(i) for i in range(mat.shape[0])]
    else:
        names = [str(s) for s in names]
        if len(names) != mat.shape[0]:
            raise ValueError(f"names: {len(names)} names for {mat.shape[0]} rows of values")
        if len(set(names)) != len(names):
            raise ValueError("names: duplicate names")
    return names, mat


def paired_bootstrap(
    values: Mapping[str, np.ndarray] | np.ndarray,
    reference: str | int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "percentile",
    random_state: int | np.random.Generator = 0,
    *,
    names: Sequence[str] | None = None,
    indices: np.ndarray | None = None,
) -> pd.DataFrame:
    r"""Paired bootstrap CIs of the mean difference of every method vs a reference.

    Parameters
    ----------
    values : dict[str, array_like (n,)] or array_like, shape (m, n)
        Per-task values (success 0/1, payoff, cost, ...) of ``m`` methods on
        the same ``n`` tasks, in the same task order.
    reference : str or int
        Name of the reference method (a key of ``values`` or an entry of
        ``names``); an int selects a row of a 2-D ``values``.
    n_resamples : int, default 10_000
        ``B``; ignored when ``indices`` is given.
    confidence : float in (0, 1), default 0.95
    method : {'percentile', 'bca'}, default 'percentile'
    random_state : int or numpy.random.Generator, default 0
        Used only when ``indices`` is None.
    names : sequence of str, optional
        Row names for a 2-D ``values`` (default ``'0', '1', ...``).
    indices : ndarray, shape (B, n), optional
        Shared index matrix from :func:`bootstrap_indices`.

    Returns
    -------
    pandas.DataFrame, one row per non-reference method (input order)
        Columns: ``method, reference, diff, ci_low, ci_high, se, n,
        n_resamples, confidence, ci_method``.

    Notes
    -----
    With differences :math:`d_{kj} = v_{kj} - v_{\mathrm{ref},j}` (shape
    ``(m-1, n)``) and one index matrix :math:`I` (shape ``(B, n)``) for all
    ``k``:

    .. math::
        \hat\theta_k = \frac1n\sum_j d_{kj},\qquad
        \theta^*_{bk} = \frac1n\sum_i d_{k, I_{bi}} = \frac1n (C D^\top)_{bk},

    where :math:`C_{bj}` counts how often task ``j`` occurs in resample ``b``
    (built with :func:`numpy.bincount`).  ``diff`` is :math:`\hat\theta_k`,
    ``se`` the SD (``ddof=1``) of :math:`\theta^*_{\cdot k}`.

    * percentile: :math:`[Q_k(\alpha), Q_k(1-\alpha)]`, :math:`\alpha =
      (1-\text{confidence})/2`, :math:`Q_k` the linear-interpolation quantile
      of :math:`\theta^*_{\cdot k}`;
    * bca: :math:`[Q_k(\alpha_{1k}), Q_k(\alpha_{2k})]` with bias correction
      :math:`\hat z_0` and jackknife acceleration :math:`\hat a` (Efron &
      Tibshirani 1993, ch. 14), exactly the formulas of
      ``scipy.stats.bootstrap(method='BCa')``.

    Each row equals ``scipy.stats.bootstrap((v_k, v_ref), lambda a, b, axis:
    np.mean(a - b, axis=axis), paired=True, method=..., n_resamples=B,
    rng=np.random.default_rng(seed))`` up to floating-point rounding, except
    that a constant difference gives a zero-width BCa interval instead of NaN.
    Cost for B = 10 000, n = 2 285, m = 12: well under a second (see
    ``benchmarks/bench_stats.py``).
    """
    all_names, mat = _method_matrix(values, names)
    if isinstance(reference, numbers.Integral) and not isinstance(reference, bool):
        if not isinstance(values, Mapping) and 0 <= reference < mat.shape[0]:
            ref_pos = int(reference)
        else:
            raise ValueError(f"reference: index {reference} not valid for these values")
    else:
        ref = str(reference)
        if ref not in all_names:
            raise ValueError(f"reference: {ref!r} not among methods {all_names}")
        ref_pos = all_names.index(ref)
    if mat.shape[0] < 2:
        raise ValueError("values: need at least one method besides the reference")
    confidence = _check_unit_open(confidence, "confidence")
    method = _check_method(method)
    n = mat.shape[1]
    idx = _resolve_indices(indices, n, n_resamples, random_state)

    others = [i for i in range(mat.shape[0]) if i != ref_pos]
    diffs = mat[others] - mat[ref_pos]  # (m-1, n)
    theta_b = _resample_means(diffs, idx)  # (B, m-1)
    lo, hi = _intervals(diffs, theta_b, confidence, method)
    B = idx.shape[0]
    se = np.std(theta_b, axis=0, ddof=1) if B > 1 else np.full(len(others), np.nan)
    return pd.DataFrame(
        {
            "method": [all_names[i] for i in others],
            "reference": all_names[ref_pos],
            "diff": diffs.mean(axis=1),
            "ci_low": lo,
            "ci_high": hi,
            "se": se,
            "n": n,
            "n_resamples": B,
            "confidence": confidence,
            "ci_method": method,
        }
    )


# ---------------------------------------------------------------------------
# randomisation test
# ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SignFlipResult:
    """Result of :func:`sign_flip_test`.

    Attributes
    ----------
    diff : float
        Observed mean difference :math:`\\bar d = \\overline{x - y}`.
    pvalue : float
        Two-sided Monte-Carlo p-value ``(1 + n_extreme) / (1 + n_resamples)``.
    n_extreme : int
        Number of sign-flipped resamples with :math:`|\\bar d^*| \\ge |\\bar d|`.
    n_resamples : int
    """

    diff: float
    pvalue: float
    n_extreme: int
    n_resamples: int


def sign_flip_test(
    x,
    y,
    n_resamples: int = 10_000,
    random_state: int | np.random.Generator = 0,
) -> SignFlipResult:
    r"""Paired randomisation (sign-flip) test of :math:`H_0`: mean of ``x - y`` is 0.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired observations.
    n_resamples : int, default 10_000
        Number of random sign vectors ``B``.
    random_state : int or numpy.random.Generator, default 0

    Returns
    -------
    SignFlipResult

    Notes
    -----
    Under :math:`H_0` the differences :math:`d_i = x_i - y_i` are symmetric
    about 0, so each sign is exchangeable.  With i.i.d. signs
    :math:`s_{bi} \in \{-1, +1\}` (from packed random bits, shape ``(B, n)``):

    .. math::
        T = |\bar d|,\qquad T^*_b = \Big|\frac1n\sum_i s_{bi} d_i\Big|
          = \frac1n\Big|2\sum_i u_{bi} d_i - \sum_i d_i\Big|,\quad u = (s+1)/2,

    and :math:`p = (1 + \#\{b : T^*_b \ge T - \gamma\}) / (1 + B)`, with the
    tolerance :math:`\gamma = 100\,\epsilon\,T` (as in
    ``scipy.stats.permutation_test``) so that resamples equal to the observed
    statistic up to rounding count as extreme.  The ``+1`` makes the test
    valid: :math:`P_{H_0}(p \le \alpha) \le \alpha`.  All ``B`` statistics are
    one matrix-vector product per block of rows.
    """
    xv = _as_1d(x, "x")
    yv = _as_1d(y, "y")
    _check_pair(xv, yv, "x", "y")
    B = _check_n_resamples(n_resamples)
    rng = _rng(random_state)
    d = xv - yv
    n = d.shape[0]
    total = d.sum()
    t_obs = abs(total) / n
    gamma = 100.0 * np.finfo(np.float64).eps * t_obs
    packed = rng.integers(0, 256, size=(B, (n + 7) // 8), dtype=np.uint8)
    n_extreme = 0
    with _single_thread_blas():
        for start in range(0, B, _BLOCK_ROWS):
            bits = np.unpackbits(packed[start : start + _BLOCK_ROWS], axis=1, count=n)
            t_b = np.abs(2.0 * (bits.astype(np.float64) @ d) - total) / n
            n_extreme += int(np.count_nonzero(t_b >= t_obs - gamma))
    return SignFlipResult(
        diff=float(total / n),
        pvalue=(1.0 + n_extreme) / (1.0 + B),
        n_extreme=n_extreme,
        n_resamples=B,
    )


# ---------------------------------------------------------------------------
# multiplicity, binary outcomes, equivalence
# ---------------------------------------------------------------------------
def holm(pvalues) -> np.ndarray:
    r"""Holm (1979) step-down adjusted p-values.

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    numpy.ndarray, shape (m,)
        Adjusted p-values, in the input order.  With :math:`p_{(1)} \le \dots
        \le p_{(m)}`:

        .. math::
            \tilde p_{(i)} = \min\Big(1, \max_{j \le i} (m - j + 1)\, p_{(j)}\Big).

        Rejecting :math:`\tilde p_i \le \alpha` controls the family-wise error
        rate at :math:`\alpha`.  Computed by
        ``statsmodels.stats.multitest.multipletests(p, method='holm')[1]``;
        tied p-values get equal adjusted values whatever their sort order.
    """
    p = _as_1d(pvalues, "pvalues")
    if (p < 0).any() or (p > 1).any():
        raise ValueError("pvalues: must lie in [0, 1]")
    return multipletests(p, method="holm")[1]


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """Result of :func:`mcnemar_exact`.

    Attributes
    ----------
    b01 : int
        Pairs where ``a`` failed and ``b`` succeeded.
    b10 : int
        Pairs where ``a`` succeeded and ``b`` failed.
    n_discordant : int
        ``b01 + b10``.
    pvalue : float
        Two-sided exact p-value (1.0 when there are no discordant pairs).
    """

    b01: int
    b10: int
    n_discordant: int
    pvalue: float


def mcnemar_exact(a, b) -> McNemarResult:
    r"""Exact McNemar test for paired binary outcomes.

    Parameters
    ----------
    a, b : array_like of bool or {0, 1}, shape (n,)
        Success of methods A and B on the same tasks.

    Returns
    -------
    McNemarResult

    Notes
    -----
    Only discordant pairs carry information.  Under :math:`H_0` (equal success
    probabilities) :math:`b_{10} \mid b_{01} + b_{10} = N \sim
    \mathrm{Binomial}(N, 1/2)`, and the two-sided exact p-value is
    :math:`\min(1, 2 P(X \le \min(b_{01}, b_{10})))`, computed by
    ``statsmodels.stats.contingency_tables.mcnemar(table, exact=True)``
    (it is 1 at :math:`N = 0` without special-casing).  This equals
    ``scipy.stats.binomtest(b10, N, 0.5).pvalue`` up to rounding (<= 1e-15).
    """
    av = _as_binary(a, "a")
    bv = _as_binary(b, "b")
    _check_pair(av, bv, "a", "b")
    b01 = int(np.count_nonzero(~av & bv))
    b10 = int(np.count_nonzero(av & ~bv))
    table = [[int(np.count_nonzero(av & bv)), b10], [b01, int(np.count_nonzero(~av & ~bv))]]
    p = float(mcnemar(table, exact=True).pvalue)
    return McNemarResult(b01=b01, b10=b10, n_discordant=b01 + b10, pvalue=p)


def wilson_ci(successes, n, confidence: float = 0.95):
    r"""Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes : int or array_like of int, shape (k,)
        Number of successes, ``0 <= successes <= n``.
    n : int or array_like of int, shape (k,)
        Number of trials, ``n >= 1``.
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    (low, high) : tuple of float, or of ndarray with shape (k,)

    Notes
    -----
    With :math:`\hat p = s/n` and :math:`z = \Phi^{-1}((1+\text{confidence})/2)`:

    .. math::
        \frac{\hat p + \frac{z^2}{2n} \pm z\sqrt{\frac{\hat p(1-\hat p)}{n}
              + \frac{z^2}{4n^2}}}{1 + \frac{z^2}{n}}.

    Computed by ``statsmodels.stats.proportion.proportion_confint(...,
    method='wilson')``, clipped to [0, 1], with the end points set to exactly
    0 at ``successes == 0`` and 1 at ``successes == n`` (their exact values).
    """
    confidence = _check_unit_open(confidence, "confidence")
    s = np.asarray(successes)
    nn = np.asarray(n)
    for arr, name in ((s, "successes"), (nn, "n")):
        if arr.size == 0:
            raise ValueError(f"{name}: empty")
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise ValueError(f"{name}: must be integer counts, got dtype {arr.dtype}")
        if np.issubdtype(arr.dtype, np.floating):
            if np.isnan(arr).any():
                raise ValueError(f"{name}: contains NaN")
            if not np.all(arr == np.round(arr)):
                raise ValueError(f"{name}: must be integer counts")
    if (nn < 1).any():
        raise ValueError(f"n: must be >= 1, got {nn.min()}")
    if (s < 0).any():
        raise ValueError(f"successes: must be >= 0, got {s.min()}")
    try:
        s_b, n_b = np.broadcast_arrays(s, nn)
    except ValueError:
        raise ValueError(f"successes and n: shapes {s.shape} and {nn.shape} do not broadcast") from None
    if (s_b > n_b).any():
        raise ValueError("successes: must be <= n")
    lo, hi = proportion_confint(s_b.astype(np.float64), n_b.astype(np.float64),
                                alpha=1.0 - confidence, method="wilson")
    # the formula gives exactly 0 at s = 0 and 1 at s = n; remove rounding noise
    lo = np.where(s_b == 0, 0.0, np.clip(lo, 0.0, 1.0))
    hi = np.where(s_b == n_b, 1.0, np.clip(hi, 0.0, 1.0))
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi


@dataclass(frozen=True, slots=True)
class TOSTResult:
    """Result of :func:`tost_paired`.

    Attributes
    ----------
    diff, se : float
        Mean paired difference :math:`\\bar d` and its standard error
        :math:`s_d/\\sqrt n`.
    df : int
        Degrees of freedom ``n - 1``.
    delta, alpha : float
    t_lower, p_lower : float
        Test of :math:`H_0: \\mu_d \\le -\\delta` (non-inferiority of ``a``).
    t_upper, p_upper : float
        Test of :math:`H_0: \\mu_d \\ge +\\delta`.
    ci_low, ci_high : float
        :math:`(1 - 2\\alpha)` t interval of :math:`\\mu_d`.
    noninferior : bool
        ``p_lower < alpha``.
    equivalent : bool
        ``max(p_lower, p_upper) < alpha`` (TOST).
    """

    diff: float
    se: float
    df: int
    delta: float
    alpha: float
    t_lower: float
    p_lower: float
    t_upper: float
    p_upper: float
    ci_low: float
    ci_high: float
    noninferior: bool
    equivalent: bool


def tost_paired(a, b, delta: float = 0.05, alpha: float = 0.05) -> TOSTResult:
    r"""Paired t-based non-inferiority / equivalence test (TOST) of ``a`` vs ``b``.

    Parameters
    ----------
    a, b : array_like, shape (n,), n >= 2
        Paired values (e.g. 0/1 success of methods A and B on the same tasks).
    delta : float > 0, default 0.05
        Margin on the mean difference scale.
    alpha : float in (0, 0.5), default 0.05

    Returns
    -------
    TOSTResult

    Notes
    -----
    With :math:`d_i = a_i - b_i`, :math:`\bar d`, :math:`SE = s_d/\sqrt n`
    (``ddof=1``) and :math:`\nu = n - 1`:

    .. math::
        t_L = \frac{\bar d + \delta}{SE},\ p_L = P(T_\nu \ge t_L)
        \quad(H_0: \mu_d \le -\delta),\qquad
        t_U = \frac{\bar d - \delta}{SE},\ p_U = P(T_\nu \le t_U)
        \quad(H_0: \mu_d \ge \delta).

    ``a`` is non-inferior to ``b`` if :math:`p_L < \alpha`; equivalent if
    :math:`\max(p_L, p_U) < \alpha`, i.e. the :math:`(1-2\alpha)` interval
    :math:`\bar d \pm t_{\nu,1-\alpha} SE` lies inside :math:`(-\delta,
    \delta)`.  For 0/1 data this is the usual large-sample (Wald-type)
    approach.

    The t statistics and p-values come from
    ``statsmodels.stats.weightstats.ttost_paired(a, b, -delta, delta)``;
    ``diff``, ``se`` and the interval are computed here with numpy.  If all
    differences are equal (:math:`SE = 0`) the p-values are the limits:
    :math:`p_L = 0` if :math:`\bar d > -\delta` else 1, :math:`p_U = 0` if
    :math:`\bar d < \delta` else 1.  statsmodels yields these itself from
    :math:`t = \pm\infty`, except on a margin (:math:`t = 0/0`), where it
    returns NaN and the p-value is set to 1 (that null holds).
    """
    av = _as_1d(a, "a")
    bv = _as_1d(b, "b")
    _check_pair(av, bv, "a", "b")
    if not isinstance(delta, numbers.Real) or isinstance(delta, bool) or not np.isfinite(delta):
        raise ValueError(f"delta: must be a finite number > 0, got {delta!r}")
    if delta <= 0:
        raise ValueError(f"delta: must be > 0, got {delta!r}")
    alpha = _check_unit_open(alpha, "alpha", upper=0.5)
    n = av.shape[0]
    if n < 2:
        raise ValueError(f"a: need at least 2 pairs for a paired t-test, got {n}")
    d = av - bv
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n))
    df = n - 1
    delta = float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):  # SE = 0: t = +-inf or 0/0
        _, (t_lower, p_lower, _), (t_upper, p_upper, _) = ttost_paired(av, bv, -delta, delta)
    p_lower = 1.0 if np.isnan(p_lower) else float(p_lower)
    p_upper = 1.0 if np.isnan(p_upper) else float(p_upper)
    half = float(stats.t.ppf(1.0 - alpha, df)) * se
    return TOSTResult(
        diff=mean,
        se=se,
        df=df,
        delta=delta,
        alpha=alpha,
        t_lower=float(t_lower),
        p_lower=p_lower,
        t_upper=float(t_upper),
        p_upper=p_upper,
        ci_low=mean - half,
        ci_high=mean + half,
        noninferior=bool(p_lower < alpha),
        equivalent=bool(max(p_lower, p_upper) < alpha),
    )


def stratified_success(success, covered, confidence: float = 0.95) -> pd.DataFrame:
    r"""Success rate stratified by whether the exposed tool set covers :math:`G_x`.

    Parameters
    ----------
    success : array_like of bool or {0, 1}, shape (n,)
        Task success.
    covered : array_like of bool or {0, 1}, shape (n,)
        Whether the tools exposed to the agent covered the gold set
        :math:`G_x` of the task.
    confidence : float in (0, 1), default 0.95
        Level of the Wilson intervals.

    Returns
    -------
    pandas.DataFrame, 3 rows (``stratum`` = 'covered', 'not_covered', 'all')
        Columns: ``stratum, n, successes, rate, ci_low, ci_high`` with
        ``rate = successes / n`` and a Wilson interval (:func:`wilson_ci`);
        a stratum with ``n = 0`` has NaN rate and interval.
    """
    s = _as_binary(success, "success")
    c = _as_binary(covered, "covered")
    _check_pair(s, c, "success", "covered")
    confidence = _check_unit_open(confidence, "confidence")
    rows = []
    for label, mask in (("covered", c), ("not_covered", ~c), ("all", np.ones_like(c))):
        k = int(np.count_nonzero(mask))
        w = int(np.count_nonzero(s & mask))
        if k > 0:
            lo, hi = wilson_ci(w, k, confidence)
            rate = w / k
        else:
            lo = hi = rate = float("nan")
        rows.append({"stratum": label, "n": k, "successes": w, "rate": rate,
                     "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows, columns=["stratum", "n", "successes", "rate", "ci_low", "ci_high"])
