"""Benchmarks of the vectorised core: Delta labels, and state features + CAM-DF prediction.

Labels
    Workload: 100 000 synthetic tasks x 20 ranked tools (2 000 000 decision states,
    2 100 000 prefix payoffs), exact payoff, lambda = 0.12: :func:`camdf.core.payoff.prefix_payoffs`,
    :func:`camdf.core.targets.deltas` and :func:`camdf.core.targets.stop_labels` over all tasks at once.
    Reference (the acceptance ratio): the plain per-task loop of the tests
    (``tests/unit/core/reference.py``: U_t from set inclusion and the running cost,
    Delta_t = U_t - max(U_{t+1..n}) per state) on the first ``REF_TASKS`` tasks.  Also
    timed, as a stricter yardstick: a tuned single-pass Python loop (running cost,
    reversed running maximum) on the first ``LOOP_TASKS``.  Both are checked equal to
    the vectorised Deltas.  Target: >= 5 million states/s and >= 50x the reference.

Features + prediction
    Workload: a whole cell's states (retail, and retail_d100 when built), the bm25
    ranking, schema-token costs, lambda 0.12, d 1: :meth:`StateBatch.make` (the 22 state
    features) then :meth:`CamDF.decide` (design matrix, LightGBM ``predict_proba``, walk)
    with a CAM-DF fitted on folds 1-4.  Reference: a per-task Python loop computing
    every feature of every state from the definitions, and one ``predict_proba`` call
    per task; its features and depths are checked equal to the vectorised ones.

Run as ``python benchmarks/bench_core.py`` or call :func:`run`.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_core.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import CELL_OVERRIDES, ROOT, cell_config, emit_json, load, timed  # noqa: E402

from camdf.core.instances import Instances  # noqa: E402
from camdf.core.targets import deltas, stop_labels  # noqa: E402
from camdf.core.payoff import prefix_payoffs  # noqa: E402
from tests.unit.core.reference import deltas_ref, prefix_payoffs_ref  # noqa: E402

N_TASKS = 100_000
N_TOOLS = 20
LAM = 0.12
REF_TASKS = 2_000      # subsample of the tests' reference loop
LOOP_TASKS = 10_000    # subsample of the tuned single-pass loop
TARGET_STATES_PER_S = 5e6
TARGET_RATIO = 50.0
SEED = 0


# ---------------------------------------------------------------- labels


def synthetic_tasks(n_tasks: int = N_TASKS, n_tools: int = N_TOOLS, seed: int = SEED) -> tuple[Instances, list]:
    """Random ranked tasks: G_x of 0-3 positions, an alternative set for 20% of them, log-normal costs.

    Returns the :class:`Instances` (only the fields payoffs read are meaningful) and, per
    task, ``(required positions, alternative sets)`` for the references.
    """
    rng = np.random.default_rng(seed)
    T, N = n_tasks, n_tools
    costs = rng.lognormal(0.0, 0.5, size=(T, N))
    costs /= costs.mean()
    size = rng.integers(0, 4, size=T)
    req = [np.sort(rng.choice(N, size=k, replace=False)) for k in size]
    has_alt = rng.random(T) < 0.2
    alts = [[np.sort(rng.choice(N, size=int(rng.integers(1, 3)), replace=False))] if a else [] for a in has_alt]
    member = np.zeros((T, N), dtype=bool)
    rows = np.repeat(np.arange(T), size)
    member[rows, np.concatenate(req)] = True
    # cover = min over sufficient sets of (last position + 1); an empty G_x is covered at depth 0.
    cover = np.where(size > 0, N - np.argmax(member[:, ::-1], axis=1), 0)
    alt_cover = np.array([a[0].max() + 1 if a else N + 1 for a in alts])
    cover = np.minimum(cover, alt_cover)
    depth = np.arange(N + 1)
    success = depth[None, :] >= cover[:, None]
    cum = np.concatenate([np.zeros((T, 1)), np.cumsum(member, axis=1)], axis=1)
    g = member.sum(axis=1)
    partial = np.where(g[:, None] > 0, cum / np.maximum(g, 1)[:, None], 1.0)
    inst = Instances(
        task_ids=np.arange(T).astype(str).astype(object),
        tools=np.full((T, N), "", dtype=object),
        scores=np.zeros((T, N)),
        costs=costs,
        member=member,
        success=success,
        partial=partial,
        n=np.full(T, N, dtype=np.int64),
        folds=np.zeros(T, dtype=np.int64),
        text_len=np.zeros(T),
        tool_ids=np.zeros((T, N), dtype=np.int64),
    )
    return inst, list(zip(req, alts))


def labels_vectorised(inst: Instances, lam: float = LAM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Delta, stop label and weight of every state of every task (the core path)."""
    delta = deltas(prefix_payoffs(inst, lam, "exact"))
    label, weight = stop_labels(delta)
    return delta, label, weight


def labels_loop(costs: np.ndarray, cover: np.ndarray, lam: float = LAM) -> list[tuple[list, list, list]]:
    """Plain per-task Python loop, one pass per task: U_t from a running cost, Delta_t from a reversed running max."""
    out = []
    for c_row, cov in zip(costs.tolist(), cover.tolist()):
        n = len(c_row)
        u, cost = [], 0.0
        for t in range(n + 1):
            u.append((1.0 if t >= cov else 0.0) - lam * cost)
            if t < n:
                cost += c_row[t]
        delta, label, weight = [0.0] * n, [False] * n, [0.0] * n
        best = u[n]
        for t in range(n - 1, -1, -1):
            d = u[t] - best
            delta[t], label[t], weight[t] = d, d >= 0, abs(d)
            best = max(best, u[t])
        out.append((delta, label, weight))
    return out


def labels_reference(costs: np.ndarray, sets: list, lam: float = LAM) -> list[list[float]]:
    """The tests' reference loop: payoffs by set inclusion over every prefix, Delta_t = U_t - max(U_{t+1..n})."""
    out = []
    for c_row, (req, alts) in zip(costs.tolist(), sets):
        tools = list(range(len(c_row)))
        u = prefix_payoffs_ref(tools, c_row, req.tolist(), [a.tolist() for a in alts], lam, "exact")
        d = deltas_ref(u)
        out.append((d, [x >= 0 for x in d], [abs(x) for x in d]))
    return out


def bench_labels(repeats: int = 10) -> dict:
    """Time the vectorised labels on every task and both references on subsamples."""
    inst, sets = synthetic_tasks()
    states = int(inst.n.sum())
    vec = timed(lambda: labels_vectorised(inst), repeats)  # best of several: memory-bound, sensitive to load
    delta, label, weight = vec.result
    cover = np.argmax(inst.success, axis=1)  # first depth with success (every task succeeds at depth N)

    ref = timed(lambda: labels_reference(inst.costs[:REF_TASKS], sets[:REF_TASKS]), 3)
    loop = timed(lambda: labels_loop(inst.costs[:LOOP_TASKS], cover[:LOOP_TASKS]), 3)
    for i, (d, lab, w) in [*enumerate(ref.result), *enumerate(loop.result)]:
        np.testing.assert_allclose(d, delta[i], rtol=0, atol=1e-12)
        assert lab == label[i].tolist()
        np.testing.assert_allclose(w, weight[i], rtol=0, atol=1e-12)

    rate = states / vec.best
    ref_rate = REF_TASKS * N_TOOLS / ref.best
    loop_rate = LOOP_TASKS * N_TOOLS / loop.best
    return {
        "tasks": N_TASKS,
        "tools": N_TOOLS,
        "states": states,
        "vectorised": vec.as_dict(),
        "states_per_s": rate,
        "reference_tasks": REF_TASKS,
        "reference": ref.as_dict(),
        "reference_states_per_s": ref_rate,
        "ratio_vs_reference": rate / ref_rate,
        "loop_tasks": LOOP_TASKS,
        "loop": loop.as_dict(),
        "loop_states_per_s": loop_rate,
        "ratio_vs_loop": rate / loop_rate,
        "target_states_per_s": TARGET_STATES_PER_S,
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(rate >= TARGET_STATES_PER_S and rate / ref_rate >= TARGET_RATIO),
        "load_avg": load(),
    }


# ---------------------------------------------------------------- features + prediction


def features_ref(scores, costs, p, n: int, text_len: float, lam: float, kind: str) -> list[dict]:
    """The 22 features of every state t = 0..n-1 of one task, from their definitions, in plain Python."""
    s, c = list(scores[:n]), list(costs[:n])
    q = [min(max(float(x), 0.0), 1.0) for x in p[:n]]
    lo, hi = min(s), max(s)
    z = [(x - lo) / (hi - lo) if hi > lo else 0.5 for x in s]
    cum_c = [0.0]
    for x in c:
        cum_c.append(cum_c[-1] + x)
    # P(G_x inside A_t) = prod_{j >= t} (1 - p_j), accumulated from the end as the core does.
    suff = [1.0] * (n + 1)
    for t in range(n - 1, -1, -1):
        suff[t] = suff[t + 1] * (1.0 - q[t])
    if kind == "exact":
        value = suff
    else:
        raw = [float(x) for x in p[:n]]
        total = sum(raw)
        acc, value = 0.0, [0.0]
        for x in raw:
            acc += x
            value.append(acc)
        value = [v / total if total > 0 else 1.0 for v in value]
    u = [value[t] - lam * cum_c[t] for t in range(n + 1)]
    ez = [math.exp(x) for x in z]
    total_ez = sum(ez)
    prob = [e / total_ez for e in ez]
    entropy = -sum(pr * math.log(pr) for pr in prob if pr > 0)
    total_z, total_c = sum(z), sum(c)
    rows, cum_z = [], 0.0
    for t in range(n):
        z_next = z[t + 1] if t + 1 < n else 0.0
        rows.append({
            "depth": float(t), "rel_depth": t / max(n, 1), "n_candidates": float(n),
            "next_score": s[t], "next_score_norm": z[t], "gap_prev": z[t - 1] - z[t] if t > 0 else 0.0,
            "gap_next": z[t] - z_next, "next_cost": c[t], "lam_cost": lam * c[t],
            "score_per_cost": z[t] / (c[t] if c[t] > 0 else 1.0), "cum_score": cum_z, "cum_cost": cum_c[t],
            "lam_cum_cost": lam * cum_c[t], "remaining_score": total_z - cum_z, "remaining_cost": total_c - cum_c[t],
            "p_next": float(p[t]), "p_suff": suff[t], "p_suff_next": suff[t + 1],
            "delta_hat": u[t] - max(u[t + 1:]), "text_len": float(text_len),
            "score_entropy": entropy, "lam": float(lam),
        })
        cum_z += z[t]
    return rows


def decide_ref(policy, inst: Instances, p: np.ndarray, lam: float, kind: str) -> tuple[np.ndarray, list]:
    """Per task: plain features, one ``predict_proba`` call on its states, walk to the first stop."""
    names = policy._names()
    depths, all_rows = np.empty(inst.T, dtype=np.int64), []
    for i in range(inst.T):
        n = int(inst.n[i])
        rows = features_ref(inst.scores[i], inst.costs[i], p[i], n, inst.text_len[i], lam, kind)
        all_rows.append(rows)
        X = np.array([[r[k] for k in names] + ([float(inst.tool_ids[i, t])] if policy.tool_identity else [])
                      for t, r in enumerate(rows)])
        stop = policy.model_.predict_proba(X)[:, 1] >= 0.5 if not isinstance(policy.model_, tuple) \
            else np.full(n, policy.model_[1])
        hit = np.flatnonzero(stop)
        depths[i] = hit[0] if len(hit) else n
    return depths, all_rows


def bench_features(domain: str, repeats: int = 5, ref_tasks: int | None = None) -> dict:
    """Features + CAM-DF prediction for every state of one cell, against the per-task reference."""
    from threadpoolctl import threadpool_limits

    from camdf.pipeline.assembly import Paths, cell_instances
    from camdf.core.membership import MembershipModel, cross_fit
    from camdf.policies import StateBatch
    from camdf.policies.camdf import CamDF

    cfg = cell_config([f"domain={domain}", *[o for o in CELL_OVERRIDES if not o.startswith("domain=")]])
    lam, kind = float(cfg["cost"]["lam"]), cfg["payoff"]
    with tempfile.TemporaryDirectory(prefix="bench-core-") as cache:
        inst, *_ = cell_instances(cfg, Paths(ROOT / "data", Path(cache)))
    tr = inst.folds != 0
    with threadpool_limits(limits=1, user_api="blas"):  # as inside evaluate_cell
        tr_inst = inst.subset(tr)
        p = MembershipModel().fit(tr_inst, tr_inst.member).predict_proba(inst)
        train = StateBatch.make(tr_inst, cross_fit(tr_inst, tr_inst.member), lam, kind, train=True)
        policy = CamDF(random_state=0).fit(train)

        feats = timed(lambda: StateBatch.make(inst, p, lam, kind, train=False), repeats)
        batch = feats.result
        pred = timed(lambda: policy.decide(batch), repeats)
        both = timed(lambda: policy.decide(StateBatch.make(inst, p, lam, kind, train=False)), repeats)

        k = inst.T if ref_tasks is None else min(ref_tasks, inst.T)
        sub = inst.subset(np.arange(k))
        ref = timed(lambda: decide_ref(policy, sub, p[:k], lam, kind), 3)
    depths_ref, rows = ref.result
    np.testing.assert_array_equal(depths_ref, pred.result[:k])
    for i, task_rows in enumerate(rows):
        for t, r in enumerate(task_rows):
            for name, value in r.items():
                assert abs(batch.feats[name][i, t] - value) <= 1e-9 * max(1.0, abs(value)), (name, i, t)
    states = int(inst.n.sum())
    ref_states = int(inst.n[:k].sum())
    per_state = both.best / states
    ref_per_state = ref.best / ref_states
    return {
        "domain": domain,
        "tasks": inst.T,
        "states": states,
        "features": feats.as_dict(),
        "prediction": pred.as_dict(),
        "features_and_prediction": both.as_dict(),
        "us_per_state": per_state * 1e6,
        "features_us_per_state": feats.best / states * 1e6,
        "prediction_us_per_state": pred.best / states * 1e6,
        "reference_tasks": k,
        "reference_states": ref_states,
        "reference": ref.as_dict(),
        "reference_us_per_state": ref_per_state * 1e6,
        "ratio_vs_reference": ref_per_state / per_state,
        "load_avg": load(),
    }


def run(feature_domains: tuple[str, ...] = ("retail", "retail_d100")) -> dict:
    """Both benchmarks; a feature domain whose data folder is missing is skipped and listed."""
    out = {"labels": bench_labels(), "features": [], "features_skipped": []}
    for name in feature_domains:
        if (ROOT / "data" / name / "catalog.json").is_file():
            out["features"].append(bench_features(name))
        else:
            out["features_skipped"].append(name)
    return out


def main() -> None:
    figures = run()
    lab = figures["labels"]
    print(f"labels: {lab['states_per_s'] / 1e6:.1f} M states/s ({lab['vectorised']['best_s']:.3f} s for "
          f"{lab['states']:,} states); reference loop {lab['reference_states_per_s'] / 1e3:.0f} k states/s "
          f"(x{lab['ratio_vs_reference']:.0f}); tuned single-pass loop {lab['loop_states_per_s'] / 1e3:.0f} k states/s "
          f"(x{lab['ratio_vs_loop']:.0f}); target {'met' if lab['meets_target'] else 'MISSED'}")
    for f in figures["features"]:
        print(f"features + prediction, {f['domain']}: {f['us_per_state']:.2f} us/state over {f['states']:,} states "
              f"(features {f['features_us_per_state']:.2f}, prediction {f['prediction_us_per_state']:.2f}); "
              f"reference {f['reference_us_per_state']:.1f} us/state (x{f['ratio_vs_reference']:.0f})")
    emit_json(figures)


if __name__ == "__main__":
    main()
