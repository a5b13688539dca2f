"""The runtime's built-in ranker: the shipped crosscat model (text, no pickle), its index kept per tool list and
giving the scores a fresh index gives, and bm25 when an install has no model."""

import json

import numpy as np
import pytest

from camdf.rankers.crosscat import CatalogIndex, rank_query
from camdf.runtime import builtin_ranker
from camdf.runtime.bm25_index import bm25_tool_scores
from tests.unit.rankers.test_crosscat import vendor_domain


def _tools(seed: int = 0):
    dom = vendor_domain("v", seed)
    return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in dom.tools], dom


def test_the_package_ships_the_model_as_text_with_its_provenance():
    folder = builtin_ranker.model_dir()
    text = (folder / builtin_ranker.MODEL).read_text(encoding="utf-8")
    assert text.startswith("tree\n")  # LightGBM's text form: read by its parser, nothing executed
    manifest = json.loads((folder / builtin_ranker.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["ranker"] == "crosscat" and len(manifest["catalogs"]) >= 9
    assert builtin_ranker.builtin_ranker() == "crosscat"


def test_scores_from_the_kept_index_are_those_of_a_fresh_one():
    tools, dom = _tools()
    import lightgbm as lgb

    booster = lgb.Booster(model_str=(builtin_ranker.model_dir() / builtin_ranker.MODEL).read_text(encoding="utf-8"))
    fresh = CatalogIndex.build([t["name"] for t in tools], [t["description"] for t in tools],
                               [tuple(t["parameters"]["properties"]) for t in tools])
    for task in dom.tasks[:5]:
        got = builtin_ranker.tool_scores(task.text, tools)
        # LightGBM itself on a fresh index: the same scores (the runtime evaluates the trees with numpy)
        assert np.array_equal(got, rank_query(fresh, lambda X: booster.predict(X, raw_score=True), task.text))
        assert np.array_equal(builtin_ranker.tool_scores(task.text, [dict(t) for t in tools]), got)  # a hit
    # A changed description is a new index: its tool is ranked from its new text.
    changed = [dict(t) for t in tools]
    changed[0]["description"] = "Translate a poem into French."
    top = int(np.argmax(builtin_ranker.tool_scores("translate this poem into french", changed)))
    assert changed[top]["name"] == tools[0]["name"]


def test_it_finds_the_named_vendors_tool_first():
    tools, dom = _tools(3)
    hits = [tools[int(np.argmax(builtin_ranker.tool_scores(t.text, tools)))]["name"] in t.required for t in dom.tasks]
    assert np.mean(hits) >= 0.8


def test_a_wordless_request_is_refused_naming_the_field():
    tools, _ = _tools()
    with pytest.raises(ValueError, match="^query: no word"):
        builtin_ranker.tool_scores("?? !!", tools)
    with pytest.raises(ValueError, match=r"^tools\[1\]"):
        builtin_ranker.tool_scores("refund a payment", [tools[0], {"description": "no name"}])


def test_without_the_shipped_model_the_ranker_is_bm25(monkeypatch, tmp_path):
    tools, dom = _tools()
    monkeypatch.setattr(builtin_ranker, "model_dir", lambda: tmp_path)  # an install without the model files
    builtin_ranker._booster.cache_clear()
    try:
        assert builtin_ranker.builtin_ranker() == "bm25"
        assert np.array_equal(builtin_ranker.tool_scores(dom.tasks[0].text, tools),
                              bm25_tool_scores(dom.tasks[0].text, tools))
    finally:
        builtin_ranker._booster.cache_clear()
