"""The results figures as PNG bytes: payoff against tools exposed, and lambda x d difference heatmaps."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from camdf.reporting.store import main_params, methods_of, one_run

def payoff_vs_tools_png(table: pd.DataFrame, title: str) -> bytes:
    """Scatter of mean payoff (with CI) against mean tools exposed, one point per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    for method, row in table.sort_index().iterrows():
        err = np.maximum(0.0, [[row.payoff_mean - row.payoff_ci_low], [row.payoff_ci_high - row.payoff_mean]])
        marker = "*" if method.startswith("camdf") else ("s" if method in ("oracle_set", "best_prefix") else "o")
        ax.errorbar(row.n_exposed, row.payoff_mean, yerr=err, fmt=marker, capsize=3, label=method)
    ax.set_xlabel("tools exposed (mean)")
    ax.set_ylabel("payoff (mean, 95% CI)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2, loc="best")
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def heatmap_png(long: pd.DataFrame, title: str) -> bytes:
    """Heatmap of a lambda x d grid of differences: * marks a CI excluding zero, grey hatching a degenerate cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt

    grid = long.pivot(index="lam", columns="d", values="diff").sort_index()
    excl = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    degenerate = (long.pivot(index="lam", columns="d", values="degenerate").sort_index().fillna(False)
                  if "degenerate" in long else None)
    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    lim = float(np.nanmax(np.abs(grid.to_numpy()))) or 1.0
    im = ax.imshow(grid.to_numpy(), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
    ax.set_xticks(range(len(grid.columns)), [f"{v:g}" for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [f"{v:g}" for v in grid.index])
    ax.set_xlabel("cost dispersion d")
    ax.set_ylabel("lambda")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            if pd.notna(v):
                ax.text(j, i, f"{v:+.2f}" + ("*" if excl.iat[i, j] else ""), ha="center", va="center", fontsize=7)
            if degenerate is not None and bool(degenerate.iat[i, j]):
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                                          edgecolor="0.55", linewidth=0))
    fig.colorbar(im, ax=ax, label="payoff difference")
    if degenerate is not None and degenerate.to_numpy().any():
        title += "\n(hatched: degenerate cell, headroom < 0.02; * CI excludes 0)"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def figure_payoff_vs_tools(runs: pd.DataFrame, main: dict) -> bytes:
    """The per-method payoff vs tools exposed figure of the main cell at d = 0."""
    run = one_run(runs, "payoff-vs-tools figure", **{**main_params(main), "cost__d": 0.0},
               method__names=str(list(main["methods"])))
    rows = {}
    for m in methods_of(run):
        rows[m] = {k: run[f"m:{m}/{k}"] for k in ("payoff_mean", "payoff_ci_low", "payoff_ci_high", "n_exposed")}
    table = pd.DataFrame.from_dict(rows, orient="index")
    return payoff_vs_tools_png(table, f"{main['domain']}: lambda = {main['lam']}, d = 0 (homogeneous costs)")
