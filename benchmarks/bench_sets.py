"""Decision time of the set rules against the prefix rules, for one request of 7, 100 and 1,000 candidates (issue 32, point 4).

Each request is one synthetic ranked task, so the benchmark needs no data: seven
plausible tools (membership probabilities Beta(0.5, 2)) and, beyond them, distractors a
membership model finds unlikely (Beta(0.2, 2000), mean 1e-4), sorted as a ranking would;
costs log-normal. Per request and
rule, the decision alone is timed (the membership model that produces p is shared by
every rule and left out):

- plugin_set: :func:`camdf.core.sets.plugin_set` (numpy) and
  :func:`camdf.core.sets.task_plugin_set` (plain Python);
- risk_set: :meth:`camdf.core.risk_sets.RiskSet.predict` (numpy) and
  :func:`camdf.core.risk_sets.task_risk_set` (plain Python);
- against the prefix rules on the same request: camdf_risk's depth
  (:func:`camdf.core.conformal.risk_depths` on the sufficiency curve, and its plain-Python
  :func:`camdf.core.conformal.task_risk_depth`) and the plug-in argmax depth
  (``argmax_t P_hat(G inside A_t) - lam * C(A_t)``, numpy).

- cv_set (issue 38): each member of :data:`camdf.policies.cv_set.POOL`, fitted on 200 synthetic
  training tasks over seven known tools, deciding the same request (the tools beyond the seven
  are unseen: id -1), by the rule's numpy path (``select`` on a one-task batch) and its
  plain-Python path (:func:`camdf.policies.plain.cv_set_task`, what the lean loader runs).

Each figure is the median of ``CALLS`` calls after a warm-up, with numpy on one thread;
ratios are set rule / prefix rule on the same path (numpy / numpy, Python / Python).
Run: python benchmarks/bench_sets.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_sets.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import load  # noqa: E402

from camdf.core.conformal import risk_depths, task_risk_depth  # noqa: E402
from camdf.core.features import sufficiency_curve  # noqa: E402
from camdf.core.payoff import cumulative_costs  # noqa: E402
from camdf.core.risk_sets import RiskSet, task_risk_set  # noqa: E402
from camdf.core.sets import plugin_set, sufficient_sets, task_plugin_set  # noqa: E402

SIZES = (7, 100, 1000)
CALLS = {7: 3000, 100: 2000, 1000: 500}
LAM = 0.12
ALPHA = 0.1
SEED = 0


def _probabilities(T: int, n: int, rng) -> np.ndarray:
    p = np.concatenate([rng.beta(0.5, 2.0, (T, min(n, 7))), rng.beta(0.2, 2000.0, (T, max(0, n - 7)))], axis=1)
    return -np.sort(-p, axis=1)


def _request(n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _probabilities(1, n, rng), rng.lognormal(0.0, 0.5, (1, n)), np.ones((1, n), dtype=bool)


def _risk_rule(n: int, rng) -> RiskSet:
    """A RiskSet calibrated on 200 synthetic tasks of n candidates (only its threshold matters here)."""
    p = _probabilities(200, n, rng)
    member = rng.random((200, n)) < p
    sets, present = sufficient_sets([[np.flatnonzero(row)] for row in member], n)
    return RiskSet(alpha=ALPHA, random_state=SEED).fit(p, rng.lognormal(0.0, 0.5, (200, n)),
                                                       np.ones((200, n), dtype=bool), sets, present)


def _median_us(call, calls: int) -> float:
    for _ in range(min(50, calls)):
        call()
    times = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        call()
        times[i] = time.perf_counter() - t0
    return float(np.median(times) * 1e6)


def _cv_training(rng, T: int = 200):
    """200 synthetic training tasks over seven tools: scores shift up for members; every tool listed."""
    from camdf.core.instances import Instances, curves_from_sets

    A = 7
    member = rng.random((T, A)) < rng.beta(0.6, 1.4, A)
    scores = rng.normal(0.0, 1.0, (T, A)) + 1.5 * member
    order = np.argsort(-scores, axis=1, kind="stable")
    rows = np.arange(T)[:, None]
    member = member[rows, order]
    success, partial = curves_from_sets(member, [[np.flatnonzero(m)] for m in member], np.full(T, A))
    tools = np.array([f"t{j}" for j in range(A)], dtype=object)
    return Instances(task_ids=np.array([f"x{i}" for i in range(T)], dtype=object), tools=tools[order],
                     scores=scores[rows, order], costs=rng.lognormal(0.0, 0.5, (T, A)), member=member,
                     success=success, partial=partial, n=np.full(T, A), folds=np.zeros(T, dtype=np.int64),
                     text_len=np.zeros(T), tool_ids=order, vocab=list(tools))


def _cv_request(n: int, p: np.ndarray, costs: np.ndarray, rng):
    """The request as a one-task Instances (seven known tools, the rest unseen) and as a OneTask."""
    from camdf.core.features import task_normalised_scores
    from camdf.core.instances import Instances
    from camdf.policies.plain import OneTask

    scores = -np.sort(-rng.normal(0.0, 1.0, n))[None, :]
    ids = np.full((1, n), -1, dtype=np.int64)
    ids[0, :min(n, 7)] = rng.permutation(7)[:min(n, 7)]
    inst = Instances(task_ids=np.array(["r"], dtype=object), tools=np.array([[f"c{j}" for j in range(n)]], dtype=object),
                     scores=scores, costs=costs, member=np.zeros((1, n), dtype=bool),
                     success=np.zeros((1, n + 1), dtype=bool), partial=np.zeros((1, n + 1)), n=np.array([n]),
                     folds=np.zeros(1, dtype=np.int64), text_len=np.zeros(1), tool_ids=ids, vocab=[f"t{j}" for j in range(7)])
    sl, il = scores[0].tolist(), ids[0].tolist()
    pl = p[0].tolist()
    task = OneTask(sl, costs[0].tolist(), il, task_normalised_scores(sl), LAM, "exact", 0.0,
                   membership=lambda z, s, i: pl)
    return inst, task


def cv_set_rows(rng) -> list[dict]:
    """Median decision time (us) of every cv_set pool member for one request of each size, numpy and Python."""
    from camdf.policies.base import StateBatch
    from camdf.policies.cv_set import POOL, CVSet
    from camdf.policies.plain import cv_set_task

    train = _cv_training(rng)
    batch = StateBatch(train, np.clip(np.where(train.member, 0.7, 0.2), 0, 1), LAM, "exact", {})
    rules = {name: CVSet(pool=(name,)).fit(batch) for name, _, _ in POOL}
    out = []
    for n in SIZES:
        p, costs, _ = _request(n, rng)
        inst, task = _cv_request(n, p, costs, rng)
        one = StateBatch(inst, p, LAM, "exact", {})
        row = {"candidates": n}
        for name, rule in rules.items():
            numbers = {**rule.member_.numbers(), "coverage": rule.coverage_, "membership": None}
            chosen = np.flatnonzero(rule.select(one)[0]).tolist()
            assert cv_set_task(numbers, task) == chosen, name  # the two paths choose the same set
            calls = max(50, CALLS[n] // 10)
            row[f"{name}_numpy_us"] = _median_us(lambda: rule.select(one), calls)
            row[f"{name}_python_us"] = _median_us(lambda: cv_set_task(numbers, task), calls)
            row[f"{name}_tools"] = len(chosen)
        out.append(row)
    return out


def run() -> dict:
    """Median decision time (us) per rule, path and request size, and the set / prefix ratios."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(SEED)
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for n in SIZES:
            p, costs, valid = _request(n, rng)
            rule = _risk_rule(n, rng)
            tau = rule.threshold()
            nn = valid.sum(axis=1)
            pl, cl = p[0].tolist(), costs[0].tolist()
            calls = CALLS[n]

            def prefix_plugin():
                u = sufficiency_curve(p, valid) - LAM * cumulative_costs(costs)
                return np.argmax(u, axis=1)

            t = {
                "plugin_set_numpy": _median_us(lambda: plugin_set(p, costs, valid, LAM), calls),
                "plugin_set_python": _median_us(lambda: task_plugin_set(pl, cl, LAM), calls),
                "risk_set_numpy": _median_us(lambda: rule.predict(p, costs, valid), calls),
                "risk_set_python": _median_us(lambda: task_risk_set(pl, cl, tau), calls),
                "prefix_risk_numpy": _median_us(lambda: risk_depths(1.0 - sufficiency_curve(p, valid), nn, tau), calls),
                "prefix_risk_python": _median_us(lambda: task_risk_depth(pl, tau), calls),
                "prefix_plugin_numpy": _median_us(prefix_plugin, calls),
            }
            # the two paths choose the same sets
            assert sorted(task_plugin_set(pl, cl, LAM)) == np.flatnonzero(plugin_set(p, costs, valid, LAM)[0]).tolist()
            assert sorted(task_risk_set(pl, cl, tau)) == np.flatnonzero(rule.predict(p, costs, valid)[0]).tolist()
            rows.append({
                "candidates": n, **{f"{k}_us": v for k, v in t.items()},
                "plugin_set_vs_prefix_plugin_numpy": t["plugin_set_numpy"] / t["prefix_plugin_numpy"],
                "risk_set_vs_prefix_risk_numpy": t["risk_set_numpy"] / t["prefix_risk_numpy"],
                "plugin_set_vs_prefix_risk_python": t["plugin_set_python"] / t["prefix_risk_python"],
                "risk_set_vs_prefix_risk_python": t["risk_set_python"] / t["prefix_risk_python"],
                "plugin_set_tools": int(plugin_set(p, costs, valid, LAM).sum()),
                "risk_set_tools": int(rule.predict(p, costs, valid).sum()),
            })
        cv_rows = cv_set_rows(rng)
    return {"rows": rows, "cv_set": cv_rows, "lam": LAM, "alpha": ALPHA, "load_avg": load()}


def main() -> None:
    figures = run()
    cols = ["plugin_set_numpy_us", "plugin_set_python_us", "risk_set_numpy_us", "risk_set_python_us",
            "prefix_plugin_numpy_us", "prefix_risk_numpy_us", "prefix_risk_python_us"]
    print("median decision time (us) for one request; ratios are set rule / prefix rule on the same path")
    print(f"{'candidates':>10} " + " ".join(f"{c.removesuffix('_us'):>20}" for c in cols))
    for r in figures["rows"]:
        print(f"{r['candidates']:>10} " + " ".join(f"{r[c]:>20.1f}" for c in cols))
    for r in figures["rows"]:
        print(f"{r['candidates']:>5} candidates: plugin_set / prefix plug-in (numpy) "
              f"{r['plugin_set_vs_prefix_plugin_numpy']:.2f}x, risk_set / camdf_risk (numpy) "
              f"{r['risk_set_vs_prefix_risk_numpy']:.2f}x, plain Python: plugin_set "
              f"{r['plugin_set_vs_prefix_risk_python']:.2f}x and risk_set {r['risk_set_vs_prefix_risk_python']:.2f}x "
              f"camdf_risk's path; tools exposed: plugin_set {r['plugin_set_tools']}, risk_set {r['risk_set_tools']}")
    from camdf.policies.cv_set import POOL

    print("cv_set: median decision time (us) per pool member for one request, numpy / plain Python")
    for r in figures["cv_set"]:
        print(f"{r['candidates']:>5} candidates: " + "; ".join(
            f"{name} {r[f'{name}_numpy_us']:.0f} / {r[f'{name}_python_us']:.0f}" for name, _, _ in POOL))
    if os.environ.get("BENCH_JSON"):
        import json

        print(json.dumps(figures, default=float))


if __name__ == "__main__":
    main()
