"""The cross-catalog ranker: features a tool list gives, a pool that never loses the first stage's order, and a
leave-one-catalog-out fit that never reads the left-out catalog's labels."""

import numpy as np
import pytest

from camdf.data.model import Domain, Task, Tool
from camdf.evaluation.ranking_transfer import task_quality
from camdf.rankers import crosscat as cc
from camdf.rankers import loco

VENDORS = ("stripe", "paypal", "square", "adyen", "braintree")
VERBS = ("refund", "list", "capture", "cancel", "create")
THINGS = ("payment", "invoice", "customer", "subscription")


def vendor_domain(name: str, seed: int, tasks: int = 30) -> Domain:
    """A catalog of near-duplicate vendors (the same verbs and things behind five payment vendors) and queries
    naming a vendor, a verb and a thing, G_x that one tool (and sometimes a second)."""
    rng = np.random.default_rng(seed)
    tools = [Tool(name=f"{v}_{verb}_{t}", description=f"{verb.capitalize()} a {t} in {v.capitalize()}.",
                  parameters={"type": "object", "properties": {f"{t}_id": {"type": "string"}}}, kind="read")
             for v in VENDORS for verb in VERBS for t in THINGS]
    out = []
    for i in range(tasks):
        picks = [(VENDORS[rng.integers(5)], VERBS[rng.integers(5)], THINGS[rng.integers(4)])
                 for _ in range(1 + int(rng.integers(2)))]
        text = " Then ".join(f"Please {verb} the {t} on {v}." for v, verb, t in picks)
        out.append(Task(id=f"{name}-{i}", text=text, required=tuple(dict.fromkeys("_".join(p) for p in picks))))
    return Domain(name=name, source="test", tools=tools, tasks=out, acquirable_kinds=("read",))


@pytest.fixture(scope="module")
def catalogs():
    return [loco.Catalog.from_domain(vendor_domain(f"d{k}", k)) for k in range(3)]


def test_features_are_finite_and_the_pool_follows_the_first_stage(catalogs):
    cat = catalogs[0]
    assert cat.features.shape == (30, min(cc.POOL, 100), len(cc.FEATURES))
    assert np.isfinite(cat.features).all()
    # The pool is the first stage's top P, in its order.
    first = np.take_along_axis(cat.first_rank, cat.columns, axis=1)
    assert (first == np.arange(1, cat.columns.shape[1] + 1)[None, :]).all()


def test_pooled_scores_keep_the_first_stage_order_below_the_pool():
    first_rank = np.array([[3.0, 1.0, 2.0, 5.0, 4.0]])
    columns = np.array([[1, 2]])  # the pool: the first stage's top 2
    out = cc.pooled_scores(np.array([[0.5, 2.0]]), columns, first_rank)
    order = np.argsort(-out[0], kind="stable")
    assert list(order) == [2, 1, 0, 4, 3]  # the model reorders the pool; below it, first-stage ranks 3, 4, 5
    assert out[0, 0] < 0.5  # every tool below the pool scores under the pool's lowest


def test_a_tool_never_offered_ranks_last():
    first_rank = np.array([[1.0, 4.0, 2.0]])  # the second tool's rank is past the catalog's 3 tools: never offered
    out = cc.pooled_scores(np.array([[1.0]]), np.array([[0]]), first_rank)
    assert out[0, 1] == -np.inf and np.isfinite(out[0, [0, 2]]).all()


def test_leave_one_out_reads_no_label_of_the_catalog_it_scores(catalogs):
    """Permuting the left-out catalog's gold sets changes nothing of its scores; the others' labels do."""
    base = loco.leave_one_out(catalogs, rounds=20)
    shuffled = [catalogs[0]] + [
        loco.Catalog(c.name, c.tools, c.task_ids, c.features, c.columns, c.first_rank, c.gold[::-1], c.bm25)
        for c in catalogs[1:]]
    own = loco.Catalog(catalogs[0].name, catalogs[0].tools, catalogs[0].task_ids, catalogs[0].features,
                     catalogs[0].columns, catalogs[0].first_rank, catalogs[0].gold[::-1], catalogs[0].bm25)
    again = loco.leave_one_out([own] + list(catalogs[1:]), rounds=20)
    np.testing.assert_array_equal(base["d0"]["crosscat"], again["d0"]["crosscat"])
    moved = loco.leave_one_out(shuffled, rounds=20)
    assert not np.array_equal(base["d0"]["crosscat"], moved["d0"]["crosscat"])


def test_fit_is_deterministic(catalogs):
    a = loco.score(loco.fit(catalogs[1:], rounds=20), catalogs[0])
    b = loco.score(loco.fit(catalogs[1:], rounds=20), catalogs[0])
    np.testing.assert_array_equal(a, b)


def test_task_quality_on_a_hand_built_ranking():
    scores = np.array([[6.0, 5, 4, 3, 2, 1, 0], [0.0, 1, 2, 3, 4, 5, 6]])
    gold = np.array([[1, 0, 0, 0, 0, 1, 0], [1, 0, 0, 0, 0, 0, 0]], dtype=bool)
    q = task_quality(scores, gold)
    np.testing.assert_allclose(q["recall@5"], [0.5, 0.0])
    np.testing.assert_allclose(q["all_gold@5"], [0.0, 0.0])
    np.testing.assert_allclose(q["gold_in_top20"], [1.0, 1.0])
    assert q["gold_apis@5"].sum() / q["gold_apis"].sum() == pytest.approx(1 / 3)


def test_candidates_restrict_the_ranking():
    dom = vendor_domain("c", 7, tasks=4)
    offered = tuple(t.name for t in dom.tools[:20])
    tasks = [Task(id=t.id, text=t.text, required=(offered[0],), candidates=offered) for t in dom.tasks]
    cat = loco.Catalog.from_domain(Domain(name="c", source="test", tools=dom.tools, tasks=tasks,
                                        acquirable_kinds=("read",)))
    assert (cat.first_rank[:, 20:] > len(dom.tools)).all()
    assert np.isneginf(cat.bm25[:, 20:]).all()
    scores = loco.score(loco.fit([cat], rounds=5), cat)
    assert np.isneginf(scores[:, 20:]).all() and np.isfinite(scores[:, :20]).all()
