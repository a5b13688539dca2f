"""The conformal-risk-control arithmetic of CAM-DF-risk (the rule: :mod:`camdf.policies.risk`), numpy only.

Miss scores of calibration tasks, the threshold tau at a target miss rate alpha, the
depths a threshold gives a batch, and the same depth for one ranked task in plain Python
(the run-time path, which loads without scikit-learn).
"""

from __future__ import annotations

import math

import numpy as np

from camdf.common.dials import Dial


#: The run-time dial of the conformal risk rules (camdf_risk, risk_set): the target miss rate.
ALPHA = Dial("alpha", default=0.05, lo=0.0, hi=1.0, what="a target miss rate")


#: JSON holds no infinity, so a rule's portable numbers (``to_numbers``) write a calibration score or threshold of
#: -inf (a task no prefix of whose list is sufficient: its tools fell outside the ranked list) as ``LIST_MISS`` and
#: +inf (a task that needs no tool) as ``NO_TOOL_NEEDED``. Miss risks and finite scores lie in [0, 1], so both
#: sentinels keep their order against every one of them, and :func:`read_scores` maps them back exactly.
LIST_MISS = -1.0
NO_TOOL_NEEDED = 2.0


def portable_scores(values) -> list[float]:
    """Calibration scores or a threshold as JSON numbers: -inf -> :data:`LIST_MISS`, +inf -> :data:`NO_TOOL_NEEDED`."""
    return [LIST_MISS if x == -math.inf else NO_TOOL_NEEDED if x == math.inf else float(x)
            for x in np.asarray(values, dtype=float).ravel()]


def read_scores(values) -> np.ndarray:
    """The inverse of :func:`portable_scores`: the sentinels back to -inf and +inf (other values as they are)."""
    arr = np.asarray(values, dtype=float)
    return np.where(arr == LIST_MISS, -np.inf, np.where(arr == NO_TOOL_NEEDED, np.inf, arr))


def check_alpha(value, field: str = "alpha") -> float:
    """``value`` as a float in (0, 1), else ValueError naming ``field`` (:data:`ALPHA`'s check)."""
    return ALPHA.check(value, field)


def miss_scores(risk: np.ndarray, success: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per task, the smallest threshold at which the rule misses: ``m_i = min_{t < t*_i} risk[i, t]``.

    ``risk`` (T, N + 1) is the estimated miss risk at each depth, ``success`` (T, N + 1)
    whether A_t is sufficient. +inf when A_0 is already sufficient (no threshold misses);
    -inf when no prefix of the list is (every threshold misses).
    """
    T, width = success.shape
    depth = np.arange(width)[None, :]
    sufficient = success & (depth <= n[:, None])
    first = np.where(sufficient.any(axis=1), np.argmax(sufficient, axis=1), -1)
    before = depth < first[:, None]
    m = np.where(before, risk, np.inf).min(axis=1)
    return np.where(first < 0, -np.inf, m)


def crc_threshold(m: np.ndarray, alpha: float, random_state: int | None = None) -> float:
    """The conformal-risk-control threshold for the 0/1 miss loss ``1{m_i < tau}``.

    k = floor(alpha (n + 1)); -inf (expose everything) when k = 0.

    ``random_state=None``: tau = the k-th smallest calibration score. At most k - 1
    calibration tasks lie strictly below it, and a new exchangeable task falls strictly
    below it with probability <= k / (n + 1) <= alpha; with many tied scores (a coarse
    ranker) far below it, since a tie at tau never counts as a miss.

    ``random_state`` an int: the randomised threshold, which breaks ties at random (the
    randomised conformal quantile). Each calibration score gets a seeded uniform key and
    the new task one more (one per fitted rule, drawn after the calibration keys); tasks
    are ordered by (score, key), tau is the k-th smallest calibration pair, and the new
    task misses when its pair lies below it. Its miss probability is then k / (n + 1)
    exactly when the calibration tasks and the new task are exchangeable (the keys make
    every pair distinct), so ties no longer make the rule conservative. The pair is
    returned as one number: the k-th smallest score when the new task's key is above
    the pair's key (a tie is no miss), else the next float up (a tie is a miss), so
    :func:`risk_depths` and :func:`task_risk_depth` use it unchanged.
    """
    n = len(m)
    k = math.floor(alpha * (n + 1) + 1e-12)
    if k < 1 or n == 0:
        return -math.inf
    m = np.asarray(m, dtype=float)
    if random_state is None:
        return float(np.sort(m)[min(k, n) - 1])
    rng = np.random.default_rng(random_state)
    keys, key_new = rng.random(n), rng.random()
    i = np.lexsort((keys, m))[min(k, n) - 1]
    tau = float(m[i])
    return tau if key_new >= keys[i] else float(np.nextafter(tau, math.inf))


def risk_depths(risk: np.ndarray, n: np.ndarray, tau: float) -> np.ndarray:
    """The shallowest depth t <= n_i with ``risk[i, t] < tau``, else n_i (expose everything)."""
    width = risk.shape[1]
    below = (risk < tau) & (np.arange(width)[None, :] <= n[:, None])
    return np.where(below.any(axis=1), np.argmax(below, axis=1), n)


def task_risk_depth(p: list[float], tau: float) -> int:
    """:func:`risk_depths` for one ranked task with membership probabilities ``p``, in plain Python.

    The miss risk at depth t is ``1 - prod_{j >= t} (1 - p_j)``, multiplied from the end as
    :func:`camdf.core.features.sufficiency_curve` does; the depth is the shallowest t with risk
    below ``tau``, else the whole list.
    """
    n = len(p)
    suff, tail = [1.0] * (n + 1), 1.0
    for j in range(n - 1, -1, -1):
        tail *= 1.0 - min(max(p[j], 0.0), 1.0)
        suff[j] = tail
    return next((t for t in range(n + 1) if 1.0 - suff[t] < tau), n)
