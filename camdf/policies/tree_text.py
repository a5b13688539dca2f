"""LightGBM's text model format parsed into flat columns, checked against the project's bounds first.

The text ``lightgbm.Booster.model_to_string()`` writes is a header (``key=value`` lines), ``Tree=k``
blocks (one ``key=value`` line per field, each a space-separated array) at the offsets ``tree_sizes``
gives, ``end of trees``, then feature importances, LightGBM's parameters and ``pandas_categorical:null``.
:func:`parse_model` reads all of it and refuses, in one line naming the text, the tree and the field,
whatever the project does not write or :mod:`camdf.policies.trees` does not evaluate: a key it does not
know, a number not written as LightGBM writes numbers (so that this parser and LightGBM's read the same
value), a non-finite number, more trees, leaves or nodes than the bounds, a feature index beyond
``max_feature_idx`` or the rule's columns, children that do not form a binary tree, several classes,
linear trees, an unknown objective. Each field is parsed once over all trees (one numpy conversion per
field), so the shipped 200-tree booster is read in milliseconds.
"""

from __future__ import annotations

import re

import numpy as np

#: Bounds of a model the project reads (a shipped booster has 200 trees of 31 leaves).
MAX_TREES = 10_000
MAX_LEAVES = 1 << 17
MAX_NODES = 1 << 22
MAX_FEATURES = 100_000
MAX_CAT_WORDS = 1 << 20
MAX_CHARS = 256 * 2**20
_INT = r"-?\d{1,10}"
_NUM = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d{1,3})?"
_INTS = re.compile(rf"(?:{_INT}(?: {_INT})*)?")
_NUMS = re.compile(rf"(?:{_NUM}(?: {_NUM})*)?")
_PARAM = re.compile(r"\[[A-Za-z0-9_]+: [^\[\]]*\]")
_IMPORTANCE = re.compile(r"[^\s=]+=\d{1,12}")
_OBJECTIVE = re.compile(rf"binary sigmoid:{_NUM}|regression")
#: Header keys (``key=value``; ``average_output`` stands alone) and the keys of a tree block, as LightGBM writes them.
_HEADER = {"version", "num_class", "num_tree_per_iteration", "label_index", "max_feature_idx", "objective",
           "feature_names", "feature_infos", "monotone_constraints", "tree_sizes", "average_output"}
_TREE = {"num_leaves", "num_cat", "is_linear", "shrinkage", "cat_boundaries", "cat_threshold", "split_feature",
         "decision_type", "left_child", "right_child", "internal_count", "split_gain", "threshold",
         "internal_value", "internal_weight", "leaf_value", "leaf_weight", "leaf_count"}
#: Per split: (integer, required when the tree has a split); informative fields are checked, not kept.
_SPLITS = {"split_feature": (True, True), "threshold": (False, True), "left_child": (True, True),
           "right_child": (True, True), "decision_type": (True, False), "split_gain": (False, False),
           "internal_value": (False, False), "internal_weight": (False, False), "internal_count": (True, False)}


def _values(value: str, where: str, n: int | None, integer: bool, low: float | None = None,
            high: float | None = None) -> np.ndarray:
    """The space-separated numbers of a field, exactly ``n`` of them (None: any count), checked."""
    if not (_INTS if integer else _NUMS).fullmatch(value):
        raise ValueError(f"{where}: expected {'integers' if integer else 'decimal numbers'} separated by spaces")
    parts = value.split()
    if n is not None and len(parts) != n:
        raise ValueError(f"{where}: expected {n} values, got {len(parts)}")
    out = np.array([int(v) for v in parts] if integer else [float(v) for v in parts],
                   dtype=np.int64 if integer else np.float64)
    if not integer and not np.isfinite(out).all():
        raise ValueError(f"{where}: expected finite numbers")
    if len(out) and ((low is not None and out.min() < low) or (high is not None and out.max() > high)):
        raise ValueError(f"{where}: expected values in [{low:g}, {high:g}], got {out.min():g} .. {out.max():g}")
    return out


def _header(lines: list[str], where: str) -> tuple[dict[str, str], int]:
    """The header's keys and the index of its first line after it (the first ``Tree=``)."""
    if not lines or lines[0] != "tree":
        raise ValueError(f"{where}: expected LightGBM's text model format (a first line 'tree')")
    head: dict[str, str] = {}
    i = 1
    while i < len(lines) and not lines[i].startswith("Tree="):
        line = lines[i]
        key, sep, value = line.partition("=")
        if line == "average_output":
            key, sep = line, "="
        if line and (not sep or key not in _HEADER or key in head):
            raise ValueError(f"{where}: header line {line[:60]!r}: expected one of {sorted(_HEADER)} once each")
        if line:
            head[key] = value
        i += 1
    for key in ("version", "num_class", "num_tree_per_iteration", "max_feature_idx", "objective", "feature_names",
                "feature_infos", "tree_sizes"):
        if key not in head:
            raise ValueError(f"{where}: {key}: missing from the header")
    return head, i


def _check_header(head: dict[str, str], where: str, n_features: int | None) -> int:
    """The header checked; the number of feature columns."""
    if head["version"] != "v4":
        raise ValueError(f"{where}: version: expected v4, got {head['version'][:40]!r}")
    for key in ("num_class", "num_tree_per_iteration"):
        if head[key] != "1":
            raise ValueError(f"{where}: {key}: expected 1 (one raw score per row), got {head[key][:40]!r}")
    if not _OBJECTIVE.fullmatch(head["objective"]):
        raise ValueError(f"{where}: objective: expected 'binary sigmoid:<number>' or 'regression', "
                         f"got {head['objective'][:60]!r}")
    width = int(_values(head["max_feature_idx"], f"{where}: max_feature_idx", 1, True, 0, MAX_FEATURES - 1)[0]) + 1
    if n_features is not None and width != n_features:
        raise ValueError(f"{where}: max_feature_idx: expected {n_features - 1} (the rule's {n_features} columns), "
                         f"got {width - 1}")
    for key in ("feature_names", "feature_infos", "monotone_constraints"):
        if key in head and len(head[key].split(" ")) != width:
            raise ValueError(f"{where}: {key}: expected {width} entries (max_feature_idx + 1)")
    if "label_index" in head:
        _values(head["label_index"], f"{where}: label_index", 1, True, 0, MAX_FEATURES)
    return width


def _blocks(lines: list[str], start: int, where: str, sizes: np.ndarray) -> tuple[list[slice], int]:
    """The line ranges of the ``Tree=k`` blocks and the index of the ``end of trees`` line; each block's
    length in characters must be its ``tree_sizes`` entry (LightGBM seeks to the blocks by it)."""
    heads = [i for i in range(start, len(lines)) if lines[i].startswith("Tree=")]
    try:
        end = lines.index("end of trees", start)
    except ValueError:
        raise ValueError(f"{where}: expected an 'end of trees' line") from None
    if len(heads) > MAX_TREES:
        raise ValueError(f"{where}: {len(heads)} trees, more than the {MAX_TREES} a camdf model may have")
    if any(h > end for h in heads) or (heads and heads[0] != start):
        raise ValueError(f"{where}: expected the trees right after the header, before 'end of trees'")
    if len(sizes) != len(heads):
        raise ValueError(f"{where}: tree_sizes: expected {len(heads)} sizes (one per tree), got {len(sizes)}")
    offsets = np.cumsum([0] + [len(line) + 1 for line in lines])
    blocks = [slice(h, e) for h, e in zip(heads, heads[1:] + [end])]
    for k, b in enumerate(blocks):
        if lines[b.start] != f"Tree={k}":
            raise ValueError(f"{where}: tree {k}: expected the line 'Tree={k}', got {lines[b.start][:40]!r}")
        if offsets[b.stop] - offsets[b.start] != sizes[k]:
            raise ValueError(f"{where}: tree_sizes[{k}]: expected {offsets[b.stop] - offsets[b.start]} (its block's "
                             f"length), got {sizes[k]}")
    return blocks, end


def _tail(lines: list[str], where: str) -> None:
    """What follows ``end of trees``: feature importances, LightGBM's parameters, ``pandas_categorical:null``."""
    if len(lines) > 10_000:
        raise ValueError(f"{where}: more than 10000 lines after 'end of trees'")
    fixed = {"", "feature_importances:", "parameters:", "end of parameters", "pandas_categorical:null"}
    for line in lines:
        if line not in fixed and not _PARAM.fullmatch(line) and not _IMPORTANCE.fullmatch(line):
            raise ValueError(f"{where}: after 'end of trees': unexpected line {line[:60]!r}")




def _tree_fields(lines: list[str], where: str) -> dict[str, str]:
    """One ``Tree=k`` block's ``key=value`` lines, each key known and given once."""
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if line and (not sep or key not in _TREE or key in fields):
            raise ValueError(f"{where}: line {line[:60]!r}: expected one of {sorted(_TREE)} once each")
        if line:
            fields[key] = value
    return fields


def _at(counts: np.ndarray, index: int) -> int:
    """The tree holding item ``index`` of a field concatenated over trees of ``counts`` items each."""
    return int(np.searchsorted(np.cumsum(counts), index, side="right"))


def _column(fields: list[dict[str, str]], key: str, sizes: np.ndarray, integer: bool, where: str,
            low=None, high=None) -> np.ndarray:
    """Field ``key`` of every tree, concatenated (tree k gives ``sizes[k]`` values), checked: written as
    LightGBM writes numbers, finite, within ``low``/``high`` (numbers, or one bound per value)."""
    strings = [f.get(key, "") for f in fields]
    counts = np.array([s.count(" ") + 1 if s else 0 for s in strings], dtype=np.int64)
    bad = np.flatnonzero(counts != sizes)
    if len(bad):
        k = int(bad[0])
        raise ValueError(f"{where}: tree {k}: {key}: expected {sizes[k]} values, got {counts[k]}")
    joined = " ".join(s for s in strings if s)
    if not (_INTS if integer else _NUMS).fullmatch(joined):
        k = next(k for k, s in enumerate(strings) if not (_INTS if integer else _NUMS).fullmatch(s))
        raise ValueError(f"{where}: tree {k}: {key}: expected {'integers' if integer else 'decimal numbers'} "
                         "separated by single spaces")
    values = np.array(joined.split(), dtype=np.int64 if integer else np.float64)
    wrong = ~np.isfinite(values) if not integer else np.zeros(len(values), bool)
    if low is not None:
        wrong |= values < low
    if high is not None:
        wrong |= values > high
    if wrong.any():
        i = int(np.argmax(wrong))
        k = _at(counts, i)
        lo = low if np.ndim(low) == 0 else low[i]
        hi = high if np.ndim(high) == 0 else high[i]
        raise ValueError(f"{where}: tree {k}: {key}: expected {'' if integer else 'finite '}values in [{lo}, {hi}], "
                         f"got {values[i].item()!r}")
    return values


def _shape(left: np.ndarray, right: np.ndarray, n: np.ndarray, where: str) -> None:
    """Every split but a tree's root is the child of one split of its tree, every leaf of a tree with a split
    too (reachability from the root is checked when the arrays are assembled)."""
    m = n - 1
    split_base, leaf_base = np.cumsum(m) - m, np.cumsum(n) - n
    owner = np.tile(np.repeat(np.arange(len(n)), m), 2)
    children = np.concatenate([left, right])
    inner = children >= 0
    splits = np.bincount(split_base[owner[inner]] + children[inner], minlength=int(m.sum()))
    leaves = np.bincount(leaf_base[owner[~inner]] + ~children[~inner], minlength=int(n.sum()))
    want_splits = np.ones(int(m.sum()), np.int64)
    want_splits[split_base[m > 0]] = 0
    want_leaves = np.repeat((m > 0).astype(np.int64), n)
    bad = np.concatenate([np.repeat(np.arange(len(n)), m)[splits != want_splits],
                          np.repeat(np.arange(len(n)), n)[leaves != want_leaves]])
    if len(bad):
        raise ValueError(f"{where}: tree {bad.min()}: left_child/right_child: expected every split but the root and "
                         "every leaf to be the child of exactly one split")


def _categories(fields: list[dict[str, str]], cols: dict[str, np.ndarray], where: str) -> None:
    """The category bitsets of the categorical splits (``cat_boundaries``, ``cat_threshold`` of the trees with
    ``num_cat > 0``): ``cat_start``/``cat_words`` per split into ``words``."""
    m, num_cat = cols["n"] - 1, cols["num_cat"]
    owner = np.repeat(np.arange(len(m)), m)
    categorical = (cols["decision_type"] & 1).astype(bool)
    if (categorical & (num_cat[owner] == 0)).any():
        k = int(owner[np.argmax(categorical & (num_cat[owner] == 0))])
        raise ValueError(f"{where}: tree {k}: decision_type: a categorical split in a tree with num_cat=0")
    start, count = np.zeros(len(owner), np.int64), np.zeros(len(owner), np.int64)
    words, base = [], 0
    split_base = np.cumsum(m) - m
    for k in np.flatnonzero(num_cat > 0):  # rare: the shipped boosters split on no category
        tree, f = f"{where}: tree {k}", fields[k]
        bounds = _values(f.get("cat_boundaries", ""), f"{tree}: cat_boundaries", int(num_cat[k]) + 1, True, 0,
                         MAX_CAT_WORDS)
        if bounds[0] != 0 or (np.diff(bounds) < 0).any():
            raise ValueError(f"{tree}: cat_boundaries: expected non-decreasing offsets from 0")
        words.append(_values(f.get("cat_threshold", ""), f"{tree}: cat_threshold", int(bounds[-1]), True, 0,
                             2**32 - 1))
        at = split_base[k] + np.flatnonzero(categorical[split_base[k]:split_base[k] + m[k]])
        index = cols["threshold"][at]
        if (index != np.round(index)).any() or (index < 0).any() or (index >= num_cat[k]).any():
            raise ValueError(f"{tree}: threshold: a categorical split's must be a category set index in "
                             f"[0, {num_cat[k]})")
        index = index.astype(np.int64)
        start[at], count[at] = base + bounds[index], bounds[index + 1] - bounds[index]
        base += int(bounds[-1])
        if base > MAX_CAT_WORDS:
            raise ValueError(f"{tree}: cat_threshold: more than {MAX_CAT_WORDS} category words in all")
    cols.update(categorical=categorical, cat_start=start, cat_words=count,
                words=np.concatenate(words + [np.zeros(0, np.int64)]).astype(np.uint32))


def parse_model(text, where: str, n_features: int | None = None) -> dict:
    """The checked columns of a LightGBM text model.

    Returns ``width`` (feature columns), ``average`` (``average_output``), per tree ``n`` (leaves) and
    ``num_cat``, per split over all trees (tree 0's first) ``split_feature``, ``threshold``, ``left_child``,
    ``right_child``, ``decision_type``, ``categorical``, ``cat_start``, ``cat_words``, per leaf ``leaf_value``,
    and ``words`` (the category bitsets). ``n_features``: the columns the rule declares (``max_feature_idx``
    must be ``n_features - 1``). ValueError naming ``where``, the tree and the field otherwise.
    """
    if not isinstance(text, str) or len(text) > MAX_CHARS or not text.isascii() or "\r" in text or "\0" in text:
        raise ValueError(f"{where}: expected LightGBM's text model format (ASCII lines, at most "
                         f"{MAX_CHARS >> 20} MB)")
    lines = text.split("\n")
    head, start = _header(lines, where)
    width = _check_header(head, where, n_features)
    blocks, end = _blocks(lines, start, where, _values(head["tree_sizes"], f"{where}: tree_sizes", None, True, 1,
                                                        MAX_CHARS))
    _tail(lines[end + 1:], where)
    fields = [_tree_fields(lines[b.start + 1:b.stop], f"{where}: tree {k}") for k, b in enumerate(blocks)]
    ones = np.ones(len(fields), np.int64)
    n = _column(fields, "num_leaves", ones, True, where)
    values = np.array([f["leaf_value"].count(" ") + 1 if f.get("leaf_value") else 0 for f in fields], np.int64)
    if (n != values).any():  # what the arrays hold, before any bound: a leaf count is never taken on its word
        k = int(np.argmax(n != values))
        raise ValueError(f"{where}: tree {k}: num_leaves={n[k]} but {values[k]} leaf values")
    _column(fields, "num_leaves", ones, True, where, 1, MAX_LEAVES)
    if n.sum() > MAX_NODES:
        raise ValueError(f"{where}: num_leaves: {n.sum()} leaves in all, more than the {MAX_NODES} read")
    m = n - 1
    cols = {"width": width, "average": "average_output" in head, "n": n,
            "num_cat": _column(fields, "num_cat", ones, True, where, 0, m),
            "leaf_value": _column(fields, "leaf_value", n, False, where)}
    linear = [k for k, f in enumerate(fields) if f.get("is_linear", "0") != "0"]
    if linear:
        raise ValueError(f"{where}: tree {linear[0]}: is_linear: expected 0 (linear trees are not read)")
    given = lambda key: np.array([key in f for f in fields], dtype=bool)  # noqa: E731
    _column(fields, "shrinkage", given("shrinkage").astype(np.int64), False, where)
    for key in ("leaf_weight", "leaf_count"):  # informative; a one-leaf tree may leave them empty
        _column(fields, key, np.where(np.array([bool(f.get(key)) for f in fields]) | (m > 0), n, 0),
                key == "leaf_count", where)
    per_split = np.repeat(n, m)
    bounds = {"split_feature": (0, width - 1), "decision_type": (0, 15), "left_child": (-per_split, per_split - 2),
              "right_child": (-per_split, per_split - 2)}
    for key, (integer, required) in _SPLITS.items():
        absent = np.flatnonzero(~given(key) & (m > 0))
        if len(absent) and required:
            raise ValueError(f"{where}: tree {absent[0]}: {key}: missing")
        if key == "decision_type":  # LightGBM reads an absent decision_type as 0 (numerical, no missing type)
            for k in absent:
                fields[k][key] = " ".join(["0"] * int(m[k]))
        sizes = np.where(given(key) | (key == "decision_type"), m, 0)
        cols[key] = _column(fields, key, sizes, integer, where, *bounds.get(key, (None, None)))
    if (((cols["decision_type"] >> 2) & 3) == 3).any():
        k = _at(m, int(np.argmax(((cols["decision_type"] >> 2) & 3) == 3)))
        raise ValueError(f"{where}: tree {k}: decision_type: expected missing type 0, 1 or 2 (bits 2-3), got 3")
    _shape(cols["left_child"], cols["right_child"], n, where)
    _categories(fields, cols, where)
    return cols
