"""The built-in ranker's index cache: the same scores as a fresh index, bit for bit; keyed by content; bounded."""

import threading

import numpy as np
import pytest

from camdf.data.model import Tool
from camdf.rankers.lexical import bm25_scores
from camdf.rankers.text import tool_document
from camdf.runtime import bm25_index
from camdf.runtime.bm25_index import INDEXES, LRU, bm25_tool_scores
from camdf.runtime.tooltext import describe_tool

WORDS = ("order refund shipping weather flight user invoice coupon review address account ticket lead deal "
         "contact repo issue branch payment customer report calendar event file folder message channel").split()


def _catalog(rng, n):
    """``n`` random tools in the shapes harnesses send (OpenAI, MCP, Anthropic, plain), words drawn from WORDS."""
    tools = []
    for i in range(n):
        name = "_".join(rng.choice(WORDS, 2)) + f"_{i}"
        desc = " ".join(rng.choice(WORDS, rng.integers(0, 12)))
        props = {p: {"type": "string"} for p in rng.choice(WORDS, rng.integers(0, 4), replace=False)}
        schema = {"type": "object", "properties": props}
        shape = i % 4
        tools.append({"type": "function", "function": {"name": name, "description": desc, "parameters": schema}}
                     if shape == 0 else {"name": name, "description": desc, "inputSchema": schema} if shape == 1
                     else {"name": name, "description": desc, "input_schema": schema} if shape == 2
                     else {"name": name, "description": desc, "parameters": schema})
    return tools


def _uncached(query, tools):
    """The ranker before the cache: every document tokenised and indexed for the query."""
    plain = [describe_tool(t) for t in tools]
    docs = [tool_document(Tool(p["name"], p["description"], p["parameters"])) for p in plain]
    return bm25_scores([query], docs)[0]


@pytest.fixture(autouse=True)
def _empty_cache():
    INDEXES.clear()
    yield
    INDEXES.clear()


@pytest.mark.parametrize("seed", range(6))
def test_cached_scores_are_the_fresh_index_scores_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    tools = _catalog(rng, int(rng.integers(1, 300)))
    for k in range(4):  # the first builds the index, the others hit it
        query = " ".join(rng.choice(WORDS, 1 + k))
        got = bm25_tool_scores(query, tools)
        want = _uncached(query, tools)
        assert got.dtype == np.float64 and got.shape == (len(tools),)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), (seed, query)
    assert (INDEXES.misses, INDEXES.hits) == (1, 3)


def test_the_key_is_the_content_not_the_list():
    tools = _catalog(np.random.default_rng(0), 40)
    bm25_tool_scores("refund my order", tools)
    copy = [dict(t) for t in tools]  # other objects, the same tools: a hit
    bm25_tool_scores("refund my order", copy)
    assert (INDEXES.misses, INDEXES.hits) == (1, 1)
    copy[3] = {**copy[3], "description": "book a flight"}  # a changed tool: a miss, and its own scores
    scores = bm25_tool_scores("book a flight", copy)
    assert INDEXES.misses == 2
    assert np.array_equal(scores, _uncached("book a flight", copy))


def test_the_cache_is_bounded_and_least_recently_used_goes_first():
    lru = LRU(2)
    built = []
    for key in ("a", "b", "a", "c", "b"):
        lru.get(key, lambda key=key: built.append(key) or key.upper())
    assert built == ["a", "b", "c", "b"] and len(lru) == 2  # "b" went when "c" came ("a" was used after it)
    rng = np.random.default_rng(1)
    for _ in range(bm25_index.CACHE_SIZE + 3):
        bm25_tool_scores("order", _catalog(rng, 5))
    assert len(INDEXES) == bm25_index.CACHE_SIZE


def test_threads_scoring_at_once_get_the_same_scores():
    tools = _catalog(np.random.default_rng(2), 200)
    queries = ["refund my order", "weather report", "open a ticket for the customer", "book a calendar event"]
    want = {q: _uncached(q, tools) for q in queries}
    errors = []

    def work(k):
        try:
            for i in range(20):
                q = queries[(k + i) % len(queries)]
                assert np.array_equal(bm25_tool_scores(q, tools), want[q])
        except AssertionError as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(INDEXES) == 1


@pytest.mark.parametrize("query, tools, says", [
    ("the a of", [{"name": "get_order", "description": "Get an order"}], r"^query: no word the built-in bm25"),
    ("refund", [{"name": "x", "description": "the a"}], r"^tools: no tool name, description or parameter has"),
    ("refund", [{"name": "get_order"}, {"description": "no name"}], r"^tools\[1\]: expected a tool with a name"),
])
def test_bad_requests_are_refused_naming_the_field(query, tools, says):
    with pytest.raises(ValueError, match=says):
        bm25_tool_scores(query, tools)


def test_a_list_of_the_same_tool_objects_is_read_once_and_a_new_object_is_read_again():
    from camdf.runtime.bm25_index import LRU, same_tools

    cache, reads = LRU(4), []
    tools = [{"name": "get_order", "description": "Get an order."}, {"name": "refund", "description": "Refund it."}]
    read = lambda ts: reads.append(len(ts)) or [t["description"] for t in ts]  # noqa: E731
    assert same_tools(cache, tools, read) == ["Get an order.", "Refund it."]
    assert same_tools(cache, list(tools), read) == ["Get an order.", "Refund it."]  # a new list, the same objects
    assert reads == [2]
    changed = [tools[0], {"name": "refund", "description": "Refund a delivered order."}]
    assert same_tools(cache, changed, read) == ["Get an order.", "Refund a delivered order."]
    assert reads == [2, 2]
