"""The re-ranker (camdf.rankers.rerank): sentences of a query, the G_x rates it learns from, the list below its pool."""

import numpy as np

from camdf.rankers.problem import Problem, rank_matrix
from camdf.rankers.rerank import FEATURES, _LABEL_FREE, _below_pool, clauses, gold_rates, label_free_features

TOOLS = {
    "generate_password": "Generate a random password of a given length.",
    "password_strength": "Rate how strong a password is.",
    "random_password_list": "Generate a list of random passwords with letters and digits.",
    "passphrase_generator": "Generate a random passphrase or password of words.",
    "convert_units": "Convert a value from one unit of measurement to another, such as grams to pounds.",
    "weather_now": "Current weather for a city.",
}


def _problem(texts, membership=None, folds=None):
    tools = list(TOOLS)
    shape = (len(texts), len(tools))
    return Problem(task_ids=[f"t{i}" for i in range(len(texts))], texts=list(texts), tools=tools,
                   docs=[f"{n.replace('_', ' ')}. {d}" for n, d in TOOLS.items()], mask=np.ones(shape, dtype=bool),
                   membership=np.zeros(shape, dtype=bool) if membership is None else membership,
                   folds=np.zeros(len(texts), dtype=int) if folds is None else np.asarray(folds))


def test_a_query_parts_at_sentence_ends_and_semicolons_keeping_requests_of_three_words_or_more():
    assert clauses("Make ten passwords of 12 characters. Thanks! Also convert 500 grams to pounds?") == [
        "Make ten passwords of 12 characters.", "Also convert 500 grams to pounds?"]
    assert clauses("find the weather in Paris; then book a table for two") == [
        "find the weather in Paris", "then book a table for two"]
    assert clauses("Hi. Ok.") == ["Hi. Ok."]  # no sentence of three words: the whole text


def test_the_second_request_of_a_query_is_ranked_first_within_its_own_sentence(tmp_path):
    text = ("Generate ten random passwords with letters and digits for our new accounts, a password generator please. "
            "Furthermore convert 500 grams to pounds.")
    free = label_free_features(_problem([text]), cache_dir=tmp_path, n_threads=1)[0]
    converter = list(TOOLS).index("convert_units")
    whole = rank_matrix(free[None, :, _LABEL_FREE.index("bm25_raw")], np.ones((1, len(TOOLS)), dtype=bool))[0]
    assert whole[converter] > 1  # the passwords crowd the whole query's ranking
    for name in ("clause_bm25_log_rank", "clause_hybrid_log_rank"):
        assert free[converter, _LABEL_FREE.index(name)] == 0.0, name  # log 1: first within its sentence
    assert free.shape[-1] == len(_LABEL_FREE) == len(FEATURES) - 3


def test_a_training_task_never_carries_its_own_gold_in_its_rates():
    gold = np.zeros((6, len(TOOLS)), dtype=bool)
    gold[0, 4] = True               # convert_units: gold of task 0 only
    gold[1:, 0] = True              # generate_password: gold of every other task
    folds = np.array([0, 1, 2, 0, 1, 2])
    problem = _problem([f"task {i} text" for i in range(6)], gold, folds)
    train = np.arange(6)
    carried, scored = gold_rates(problem, train)
    assert carried[0, 4] == 0.0                 # task 0's own label is not in its rates
    assert scored[4] == 1 / 6                   # a scored task sees every training task's
    assert carried[0, 0] == 1.0 and carried[1, 0] == 0.75  # tool 0 out of fold: task 1 reads tasks 0, 2, 3, 5
    assert np.allclose(carried[3], [1.0, 0, 0, 0, 0, 0])  # task 3 (fold 0) reads folds 1, 2: tool 4 unseen


def test_below_its_pool_the_list_continues_in_the_first_stages_order_and_strictly_below():
    scores = np.array([[2.0, -1.0, 0.5, 9.0, 9.0, 9.0]])
    first = np.array([[1, 3, 2, 4, 6, 5]])
    in_pool = first <= 3
    out = _below_pool(scores, first, in_pool, np.ones_like(in_pool), pool=3)
    assert list(out[0, :3]) == [2.0, -1.0, 0.5]
    below = out[0, 3:]
    assert below.max() < -1.0 and list(np.argsort(-below)) == [0, 2, 1]  # ranks 4, 5, 6


def test_neighbours_and_cosines_to_the_first_tools_are_those_of_the_whole_cosine_matrix(tmp_path, monkeypatch):
    """Taken a few tools at a time (memory linear in the catalog), as from the full matrix a small catalog allows."""
    from camdf.rankers import rerank

    problem = _problem(["find the weather in Paris and convert 3 kilograms to pounds"])
    monkeypatch.setattr(rerank, "BLOCK", 4)  # 6 tools: two blocks
    rerank._CATALOG.clear()
    neighbours, vecs = rerank._catalog(problem, tmp_path, 1)
    cos = vecs @ vecs.T
    np.fill_diagonal(cos, -np.inf)
    np.testing.assert_array_equal(neighbours, np.argsort(-cos, axis=1, kind="stable")[:, :5])
    first = np.array([[4, 0, 2, 1, 3, 5]])
    got = rerank._co_retrieval(first, vecs)
    for m, column in zip(rerank.CO_DEPTHS, got):
        np.testing.assert_array_equal(column[0], cos[first[0, :m]].max(axis=0))
    rerank._CATALOG.clear()
