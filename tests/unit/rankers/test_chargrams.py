"""crosscat's character n-gram TF-IDF without scikit-learn: the cosines scikit-learn's char_wb TfidfVectorizer gives."""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from camdf.rankers.chargrams import CharTfidf, char_ngrams

DOCS = ["Refund a payment in Stripe.  Parameters: payment id.", "list   invoices", "ab", "x", "",
        "Ünïcode Straße weatherapi", "get weather forecast for a city", "Weather\tAPI\nservices"]
QUERIES = ["refund the stripe payment", "zz", "weather api straße", "", "services forecast"]


def test_the_cosines_are_scikit_learns():
    ref = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, lowercase=True,
                          dtype=np.float64)
    docs_ref, ours = ref.fit_transform(DOCS), CharTfidf()
    docs_ours = ours.fit_transform(DOCS)
    assert len(ours.vocabulary) == len(ref.vocabulary_)
    np.testing.assert_allclose((docs_ours @ docs_ours.T).toarray(), (docs_ref @ docs_ref.T).toarray(), atol=1e-12)
    q_ref, q_ours = ref.transform(QUERIES), ours.transform(QUERIES)
    np.testing.assert_allclose((q_ours @ docs_ours.T).toarray(), (q_ref @ docs_ref.T).toarray(), atol=1e-12)


def test_a_short_word_gives_its_padded_self_once():
    assert char_ngrams("a") == [" a "]
    assert char_ngrams("ab") == [" ab", "ab ", " ab "]
    assert sorted(char_ngrams("AB")) == sorted(char_ngrams("ab"))
