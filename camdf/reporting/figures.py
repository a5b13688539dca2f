"""The results figures as PNG bytes: payoff against tools exposed, and lambda x d difference heatmaps."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from camdf.evaluation.headroom import DEGENERATE_HEADROOM
from camdf.policies import CARDS

# One colour and one marker per method (its registry card, read when drawn), fixed by name so that a method
# looks the same in every figure; a card without them gets a spare pair chosen by name.
_SPARE = ["#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5"]
_SPARE_MARKERS = ["o", "v", "^", "<", ">", "s", "D", "P", "X"]


def method_style(method: str) -> tuple[str, str]:
    """(colour, marker) of a method: fixed for the known ones, else from a spare palette by name."""
    c = CARDS.get(method)
    if c is not None and c.colour is not None and c.marker is not None:
        return c.colour, c.marker
    h = sum(method.encode())  # deterministic across runs (unlike hash())
    return _SPARE[h % len(_SPARE)], _SPARE_MARKERS[h % len(_SPARE_MARKERS)]


def _card_fact(method: str, fact: str, default=None):
    """A fact of a method's registry card (``default`` for a method without a card)."""
    return getattr(CARDS[method], fact) if method in CARDS else default


def overlapping(table: pd.DataFrame, x: str, y: str, rel: float = 0.015) -> list[list[str]]:
    """Groups of methods whose points lie within ``rel`` of the axis ranges of each other (greedy, sorted)."""
    xs, ys = table[x].to_numpy(float), table[y].to_numpy(float)
    dx = max(np.ptp(xs), 1e-9) * rel
    dy = max(np.ptp(ys), 1e-9) * rel
    groups: list[list[int]] = []
    for i in range(len(table)):
        for g in groups:
            j = g[0]
            if abs(xs[i] - xs[j]) <= dx and abs(ys[i] - ys[j]) <= dy:
                g.append(i)
                break
        else:
            groups.append([i])
    names = list(table.index)
    return [[names[i] for i in g] for g in groups]


def payoff_vs_tools_png(table: pd.DataFrame, title: str) -> bytes:
    """Scatter of mean payoff (with CI) against mean tools exposed, one colour and marker per method.

    Methods whose points coincide are labelled together beside the point (the legend alone
    cannot tell five methods on one point apart). When a deployable set rule is present, prefix
    rules (filled markers), set rules (hollow markers, dashed bars) and oracles (ringed in black)
    are drawn as distinct families and named so in the legend.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = table.sort_index()
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    # With a deployable set rule present the two kinds are drawn apart: set rules hollow with dashed bars,
    # oracles ringed in black; without one the figure is drawn as it always was.
    kinds = any(not _card_fact(m, "picks_prefix", True) and _card_fact(m, "family") != "oracle" for m in table.index)
    for method, row in table.iterrows():
        err = np.maximum(0.0, [[row.payoff_mean - row.payoff_ci_low], [row.payoff_ci_high - row.payoff_mean]])
        colour, marker = method_style(method)
        if not kinds:
            ax.errorbar(row.n_exposed, row.payoff_mean, yerr=err, fmt=marker, color=colour, ecolor=colour,
                        markersize=9 if marker == "*" else 6, capsize=3, label=method, alpha=0.9)
            continue
        is_set = not _card_fact(method, "picks_prefix", True)
        oracle = _card_fact(method, "family") == "oracle"
        kind = "oracle" if oracle else ("set" if is_set else "prefix")
        bars = ax.errorbar(row.n_exposed, row.payoff_mean, yerr=err, fmt=marker, color=colour, ecolor=colour,
                           markersize=9 if marker == "*" or oracle else 7, capsize=3, label=f"{method} ({kind})",
                           alpha=0.9, markerfacecolor="none" if is_set and not oracle else colour,
                           markeredgecolor="black" if oracle else colour, markeredgewidth=1.6 if is_set else 1.0)
        if is_set and not oracle:
            bars[-1][0].set_linestyle("--")
    shared = [g for g in overlapping(table, "n_exposed", "payoff_mean") if len(g) > 1]
    for n, group in enumerate(shared, 1):
        row = table.loc[group[0]]
        ax.annotate(f"[{n}]", (row.n_exposed, row.payoff_mean), xytext=(-40, 12 + 12 * (n - 1)),
                    textcoords="offset points", fontsize=7, color="0.2",
                    arrowprops={"arrowstyle": "-", "color": "0.5", "linewidth": 0.6})
    if shared:
        fig.text(0.01, 0.01, "One point, several methods: " + "; ".join(
            f"[{n}] {', '.join(g)}" for n, g in enumerate(shared, 1)), fontsize=6, color="0.2", wrap=True,
            va="bottom")
    ax.set_xlabel("tools exposed (mean over tasks)")
    ax.set_ylabel("payoff (mean, 95% CI)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout(rect=(0, 0.06 if shared else 0, 1, 1))
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def heatmap_png(long: pd.DataFrame, title: str, difference: str | None = None) -> bytes:
    """Heatmap of a lambda x d grid of differences: † marks a CI excluding zero (as in the tables), grey
    hatching a degenerate cell; the colorbar names the difference (``difference``, else ``long.attrs``)."""
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
                ax.text(j, i, f"{v:+.2f}" + ("\u2020" if excl.iat[i, j] else ""), ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * lim else "black")
            if degenerate is not None and bool(degenerate.iat[i, j]):
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                                          edgecolor="0.55", linewidth=0))
    difference = difference or long.attrs.get("difference", "method minus reference")
    fig.colorbar(im, ax=ax, label="payoff difference:\n" + difference.replace(" (", "\n("))
    title += "\n(\u2020 CI excludes 0" + (f"; hatched: degenerate cell, headroom < {DEGENERATE_HEADROOM:g})"
                                           if degenerate is not None and degenerate.to_numpy().any() else ")")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
