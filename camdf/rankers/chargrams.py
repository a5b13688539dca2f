"""Character n-gram TF-IDF with numpy and scipy alone: what crosscat reads of a tool's spelling.

:class:`CharTfidf` computes what scikit-learn's ``TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5),
sublinear_tf=True)`` computes (the n-grams of each word padded by a space, lowercased; ``1 + log`` term
frequencies; smoothed IDF ``log((1 + n) / (1 + df)) + 1``; rows L2-normalised) without importing scikit-learn,
whose import costs more than a shell call to ``camdf select`` may take (a test compares the two).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: The n-gram lengths.
LOW, HIGH = 3, 5


def word_ngrams(word: str) -> list[str]:
    """The n-grams of one lowercased word padded by a space (``char_wb``: a padded word shorter than n gives no
    n-gram of that length, and one no longer than n ends the lengths)."""
    w = f" {word} "
    size = len(w)
    return [w[i:i + n] for n in range(LOW, min(HIGH, size) + 1) for i in range(size - n + 1)]


def char_ngrams(text: str) -> list[str]:
    """The n-grams of ``text``'s words (lowercased, each padded by a space), as ``char_wb`` makes them."""
    return [g for w in text.lower().split() for g in word_ngrams(w)]


class CharTfidf:
    """Fitted on documents (:meth:`fit_transform`), then :meth:`transform` of any texts: CSR rows (n, V)."""

    def __init__(self):
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0)

    def _counts(self, texts: Sequence[str], grow: bool):
        """The ``1 + log`` n-gram counts of ``texts`` (CSR, columns sorted); ``grow``: new n-grams join the
        vocabulary (in order of first appearance). Each distinct word's n-grams are looked up once."""
        import scipy.sparse as sp

        vocab = self.vocabulary
        memo: dict[str, np.ndarray] = {}

        def ids(word: str) -> np.ndarray:
            grams = word_ngrams(word)
            if grow:
                return np.array([vocab.setdefault(g, len(vocab)) for g in grams], dtype=np.int64)
            return np.array([j for j in map(vocab.get, grams) if j is not None], dtype=np.int64)

        parts, lengths = [], []
        for text in texts:
            arrays = []
            for w in text.lower().split():
                got = memo.get(w)
                if got is None:
                    got = memo[w] = ids(w)
                arrays.append(got)
            parts.extend(arrays)
            lengths.append(sum(map(len, arrays)))
        width = max(len(vocab), 1)
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        keys, counts = np.unique(np.repeat(np.arange(len(texts), dtype=np.int64), lengths) * width + flat,
                                 return_counts=True)
        rows, cols = np.divmod(keys, width)
        indptr = np.searchsorted(rows, np.arange(len(texts) + 1))
        return sp.csr_matrix((np.log(counts.astype(np.float64)) + 1.0, cols, indptr), shape=(len(texts), width))

    def fit_transform(self, texts: Sequence[str]):
        self.vocabulary = {}
        tf = self._counts(texts, grow=True)
        df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
        self.idf = np.log((1.0 + len(texts)) / (1.0 + df)) + 1.0
        return self._weigh(tf)

    def transform(self, texts: Sequence[str]):
        return self._weigh(self._counts(texts, grow=False))

    def _weigh(self, tf):
        lengths = np.diff(tf.indptr)
        tf.data *= self.idf[tf.indices]
        rows = np.repeat(np.arange(tf.shape[0]), lengths)
        norms = np.sqrt(np.bincount(rows, weights=tf.data ** 2, minlength=tf.shape[0]))
        tf.data /= np.repeat(np.where(norms > 0, norms, 1.0), lengths)
        return tf
