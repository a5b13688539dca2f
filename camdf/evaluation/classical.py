"""Classical tests: Holm's step-down adjustment, exact McNemar and paired TOST.

:func:`mcnemar_exact` and :func:`tost_paired` are validated wrappers that delegate the
computation to statsmodels (``mcnemar(exact=True)``, ``ttost_paired``) and add only the
documented edge cases where statsmodels returns NaN or rounding noise. :func:`holm` is
statsmodels' ``multipletests(method='holm')`` arithmetic in four numpy lines, without the
full garbage collection that function runs on every call (~80 ms in a pipeline process,
twice per cell); the tests hold it to statsmodels' values bit for bit. Input errors follow
:mod:`camdf.evaluation.checks`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.weightstats import ttost_paired

from camdf.evaluation.checks import as_1d, as_binary, check_pair, check_unit_open

__all__ = ["McNemarResult", "TOSTResult", "holm", "mcnemar_exact", "tost_paired"]


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
        rate at :math:`\alpha`.  The same operations, in the same order, as
        ``statsmodels.stats.multitest.multipletests(p, method='holm')[1]`` (equal
        bit for bit); tied p-values get equal adjusted values whatever their sort order.
    """
    p = as_1d(pvalues, "pvalues")
    if (p < 0).any() or (p > 1).any():
        raise ValueError("pvalues: must lie in [0, 1]")
    order = np.argsort(p)
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)), 1.0)
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


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
    av = as_binary(a, "a")
    bv = as_binary(b, "b")
    check_pair(av, bv, "a", "b")
    b01 = int(np.count_nonzero(~av & bv))
    b10 = int(np.count_nonzero(av & ~bv))
    table = [[int(np.count_nonzero(av & bv)), b10], [b01, int(np.count_nonzero(~av & ~bv))]]
    p = float(mcnemar(table, exact=True).pvalue)
    return McNemarResult(b01=b01, b10=b10, n_discordant=b01 + b10, pvalue=p)


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
    av = as_1d(a, "a")
    bv = as_1d(b, "b")
    check_pair(av, bv, "a", "b")
    if not isinstance(delta, numbers.Real) or isinstance(delta, bool) or not np.isfinite(delta):
        raise ValueError(f"delta: must be a finite number > 0, got {delta!r}")
    if delta <= 0:
        raise ValueError(f"delta: must be > 0, got {delta!r}")
    alpha = check_unit_open(alpha, "alpha", upper=0.5)
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
