"""noisy_oracle: G_x membership blurred by seeded Gaussian noise, for sweeping ranking quality.

score(t, j) = q * 1[j in G_x] + (1 - q) * eps(t, j),  eps ~ N(0, 1) i.i.d.

``quality`` q lies in [0, 1]: q = 1 ranks G_x first (a perfect ranking), q = 0
is a random ranking, and in between it is membership plus noise of standard
deviation sigma = (1 - q) / q.  It reads the labels on purpose: it is a control,
not a ranker an agent could use.
"""

from __future__ import annotations

import numpy as np

from camdf.rankers.problem import Problem


#: The scorers this module declares, name -> its function here (found by camdf.rankers from the source).
SCORER_FUNCTIONS = {"noisy_oracle": "score_noisy_oracle"}


def score_noisy_oracle(problem: Problem, *, cache_dir=None, random_state: int = 0, quality: float = 0.5) -> np.ndarray:
    """Membership plus noise at the given ``quality`` in [0, 1], shape (T, A)."""
    if not 0.0 <= quality <= 1.0:
        raise ValueError(f"noisy_oracle: quality must lie in [0, 1], got {quality}")
    eps = np.random.default_rng(random_state).standard_normal(problem.mask.shape)
    return quality * problem.membership.astype(np.float64) + (1.0 - quality) * eps
