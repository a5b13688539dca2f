"""Paired bootstrap: one shared (B, n) index matrix per cell, resample means vectorised over every method.

Every method of a cell (one domain x budget x seed, say) is evaluated on the
same ``n`` tasks, so comparisons are *paired*: the unit of resampling is the
task, and all method-vs-reference differences of a cell are resampled with one
shared ``(B, n)`` index matrix (:func:`bootstrap_indices`).

* :func:`paired_bootstrap` -- percentile and BCa intervals of the mean
  difference of *all* methods against a reference at once, from one index
  matrix.  Resample means are computed as ``counts @ values.T / n`` (counts
  from :func:`numpy.bincount`), never with a Python loop over resamples.
  With the same seed it reproduces ``scipy.stats.bootstrap(..., paired=True)``
  (same index matrix, same quantile rule, same BCa formulas).
* :func:`bootstrap_mean_ci` -- the same for a single mean (payoff CI).

Randomness and input errors follow :mod:`camdf.evaluation.checks`.
"""

from __future__ import annotations

import contextlib
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from camdf.evaluation.checks import (
    as_1d,
    check_n_resamples,
    check_pair,
    check_unit_open,
    check_values,
    float_array,
    local_rng,
)

__all__ = [
    "BLOCK_ROWS",
    "BootstrapMeanResult",
    "bootstrap_indices",
    "bootstrap_mean_ci",
    "paired_bootstrap",
    "single_thread_blas",
]


#: Rows of the index matrix processed per block when forming resample means.
#: Measured on the reference machine (B=10k, n=2285, m=12): 128 rows was the
#: fastest of 64-1024 (the count block, 2.3 MB, stays in cache).  Fixed, so
#: results do not depend on the machine.
BLOCK_ROWS = 128

_CI_METHODS = ("percentile", "bca")


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
    n_resamples = check_n_resamples(n_resamples)
    rng = local_rng(random_state)
    return rng.integers(0, int(n), size=(n_resamples, int(n)))


def single_thread_blas():
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
    Counts come from one :func:`numpy.bincount` per block of ``BLOCK_ROWS``
    rows (row ``b``'s indices offset by ``b n``); the sums are then a float64
    matrix product ``counts @ values.T``.  For integer-valued data (successes)
    the sums are exact.  Cost: ``O(B n)`` for the counts plus ``O(B n k)``
    flops; memory ``O(BLOCK_ROWS n)`` beyond the output.
    """
    B, n = indices.shape
    vt = np.ascontiguousarray(values.T, dtype=np.float64)  # (n, k)
    out = np.empty((B, vt.shape[1]), dtype=np.float64)
    block = min(BLOCK_ROWS, B)
    offsets = (np.arange(block, dtype=np.int64) * n)[:, None]
    flat = np.empty((block, n), dtype=np.int64)
    counts = np.empty((block, n), dtype=np.float64)
    with single_thread_blas():
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
        return bootstrap_indices(n, check_n_resamples(n_resamples), random_state)
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
    xv = as_1d(x, "x")
    confidence = check_unit_open(confidence, "confidence")
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
        rows = [as_1d(v, f"values[{k!r}]") for k, v in zip(keys, values.values())]
        first = keys[0]
        for k, r in zip(keys[1:], rows[1:]):
            check_pair(rows[0], r, f"values[{first!r}]", f"values[{k!r}]")
        return keys, np.vstack(rows)
    mat = float_array(values, "values")
    if mat.ndim != 2:
        raise ValueError(f"values: must be a dict of 1-D arrays or a 2-D array (m, n), got shape {mat.shape}")
    check_values(mat, "values")
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
    confidence = check_unit_open(confidence, "confidence")
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
