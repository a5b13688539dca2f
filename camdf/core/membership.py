"""Membership model: P(ranked tool is in G_x), fitted on training tasks only.

A logistic regression on the ranker's signal (normalised and raw score, position,
reciprocal rank, catalog size) plus the tool's identity (one-hot, sparse). It feeds
the stoppers' p_next, sufficiency and plug-in features and the predict-then-act
baselines. :func:`cross_fit` gives out-of-fold probabilities inside a training set,
so that the features a stopper trains on are as noisy as the ones it meets at test.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np

from camdf.common.checked import read_checked_npz, write_checked_npz
from camdf.core.features import normalised_scores
from camdf.core.instances import Instances, truncate

#: Decimals of every membership probability handed on to a stopper. The logistic fit's BLAS
#: kernel (OpenBLAS Haswell or SkylakeX on one machine) moves probabilities by up to 1e-10;
#: rounding here keeps those last bits out of the features, so tables are kernel-independent.
PROBA_DECIMALS = 8


def round_proba(p):
    """Probabilities rounded to :data:`PROBA_DECIMALS` (numpy's rounding, the same on every path)."""
    return np.round(p, PROBA_DECIMALS)


#: The ranker-signal columns of the design, in order (the identity one-hot columns follow them).
_SIGNAL_COLUMNS = ("normalised_score", "score", "relative_position", "reciprocal_rank", "log_catalog_size")


def _signal(inst: Instances, valid: np.ndarray) -> list[np.ndarray]:
    """The ranker-signal columns of the design, each (T, N): normalised score, raw score,
    relative position, reciprocal rank, log catalog size."""
    pos = np.arange(inst.N, dtype=float)[None, :]
    n = inst.n[:, None]
    shape = valid.shape
    return [normalised_scores(inst, valid), np.nan_to_num(inst.scores), np.broadcast_to(pos / np.maximum(n, 1), shape),
            np.broadcast_to(1.0 / (pos + 1.0), shape), np.broadcast_to(np.log1p(n.astype(float)), shape)]


def _design(inst: Instances, n_vocab: int):  # a scipy.sparse CSR matrix
    import scipy.sparse as sp

    valid = inst.valid
    dense = np.stack([column[valid] for column in _signal(inst, valid)], axis=1)
    ids = inst.tool_ids[valid]
    known = ids >= 0  # tools unseen in training (id -1, at run time) get no identity column
    onehot = sp.csr_matrix(
        (np.ones(int(known.sum())), (np.flatnonzero(known), ids[known])), shape=(len(ids), n_vocab)
    )
    return sp.hstack([sp.csr_matrix(dense), onehot], format="csr")


class MembershipModel:
    """Logistic membership model over ranked positions.

    Parameters
    ----------
    C : float
        Inverse L2 strength.
    """

    def __init__(self, C: float = 1.0):
        self.C = C

    def fit(self, inst: Instances, member: np.ndarray) -> "MembershipModel":
        """Fit on the valid positions of ``inst`` with labels ``member`` (T, N) bool."""
        self.n_vocab_ = len(inst.vocab)
        self.__dict__.pop("_numbers", None)  # numbers() of an earlier fit
        y = member[inst.valid].astype(int)
        self.base_rate_ = float(y.mean()) if len(y) else 0.0
        if len(np.unique(y)) < 2:
            self.model_ = None  # one class only: predict the base rate
            return self
        from sklearn.linear_model import LogisticRegression

        X = _design(inst, self.n_vocab_)
        self.model_ = LogisticRegression(C=self.C, max_iter=2000, solver="lbfgs").fit(X, y)
        return self

    def predict_proba(self, inst: Instances) -> np.ndarray:
        """P(member) for every ranked position, (T, N); 0 in padding.

        The logistic model's decision ``x . coef + intercept`` is summed term by term in
        the column order of the design, as the sparse product in scikit-learn does, so the
        probabilities are the estimator's own, without its per-call overhead (this is the
        run-time stopper's hot path).
        """
        from scipy.special import expit

        valid = inst.valid
        if self.model_ is None:
            return np.where(valid, round_proba(self.base_rate_), 0.0)
        signal = _signal(inst, valid)
        c, cid = self.model_.coef_[0, :len(signal)], self.model_.coef_[0, len(signal):]
        d = signal[0] * c[0]
        for column, weight in zip(signal[1:], c[1:]):
            d += column * weight
        ids = inst.tool_ids
        if len(cid):  # a portable model (camdf.core.portable) has no identity columns
            d += np.where(ids >= 0, cid[np.maximum(ids, 0)], 0.0)
        d += self.model_.intercept_[0]
        return np.where(valid, round_proba(expit(d)), 0.0)

    def predict_task(self, z: list[float], scores: list[float], ids: list[int]) -> list[float]:
        """:meth:`predict_proba` for one ranked task, in plain Python (the run-time fast path).

        ``z`` are the task's normalised scores, ``ids`` the tools' vocabulary ids (-1: unseen).
        """
        return membership_task(self.numbers(), z, scores, ids)

    def numbers(self) -> dict:
        """What :func:`membership_task` needs, as plain numbers: ``coef`` (None without a model),
        ``intercept`` and ``base_rate`` (computed once per fit)."""
        cached = self.__dict__.get("_numbers")
        if cached is None:
            coef = None if self.model_ is None else self.model_.coef_[0].tolist()
            cached = self._numbers = {"coef": coef, "base_rate": float(self.base_rate_),
                                      "intercept": 0.0 if self.model_ is None else float(self.model_.intercept_[0])}
        return cached

    def to_numbers(self) -> dict:
        """The fitted model as JSON-ready numbers: :meth:`numbers` plus ``C`` and ``n_vocab``
        (:meth:`from_numbers` reads them back; its probabilities are then bit for bit these)."""
        return {**self.numbers(), "C": float(self.C), "n_vocab": int(self.n_vocab_)}

    @classmethod
    def from_numbers(cls, numbers: dict) -> "MembershipModel":
        """The fitted model of :meth:`to_numbers` (plain coefficients: nothing is unpickled).

        Raises ValueError naming the field when the numbers do not describe a model of
        ``n_vocab`` tool-identity columns.
        """
        model = cls(C=float(numbers.get("C", 1.0)))
        model.n_vocab_ = int(numbers["n_vocab"])
        model.base_rate_ = float(numbers["base_rate"])
        coef = numbers["coef"]
        if coef is None:
            model.model_ = None
            return model
        coef = np.asarray(coef, dtype=float)
        n_signal = len(_SIGNAL_COLUMNS)
        if coef.ndim != 1 or len(coef) != n_signal + model.n_vocab_ or model.n_vocab_ < 0:
            raise ValueError(f"membership.coef: expected {n_signal} + n_vocab ({model.n_vocab_}) numbers, "
                             f"got shape {coef.shape}")
        from sklearn.linear_model import LogisticRegression

        # The estimator's learned attributes, set as fit would: predict_proba of either reads only these.
        lr = LogisticRegression(C=model.C, max_iter=2000, solver="lbfgs")
        lr.coef_ = coef[None, :]
        lr.intercept_ = np.array([float(numbers["intercept"])])
        lr.classes_ = np.array([0, 1])
        lr.n_features_in_ = len(coef)
        lr.n_iter_ = np.array([0], dtype=np.int32)
        model.model_ = lr
        return model


def membership_task(numbers: dict, z: list[float], scores: list[float], ids: list[int]) -> list[float]:
    """P(member) for one ranked task from a fitted model's :meth:`MembershipModel.numbers`, in plain Python.

    The same decision, term by term, as :meth:`MembershipModel.predict_proba`; it needs no
    scikit-learn, so the run-time stopper loads without it (:mod:`camdf.runtime.lean`).
    """
    n = len(z)
    if numbers["coef"] is None:
        return [float(round_proba(numbers["base_rate"]))] * n
    c0, c1, c2, c3, c4, *cid = numbers["coef"]
    b, logn, size = numbers["intercept"], math.log1p(float(n)), max(float(n), 1.0)
    out = []
    for j in range(n):
        d = z[j] * c0
        d += scores[j] * c1
        d += j / size * c2
        d += 1.0 / (j + 1.0) * c3
        d += logn * c4
        if ids[j] >= 0:
            d += cid[ids[j]]
        d += b
        out.append(1.0 / (1.0 + math.exp(-d)) if d >= 0 else math.exp(d) / (1.0 + math.exp(d)))
    return round_proba(np.asarray(out)).tolist()

def cross_fit(
    inst: Instances, member: np.ndarray, n_folds: int = 5, random_state: int = 0, C: float = 1.0,
    fit_depth: int | None = None,
) -> np.ndarray:
    """Out-of-fold membership probabilities within ``inst`` (each task scored by a model that never saw it);
    with ``fit_depth`` each model is fitted on its tasks' first ``fit_depth`` positions and scores every position."""
    rng = np.random.default_rng(random_state)
    k = max(2, min(n_folds, inst.T))
    inner = rng.permutation(np.arange(inst.T) % k)
    p = np.zeros(inst.tools.shape)
    for f in range(k):
        te = inner == f
        fit = truncate(inst.subset(~te), fit_depth)
        model = MembershipModel(C).fit(fit, member[~te][:, :fit.N])
        p[te] = model.predict_proba(inst.subset(te))
    return p


def fold_probabilities(
    inst: Instances, member: np.ndarray, fold_list: list[int], inner_folds: int = 5, random_state: int = 0,
    cache_dir: str | Path | None = None, fit_depth: int | None = None,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Every evaluated fold's membership probabilities: ``f -> (p_test, p_train)``.

    ``p_test`` (tasks of fold f) comes from a model fitted on the other tasks with labels
    ``member``; ``p_train`` are the out-of-fold probabilities inside those training tasks
    (:func:`cross_fit`, seeded ``random_state + f``). With a learned ranker's
    ``inst.train_views`` fold f reads its own view instead, labels included (the view's
    ``member``), so both the model and the training probabilities see the training tasks
    scored by the nested cross-fit. They depend on the rankings, the labels and the folds,
    not on costs or lambda, so a lambda x d grid shares them: with ``cache_dir`` they are
    kept in ``<cache_dir>/membership/<key>.npz``, keyed by the content of every input
    (every view's too) and the source of this module, with a checksum checked on read
    (:func:`camdf.common.checked.read_checked_npz`: a file that fails it is recomputed).
    With ``fit_depth`` every model is fitted on its training tasks' first ``fit_depth`` positions
    (:func:`~camdf.core.instances.truncate`) and scores every position of the tasks it scores.
    """
    views = inst.train_views
    path = None
    if cache_dir is not None:
        h = hashlib.sha256()
        parts = [inst, *(views[f] for f in sorted(views))] if views is not None else [inst]
        for part in parts:
            labels = member if part is inst else part.member
            for a in (part.scores, part.tool_ids, part.n, part.folds, labels):
                a = np.ascontiguousarray(a)
                h.update(str((a.dtype.str, a.shape)).encode())
                h.update(a.tobytes())
        h.update(repr((sorted(fold_list), inner_folds, random_state, len(inst.vocab), fit_depth)).encode())
        h.update(Path(__file__).read_bytes())
        path = Path(cache_dir, "membership", h.hexdigest()[:32] + ".npz")
        z = read_checked_npz(path)
        if z is not None and all(f"te{f}" in z and f"tr{f}" in z for f in fold_list):
            return {f: (z[f"te{f}"], z[f"tr{f}"]) for f in fold_list}
    out = {}
    for f in fold_list:
        source, labels = (inst, member) if views is None else (views[f], views[f].member)
        te = source.folds == f
        tr_inst = source.subset(~te)
        fit = truncate(tr_inst, fit_depth)
        p_te = MembershipModel().fit(fit, labels[~te][:, :fit.N]).predict_proba(source.subset(te))
        p_tr = cross_fit(tr_inst, labels[~te], n_folds=inner_folds, random_state=random_state + f, fit_depth=fit_depth)
        out[f] = (p_te, p_tr)
    if path is not None:
        write_checked_npz(path, {**{f"te{f}": p for f, (p, _) in out.items()},
                                 **{f"tr{f}": p for f, (_, p) in out.items()}})
    return out
