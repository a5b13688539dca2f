"""LightGBM text models read within the project's bounds and evaluated with numpy alone.

A fitted booster ships as the text ``lightgbm.Booster.model_to_string()`` writes
(:mod:`camdf.policies.boosting`). :func:`read_forest` checks that text (:func:`camdf.policies.tree_text.parse_model`:
bounded trees, leaves and nodes, feature indices within the rule's columns, binary trees, finite numbers)
and builds a :class:`Forest` of flat arrays from it. It is also the gate before LightGBM sees a model
(:func:`camdf.policies.boosting.read_booster`): a hostile text (``num_leaves=2000000000``) makes LightGBM's
own parser abort the process, while this one raises a one-line ValueError naming the tree and the field.

:meth:`Forest.raw_score` gives ``Booster.predict(X, raw_score=True)`` to the last bit, vectorised over rows:
every (row, tree) pair moves one level down per numpy step, with LightGBM's decisions - a numerical split
sends ``x <= threshold`` left, a missing value of its missing type (zero, NaN) to its default side, and
reads NaN as 0 unless its missing type is NaN; a categorical split sends left the truncated integers in its
bitset, and NaN or a negative value right; ``|x| <= 1e-35f`` is read as 0 - and the trees' leaf values are
summed in LightGBM's order. It imports only numpy and the standard library, so the lean run-time stopper
(:mod:`camdf.policies.camdf_portable`) decides with it without LightGBM.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from camdf.policies.tree_text import parse_model

#: LightGBM's ``kZeroThreshold`` (``1e-35f``): a value this close to 0 is read as 0.
ZERO = float(np.float32(1e-35))


@dataclass(frozen=True)
class Forest:
    """A checked LightGBM model as flat arrays over all trees' splits (S) and leaves.

    A child (``left``, ``right``) and a tree's ``root`` are a split's index (``>= 0``) or ``~leaf`` for a
    leaf's index into ``leaf_value``. ``words`` holds the category bitsets; ``cat_start``/``cat_words`` say
    where each categorical split's begins and how many 32-bit words it has.
    """

    n_features: int
    root: np.ndarray          # (T,) int64
    feature: np.ndarray       # (S,) int64
    threshold: np.ndarray     # (S,) float64
    left: np.ndarray          # (S,) int64
    right: np.ndarray         # (S,) int64
    default_left: np.ndarray  # (S,) bool
    missing: np.ndarray       # (S,) int8: 0 none, 1 zero, 2 NaN
    categorical: np.ndarray   # (S,) bool
    cat_start: np.ndarray     # (S,) int64
    cat_words: np.ndarray     # (S,) int64
    words: np.ndarray         # (W,) uint32
    leaf_value: np.ndarray    # (sum of leaves,) float64
    depth: int                # the deepest leaf's number of splits above it
    average: bool             # average_output (random forest): the sum is divided by the number of trees

    @property
    def n_trees(self) -> int:
        return len(self.root)

    def raw_score(self, X, block: int = 2048) -> np.ndarray:
        """``Booster.predict(X, raw_score=True)``: the summed leaf values of every row, (n,) float64.

        ``X`` is (n, n_features); ``block`` rows at a time go through all trees at once.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X: expected (n, {self.n_features}) features, got shape {X.shape}")
        X = np.where(np.abs(X) <= ZERO, 0.0, X)  # LightGBM drops near-zero values from a dense row
        return np.concatenate([self._block(X[i:i + block]) for i in range(0, len(X), block)] + [np.zeros(0)])

    def _block(self, X: np.ndarray) -> np.ndarray:
        n, T = len(X), self.n_trees
        state = np.tile(self.root, n)  # (row, tree) pairs, row-major
        start = np.repeat(np.arange(n, dtype=np.int64) * X.shape[1], T)
        flat = X.ravel()
        live = np.flatnonzero(state >= 0)
        # Numerical splits with no missing type and no NaN to read: a value goes left iff it is <= the threshold.
        plain = self._plain and not np.isnan(flat).any()
        for _ in range(self.depth):
            if not len(live):
                break
            s = state[live]
            x = flat[start[live] + self.feature[s]]
            go = x <= self.threshold[s] if plain else self._left(x, s)
            step = np.where(go, self.left[s], self.right[s])
            state[live] = step
            live = live[step >= 0]
        values = self.leaf_value[~state].reshape(n, T)
        # LightGBM adds the trees one after the other from 0.0; cumsum adds in that order (np.sum would not).
        raw = np.cumsum(values, axis=1)[:, -1] if T else np.zeros(n)
        return raw / T if self.average else raw

    @functools.cached_property
    def _plain(self) -> bool:
        """Every split numerical with missing type None (a zero is then a number like any other)."""
        return not (self.categorical.any() or self.missing.any())

    def _left(self, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Whether each value ``x`` goes left at its split ``s`` (LightGBM's ``NumericalDecision`` and
        ``CategoricalDecision``)."""
        miss = self.missing[s]
        nan = np.isnan(x)
        x0 = np.where(nan & (miss != 2), 0.0, x)  # near-zero values are 0 already: IsZero is x0 == 0
        with np.errstate(invalid="ignore"):
            go = x0 <= self.threshold[s]
        default = ((miss == 1) & (x0 == 0.0)) | ((miss == 2) & nan)
        go = np.where(default, self.default_left[s], go)
        if len(self.words):
            cat = self.categorical[s]
            go = np.where(cat, self._category(x, s), go)
        return go

    def _category(self, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Whether each value goes left at its categorical split: its truncated integer is in the split's
        bitset; NaN, a value <= -1 or beyond the int range goes right."""
        ok = ~np.isnan(x) & (x > -1.0) & (x < 2.0**31)
        cat = np.trunc(np.where(ok, x, 0.0)).astype(np.int64)
        word, bit = cat >> 5, (cat & 31).astype(np.uint32)
        inside = ok & (word < self.cat_words[s])
        taken = self.words[np.where(inside, self.cat_start[s] + word, 0)]
        return inside & (((taken >> bit) & 1) == 1)


def read_forest(text, where: str, n_features: int | None = None) -> Forest:
    """The :class:`Forest` of a LightGBM text model, checked against the project's bounds.

    Parameters
    ----------
    text : str
        ``Booster.model_to_string()``.
    where : str
        Named in every refusal (a file, ``rule.booster``).
    n_features : int, optional
        The columns the rule declares (its features, then the tool identity): ``max_feature_idx`` must be
        ``n_features - 1``.

    Raises
    ------
    ValueError
        One line naming ``where``, the tree and the field, and what was expected.
    """
    cols = parse_model(text, where, n_features)
    n = cols["n"]
    m = n - 1
    split_base, leaf_base = np.cumsum(m) - m, np.cumsum(n) - n
    owner = np.repeat(np.arange(len(n)), m)

    def glob(child: np.ndarray) -> np.ndarray:  # a tree's own child index -> the forest's
        return np.where(child >= 0, split_base[owner] + child, ~(leaf_base[owner] + ~child))

    forest = Forest(cols["width"], np.where(m > 0, split_base, ~leaf_base), cols["split_feature"],
                    cols["threshold"], glob(cols["left_child"]), glob(cols["right_child"]),
                    (cols["decision_type"] & 2) > 0, ((cols["decision_type"] >> 2) & 3).astype(np.int8),
                    cols["categorical"], cols["cat_start"], cols["cat_words"], cols["words"], cols["leaf_value"],
                    0, bool(cols["average"]))
    return Forest(**{**forest.__dict__, "depth": _depth(forest, owner, where)})


def _depth(forest: Forest, owner: np.ndarray, where: str) -> int:
    """The most splits on a path from a root to a leaf; ValueError naming the tree when a split is not reached
    from its root (children in a cycle: each split has one parent, checked, so each is visited at most once)."""
    reached = np.zeros(len(forest.feature), dtype=bool)
    frontier = forest.root[forest.root >= 0]
    depth = 0
    while len(frontier):
        reached[frontier] = True
        depth += 1
        children = np.concatenate([forest.left[frontier], forest.right[frontier]])
        frontier = children[children >= 0]
    if not reached.all():
        raise ValueError(f"{where}: tree {owner[np.argmin(reached)]}: left_child/right_child: a split not reached "
                         "from the root")
    return depth
