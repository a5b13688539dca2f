"""`camdf fit` on a harness builder's catalog (issue 49): 1,000 logged tasks over 2,000 tools, end to end.

A synthetic catalog stands in for a builder's own (:func:`write_catalog`): 2,000 tools in 40 topics, each
described by 8-30 words drawn mostly from its topic's 150 words, with 0-5 parameters; 1,000 tasks each using
1-3 tools of one topic, their text two words of each used tool's description and eight others (bm25 finds most of the
used tools in its top 50, not all). The base is the package's default policy (a catalog it never saw), and
the candidate its own rule, camdf_transfer, fitted on the builder's tasks: what `camdf fit` does by default.

Timed: `camdf fit --tools ... --tasks ... --out ...` as the CLI runs it in this process (reading the files,
bm25 over the whole catalog, the inner 5-fold comparison, the final fit, the export), best and median of
``REPEATS`` runs, with numpy on the machine's threads. Target: under 60 s on 2 cores.

Run: python benchmarks/bench_fit.py (``BENCH_JSON=1`` also prints the figures as JSON).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # allow `python benchmarks/bench_fit.py` from a checkout
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import load, print_figures  # noqa: E402

N_TOOLS, N_TASKS = 2000, 1000
TARGET_S = 60.0
REPEATS = 2


def write_catalog(folder: Path, n_tools: int, n_tasks: int, seed: int = 0, prefix: str = "api") -> tuple[Path, Path]:
    """``tools.json`` (an MCP tools/list result) and ``tasks.jsonl`` of a synthetic catalog (see the module)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"{w}{i}" for i, w in enumerate(["order", "ship", "pay", "user", "file", "mail"] * 1000)])
    topics = 40
    topic_words = [rng.choice(len(words), 150, replace=False) for _ in range(topics)]
    tool_topic = rng.integers(0, topics, n_tools)
    tools, texts = [], []
    for a in range(n_tools):
        k = int(rng.integers(8, 31))
        own = rng.random(k) < 0.7
        drawn = np.where(own, topic_words[tool_topic[a]][rng.integers(0, 150, k)], rng.integers(0, len(words), k))
        props = {f"arg{j}": {"type": "string", "description": " ".join(words[rng.integers(0, len(words), 4)])}
                 for j in range(int(rng.integers(0, 6)))}
        tools.append({"name": f"{prefix}_{a}", "description": " ".join(words[drawn]),
                      "inputSchema": {"type": "object", "properties": props}})
        texts.append(drawn)
    by_topic = [np.flatnonzero(tool_topic == t) for t in range(topics)]
    lines = []
    for q in range(n_tasks):
        pool = by_topic[int(rng.integers(0, topics))]
        used = rng.choice(pool, min(len(pool), int(rng.integers(1, 4))), replace=False)
        own = np.concatenate([rng.choice(texts[u], min(2, len(texts[u])), replace=False) for u in used])
        text = " ".join(words[np.concatenate([own, rng.integers(0, len(words), 8)])])
        lines.append(json.dumps({"query": text, "tools_used": [tools[u]["name"] for u in used]}))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(json.dumps({"tools": tools}))
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "tools.json", folder / "tasks.jsonl"


def run(repeats: int = REPEATS) -> dict:
    """Wall time of `camdf fit` over 1,000 tasks and 2,000 tools (best and median of ``repeats``)."""
    from camdf.cli.commands import main

    with tempfile.TemporaryDirectory(prefix="camdf-bench-fit-") as tmp:
        tmp = Path(tmp)
        tools, tasks = write_catalog(tmp / "catalog", N_TOOLS, N_TASKS)
        times, before = [], load()
        for k in range(repeats):
            out = tmp / f"policy{k}"
            t0 = time.perf_counter()
            # The base: the package's default policy, and the candidate its own rule (camdf fit's defaults).
            code = main(["fit", "--tools", str(tools), "--tasks", str(tasks), "--out", str(out)])
            times.append(time.perf_counter() - t0)
            if code != 0:
                raise RuntimeError(f"camdf fit exited {code}")
        manifest = json.loads((tmp / "policy0" / "manifest.json").read_text())
    best = min(times)
    return {"tools": N_TOOLS, "tasks": N_TASKS, "fit_best_s": best, "fit_median_s": float(np.median(times)),
            "shipped": manifest["fit"]["shipped"], "method": manifest["method"],
            "difference": manifest["fit"]["difference"]["mean"], "target_s": TARGET_S, "meets_target": best < TARGET_S,
            "load_before": before, "load_after": load(), "cpus": os.cpu_count()}


if __name__ == "__main__":
    figures = run()
    print_figures({k: v for k, v in figures.items() if not isinstance(v, (list, dict))})
