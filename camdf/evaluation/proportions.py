"""Binomial proportions: Wilson score intervals (via statsmodels) and success rates by coverage stratum.

Input errors follow :mod:`camdf.evaluation.checks`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from camdf.evaluation.checks import as_binary, check_pair, check_unit_open

__all__ = ["stratified_success", "wilson_ci"]


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
    confidence = check_unit_open(confidence, "confidence")
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
    s = as_binary(success, "success")
    c = as_binary(covered, "covered")
    check_pair(s, c, "success", "covered")
    confidence = check_unit_open(confidence, "confidence")
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
