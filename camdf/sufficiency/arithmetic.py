"""Recover the arithmetic behind a number to communicate that no tool returns.

A total refund or a price difference is not a value any read tool returns; the
agent computes it (with ``calculate``) from numbers it has looked up. When the
gold plan has no ``calculate`` call giving the number, :func:`find_expression`
looks for it as a signed sum of at most ``max_terms`` numbers, searched first
within one record (one call's output, e.g. the item prices of one order) and
then across records. Smaller expressions win, so that a coincidence among many
numbers is not preferred to a short sum; the search is exact on cents, and
small integers (counts of passengers or bags) are not operands.
"""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations, product
from typing import Iterable, Sequence


def cents(s: str) -> int:
    return int((Decimal(s) * 100).to_integral_value())


def _fmt(c: int) -> str:
    s = f"{c // 100}.{c % 100:02d}"
    return s[:-3] if s.endswith(".00") else s.rstrip("0")


def _expression(terms: Sequence[tuple[int, int]]) -> str:
    """Render signed cents terms, positives first (largest first), as an expression."""
    ordered = sorted(terms, key=lambda t: (-t[0], -t[1]))
    out = _fmt(ordered[0][1])
    for sign, c in ordered[1:]:
        out += (" + " if sign > 0 else " - ") + _fmt(c)
    return out


def _ranked(terms: list[tuple[int, int]]) -> tuple[int, list[tuple[int, int]]]:
    """Rank of a candidate: fewer subtractions first (a total is a sum), then its terms, largest first."""
    ordered = sorted(terms, key=lambda t: (-t[0], -t[1]))
    return sum(sg < 0 for sg, _ in terms), ordered


def _search(target: int, values: list[int], max_terms: int) -> list[tuple[int, int]] | None:
    """Signed terms (sign, cents), 2 to ``max_terms`` (at most 5) of them, over distinct positions of
    ``values``, summing to +-target; fewest terms first, then the smallest term list."""
    n = len(values)
    idx = range(n)
    pairs: dict[int, list[tuple[int, int, int, int]]] | None = None
    for k in range(2, min(max_terms, 5) + 1):
        if k == 2:
            best = None
            for i, j in combinations(idx, 2):
                for sj in (1, -1):
                    if abs(values[i] + sj * values[j]) == target:
                        cand = _ranked([(1, values[i]), (sj, values[j])])
                        best = cand if best is None or cand < best else best
            if best is not None:
                return best[1]
            continue
        if pairs is None:  # signed pairs, for meeting in the middle
            pairs = {}
            for i, j in combinations(idx, 2):
                for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                    pairs.setdefault(si * values[i] + sj * values[j], []).append((i, si, j, sj))
        # The left part has k - 2 terms, its first sign +; the sign of the whole is free (goal +-target).
        signs = list(product((1, -1), repeat=k - 3))
        best = None
        for left in combinations(idx, k - 2):
            for rest in signs:
                lsigns = (1, *rest)
                part = sum(s * values[i] for s, i in zip(lsigns, left))
                for goal in (target - part, -target - part):
                    for i, si, j, sj in pairs.get(goal, ()):
                        if i in left or j in left:
                            continue
                        flip = 1 if goal == target - part else -1
                        terms = [(flip * s, values[p]) for s, p in zip(lsigns, left)]
                        terms += [(flip * si, values[i]), (flip * sj, values[j])]
                        if not any(sg > 0 for sg, _ in terms):
                            continue
                        cand = _ranked(terms)
                        if best is None or cand < best:
                            best = cand
        if best is not None:
            return best[1]
    return None


def find_expression(target: str, groups: Iterable[Iterable[str]], max_terms: int = 4,
                    max_terms_union: int = 5) -> str | None:
    """An expression over the numbers of ``groups`` whose value is +-``target``, or None.

    Parameters
    ----------
    target : str
        A canonical number (see :func:`camdf.sufficiency.values.canonical_number`).
    groups : iterable of iterables of str
        Canonical numbers, one group per record (a number may repeat: two
        bookings of 621 each). Every group is searched on its own and the
        expression with fewest terms wins (ties: the earlier group); only when
        no group has one are all groups searched together.
    max_terms : int
        Largest number of terms within one group.
    max_terms_union : int
        Largest number of terms across groups (at most 5).

    Returns
    -------
    str or None
        E.g. ``"466.75 + 288.82 - 46.66"``; its value's magnitude equals the target.
    """
    goal = cents(target)
    # Small integers are counts (passengers, bags), not amounts.
    groups = [sorted(c for c in (cents(v) for v in g) if c and not (c <= 1000 and c % 100 == 0)) for g in groups]
    best = None
    for g in groups:
        terms = _search(goal, g, max_terms if best is None else len(best) - 1)
        if terms is not None and (best is None or len(terms) < len(best)):
            best = terms
    if best is None:
        best = _search(goal, sorted(c for g in groups for c in g), max_terms_union)
    return None if best is None else _expression(best)
