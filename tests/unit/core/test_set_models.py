"""The set models' numpy weights equal the plain per-task definitions they replaced (the reference below)."""

import math

import numpy as np
import pytest

from camdf.core.set_models import MAX_SETS, NeighbourSets, SeenSets, neighbour_set_weights, seen_set_weights, _top


def _positions(ids):
    out = {}
    for j, t in enumerate(ids):
        if t >= 0 and t not in out:
            out[int(t)] = j
    return out


def _seen_reference(support, p, ids):
    pos = _positions(ids)
    logit = {t: math.log(min(max(p[j], 1e-6), 1 - 1e-6)) - math.log1p(-min(max(p[j], 1e-6), 1 - 1e-6))
             for t, j in pos.items()}
    scored = [(sum(logit[t] for t in s), [pos[t] for t in s]) for s in support if all(t in pos for t in s)]
    if not scored:
        return []
    top = max(v for v, _ in scored)
    w = [math.exp(v - top) for v, _ in scored]
    return _top([(x / sum(w), s) for x, (_, s) in zip(w, scored)])


def _neighbour_reference(train_dense, sets, k, z, ids):
    x = [0.0] * len(train_dense[0])
    for v, t in zip(z, ids):
        if 0 <= t < len(x):
            x[t] = max(x[t], v)
    d = [sum((a - b) ** 2 for a, b in zip(x, row)) for row in train_dense]
    near = sorted(range(len(d)), key=lambda i: d[i])[:k]
    pos = _positions(ids)
    merged = {}
    for i in near:
        if all(t in pos for t in sets[i]):
            merged[sets[i]] = merged.get(sets[i], 0.0) + 1.0 / len(near)
    return _top([(w, [pos[t] for t in s]) for s, w in merged.items()])


def _tasks(rng, T, V, n):
    """T tasks listing n of V tools (some unseen: id -1), a G_x of 1-9 listed tools each; scores in [0, 1]."""
    ids = np.array([rng.choice(V, n, replace=False) for _ in range(T)])
    ids[rng.random((T, n)) < 0.05] = -1
    member = np.zeros((T, n), dtype=bool)
    for i in range(T):
        member[i, rng.choice(n, int(rng.integers(1, 10)), replace=False)] = True
    return rng.random((T, n)), ids, member, np.ones((T, n), dtype=bool)


@pytest.mark.parametrize("V", [12, 300])
def test_seen_set_weights_equal_the_plain_definition_exactly(V):
    rng = np.random.default_rng(V)
    z, ids, member, valid = _tasks(rng, 400, V, 10)
    model = SeenSets().fit(ids, member, valid)
    assert max(len(s) for s in model.support_) >= 8  # sets long enough to need more than one block of a sum
    p = rng.random(z.shape)
    got = model.weights(p, ids, valid)
    # 12 tools: some task lists more seen sets than are decided on; 300: few sets fully listed, yet some
    assert max(len(w) for w in got) == (MAX_SETS if V == 12 else max(len(w) for w in got)) > 0
    for i in range(len(ids)):
        assert got[i] == _seen_reference(model.support_, p[i].tolist(), ids[i].tolist())
        assert seen_set_weights(model.support_, p[i].tolist(), ids[i].tolist()) == got[i]  # padded built here


@pytest.mark.parametrize("V", [12, 300])
def test_neighbour_weights_equal_the_plain_definition_and_survive_the_json_numbers(V):
    rng = np.random.default_rng(V + 1)
    z, ids, member, valid = _tasks(rng, 300, V, 10)
    ids[3] = rng.choice(V, 10, replace=False)  # every tool known, so tasks 0-3 are training rows 0-3
    z[:3] = z[3]  # three exact duplicates of task 3: equal distances, ties broken by training order
    ids[:3] = ids[3]
    model = NeighbourSets(5).fit(z, ids, member, valid, V)
    back = NeighbourSets.from_numbers(model.to_numbers())
    assert np.array_equal(back.train_, model.train_) and back.sets_ == model.sets_
    dense = model.train_.tolist()
    tz, tids, _, tvalid = _tasks(rng, 60, V, 10)
    tz[0], tids[0] = z[3], ids[3]
    got = back.weights(tz, tids, tvalid)
    for i in range(len(tids)):
        assert got[i] == _neighbour_reference(dense, model.sets_, 5, tz[i].tolist(), tids[i].tolist())
        assert neighbour_set_weights(model.train_, model.sets_, 5, tz[i].tolist(), tids[i].tolist()) == got[i]
    # k = 2 among four tasks at distance 0: the first two in training order, as the plain sort keeps them
    near = neighbour_set_weights(model.train_, model.sets_, 2, tz[0].tolist(), tids[0].tolist())
    assert near == _neighbour_reference(dense, model.sets_, 2, tz[0].tolist(), tids[0].tolist())
    assert model.sets_[0] != model.sets_[1] and {tuple(sorted(tids[0][s])) for _, s in near} <= set(model.sets_[:2])
