"""Input checks shared by the statistics modules: arrays, pairs, levels, resample counts, random states.

Conventions (every statistics module of :mod:`camdf.evaluation`)
-----------------------------------------------------------------
* Randomness only enters through a ``random_state`` argument (a non-negative
  ``int`` or a :class:`numpy.random.Generator`), turned into a local
  :func:`numpy.random.default_rng` (:func:`local_rng`); nothing touches global
  RNG state.
* Bad input raises :class:`ValueError` whose message starts with the name of
  the offending argument, e.g. ``"x and y: unequal lengths 5 and 4"``.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_1d",
    "as_binary",
    "check_n_resamples",
    "check_pair",
    "check_unit_open",
    "check_values",
    "float_array",
    "local_rng",
]


def local_rng(random_state: int | np.random.Generator) -> np.random.Generator:
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


def float_array(x, name: str) -> np.ndarray:
    """``np.asarray(x, float64)``, with a ValueError naming ``name`` when it cannot convert."""
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not convertible to a float array ({exc})") from None


def as_1d(x, name: str) -> np.ndarray:
    """Float64 1-D copy-free view of ``x``; rejects empty, NaN and inf."""
    arr = float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be 1-D, got shape {arr.shape}")
    check_values(arr, name)
    return arr


def check_values(arr: np.ndarray, name: str) -> None:
    """Refuse an empty array or one holding NaN or inf (ValueError naming ``name``)."""
    if arr.size == 0:
        raise ValueError(f"{name}: empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: contains NaN")
    if np.isinf(arr).any():
        raise ValueError(f"{name}: contains inf")


def check_pair(x: np.ndarray, y: np.ndarray, xname: str, yname: str) -> None:
    """Refuse paired arrays of unequal length (ValueError naming both)."""
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{xname} and {yname}: unequal lengths {x.shape[0]} and {y.shape[0]}")


def as_binary(x, name: str) -> np.ndarray:
    """Boolean 1-D array from bool or 0/1 values; anything else is a ValueError naming ``name``."""
    arr = as_1d(x, name)
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name}: must be binary (bool or 0/1)")
    return arr.astype(bool)


def check_unit_open(value, name: str, upper: float = 1.0) -> float:
    """``value`` as a float in the open interval (0, ``upper``) (a confidence or a level)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name}: must be a real number in (0, {upper:g}), got {value!r}")
    value = float(value)
    if not (0.0 < value < upper):
        raise ValueError(f"{name}: must be in (0, {upper:g}), got {value!r}")
    return value


def check_n_resamples(n_resamples) -> int:
    """``n_resamples`` as a positive int (bools refused)."""
    if (
        not isinstance(n_resamples, numbers.Integral)
        or isinstance(n_resamples, bool)
        or n_resamples < 1
    ):
        raise ValueError(f"n_resamples: must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)
