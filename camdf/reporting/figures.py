"""The results figures as PNG bytes: payoff against tools exposed, and lambda x d difference heatmaps."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from camdf.common.markdown import signed
from camdf.evaluation.headroom import DEGENERATE_HEADROOM
from camdf.policies import CARDS, in_camdf_family

# One colour and one marker per method (its registry card, read when drawn), fixed by name so that a method
# looks the same in every figure; a card without them gets a spare pair chosen by name.
_SPARE = ["#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5"]
_SPARE_MARKERS = ["o", "v", "^", "<", ">", "s", "D", "P", "X"]


def figure_problems(fig) -> list[str]:
    """What a reader would miss in ``fig``: a title (the figure's or its panels'), an x label on every panel that
    holds data, a y label (or named y ticks) on at least one, and a legend entry for every labelled line, point
    or bar (a label starting with ``_`` is matplotlib's "no legend"). Empty when nothing is missing."""
    problems = []
    panels = [ax for ax in fig.axes if ax.get_visible() and getattr(ax, "_colorbar", None) is None  # (has a label)
              and (ax.lines or ax.collections or ax.images or ax.patches)]
    suptitle = fig.get_suptitle()
    if not suptitle.strip() and not any(ax.get_title().strip() for ax in panels):
        problems.append("no title")
    for ax in panels:
        if not ax.get_xlabel().strip():
            problems.append(f"panel {ax.get_title()!r} has no x label")
    named_rows = [any(c.isalpha() for t in ax.get_yticklabels() for c in t.get_text()) for ax in panels]
    if panels and not any(ax.get_ylabel().strip() or rows for ax, rows in zip(panels, named_rows)):
        problems.append("no y label")  # named y ticks (a dot plot's rows) stand for one
    named = {t.get_text() for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if legend is not None
             for t in legend.get_texts()}
    for ax in panels:
        for artist in [*ax.lines, *ax.collections, *ax.containers]:
            label = str(artist.get_label() or "")
            if label and not label.startswith("_") and label not in named:
                problems.append(f"{label!r} is drawn but not in a legend")
    return sorted(set(problems))


def png_bytes(fig, rect=None) -> bytes:
    """``fig`` laid out (``tight_layout``, within ``rect`` when given), as PNG bytes without the software stamp (so
    the same figure gives the same bytes), and closed. A figure with a :func:`figure_problems` is refused
    (ValueError): every figure the project draws has a title, labelled axes and a legend naming its lines."""
    import matplotlib.pyplot as plt

    problems = figure_problems(fig)
    if problems:
        plt.close(fig)
        raise ValueError("figure: " + "; ".join(problems))
    fig.tight_layout(**({} if rect is None else {"rect": rect}))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


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


#: Legend sections in drawing order: (registry family, heading). Our rules come first and are drawn largest.
FAMILIES = (("camdf", "ours: CAM-DF rules"), ("ablation", "CAM-DF ablations"), ("baseline", "baselines"),
            ("peer", "peers (published heuristics)"), ("oracle", "oracles (not deployable)"))


def _family(method: str) -> str:
    family = _card_fact(method, "family", "other")
    return family if family in dict(FAMILIES) else "other"


def _payoff_limits(table: pd.DataFrame) -> tuple[float, float]:
    """The payoff axis: every non-peer method's CI with a margin; a peer far outside it does not stretch it."""
    core = table[[_family(m) != "peer" for m in table.index]]
    core = core if len(core) else table
    lo, hi = float(core.payoff_ci_low.min()), float(core.payoff_ci_high.max())
    pad = 0.08 * max(hi - lo, 1e-3)
    return lo - pad, hi + pad


def _point_style(method: str) -> tuple:
    """How :func:`payoff_vs_tools_png` draws ``method``: its family, whether it is ours (the CAM-DF family, its
    ablations apart), a set rule, an oracle, its colour, marker, legend label and matplotlib style."""
    family = _family(method)
    ours = in_camdf_family(method) and family != "ablation"  # the CAM-DF family (its ablations apart)
    colour, marker = method_style(method)
    is_set = not _card_fact(method, "picks_prefix", True)
    oracle = family == "oracle"
    label = method + (" (set)" if is_set and not oracle else "")
    size = 11 if ours else 7
    style = {"color": colour, "markersize": size + (3 if marker == "*" else 0), "alpha": 1.0 if ours else 0.8,
             "markerfacecolor": "none" if is_set and not oracle else colour,
             "markeredgecolor": "black" if ours or oracle else colour,
             "markeredgewidth": 1.8 if is_set or ours else 1.0, "zorder": 4 if ours else 3}
    return family, ours, is_set, oracle, colour, marker, label, style


def _family_legend(ax, handles: dict[str, list]) -> None:
    """The legend beside the axes, grouped by family under a bold heading each (families without a point left out)."""
    import matplotlib.lines

    heading = matplotlib.lines.Line2D([], [], linestyle="none")
    entries, labels = [], []
    for family, name in (*FAMILIES, ("other", "other")):
        if handles[family]:
            entries += [heading, *handles[family]]
            labels += [name, *(h.get_label() for h in handles[family])]
    legend = ax.legend(entries, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                       handletextpad=0.4, labelspacing=0.3)
    for text in legend.get_texts():
        if text.get_text() in {name for _, name in (*FAMILIES, ("other", "other"))}:
            text.set_fontweight("bold")


def payoff_vs_tools_png(table: pd.DataFrame, title: str) -> bytes:
    """Scatter of mean payoff (with CI) against mean tools exposed, one colour and marker per method.

    The legend is grouped by family (:data:`FAMILIES`): our rules (the CAM-DF family) first, drawn
    larger with a black edge and on top; set rules hollow with dashed bars, oracles ringed in black.
    The payoff axis spans the non-peer methods (:func:`_payoff_limits`): a peer heuristic far below
    (top5, bor_depth) is drawn as an arrow at the axis edge, in its own colour and marker, and named with
    its value under the plot (names beside arrows collided where several peers sit at one depth), so it
    does not squash the differences that matter. Methods whose points coincide are numbered beside
    the point and listed under the plot.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.lines
    import matplotlib.pyplot as plt

    order = {m: n for n, m in enumerate(CARDS)}  # registry order within each family, unknown methods after by name
    table = table.loc[sorted(table.index, key=lambda m: (order.get(m, len(order)), m))]
    fig, ax = plt.subplots(figsize=(10, 5.6), dpi=110)
    ylo, yhi = _payoff_limits(table)
    handles: dict[str, list] = {f: [] for f, _ in (*FAMILIES, ("other", "other"))}
    outside: list[tuple[str, float, float]] = []
    for method, row in table.iterrows():
        family, ours, is_set, oracle, colour, marker, label, style = _point_style(method)
        if not ylo <= row.payoff_mean <= yhi:
            outside.append((method, row.n_exposed, row.payoff_mean))
            edge = ylo if row.payoff_mean < ylo else yhi
            ax.plot(row.n_exposed, edge, marker="v" if row.payoff_mean < ylo else "^", color=colour,
                    markersize=9, clip_on=False, zorder=5)
            handles[family].append(matplotlib.lines.Line2D([], [], linestyle="none", marker=marker, label=label,
                                                           **style))
            continue
        err = np.maximum(0.0, [[row.payoff_mean - row.payoff_ci_low], [row.payoff_ci_high - row.payoff_mean]])
        bars = ax.errorbar(row.n_exposed, row.payoff_mean, yerr=err, fmt=marker, ecolor=colour, capsize=3,
                           elinewidth=2.0 if ours else 1.0, label=label, **style)
        if is_set and not oracle:
            bars[-1][0].set_linestyle("--")
        handles[family].append(bars)
    shown = table[[m not in {o[0] for o in outside} for m in table.index]]
    shared = [g for g in overlapping(shown, "n_exposed", "payoff_mean") if len(g) > 1] if len(shown) else []
    for n, group in enumerate(shared, 1):
        row = table.loc[group[0]]
        ax.annotate(f"[{n}]", (row.n_exposed, row.payoff_mean), xytext=(-40, 12 + 12 * (n - 1)),
                    textcoords="offset points", fontsize=8, color="0.2",
                    arrowprops={"arrowstyle": "-", "color": "0.5", "linewidth": 0.6})
    footer = []
    if shared:
        footer.append("One point, several methods: " + "; ".join(f"[{n}] {', '.join(g)}"
                                                                 for n, g in enumerate(shared, 1)))
    if outside:
        footer.append("Below/above the axis (arrows): " + ", ".join(f"{m} {y:.3f}" for m, _, y in outside)
                      + "; the axis spans the other methods' CIs.")
    if footer:
        fig.text(0.01, 0.01, "\n".join(footer), fontsize=7, color="0.2", wrap=True, va="bottom")
    ax.set_ylim(ylo, yhi)
    ax.set_xlabel("tools exposed (mean over tasks)")
    ax.set_ylabel("payoff (mean, 95% CI)")
    ax.set_title(title, fontsize=10)
    _family_legend(ax, handles)
    ax.grid(alpha=0.3)
    return png_bytes(fig, rect=(0, 0.03 + 0.03 * len(footer), 1, 1))


def _cell_text(value: float, excludes0: bool) -> str:
    """A heatmap cell's number: 2 decimals, more (up to 4) when 2 would round a nonzero value to zero, never
    a signed zero; † when its CI excludes 0 (so no "+0.00†": such a cell shows the digits that carry it)."""
    digits = 2
    while digits < 4 and value != 0.0 and float(signed(value, digits)) == 0.0:
        digits += 1
    return signed(value, digits) + ("\u2020" if excludes0 else "")


def heatmap_png(long: pd.DataFrame, title: str, difference: str | None = None) -> bytes:
    """Heatmap of a lambda x d grid of differences: † marks a CI excluding zero (as in the tables), grey
    hatching a degenerate cell; the colour scale spans the CI bounds (``lo``, ``hi``), not only the means; the
    colorbar names the difference (``difference``, else ``long.attrs``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt

    grid = long.pivot(index="lam", columns="d", values="diff").sort_index()
    excl = long.pivot(index="lam", columns="d", values="excludes0").sort_index().fillna(False)
    flags = long.assign(nothing=long["below_zero_everywhere"] if "below_zero_everywhere" in long else False)
    degenerate = (flags.pivot(index="lam", columns="d", values="degenerate").sort_index().fillna(False)
                  if "degenerate" in long else None)
    nothing = flags.pivot(index="lam", columns="d", values="nothing").sort_index().fillna(False)
    fig, ax = plt.subplots(figsize=(6, 5), dpi=110)
    # The colour scale spans the CIs, not the means: a difference is full colour only as far out as the farthest
    # CI bound, so a grid where no CI excludes 0 is never drawn saturated (the means alone always were).
    bounds = np.abs(long[[c for c in ("diff", "lo", "hi") if c in long]].to_numpy(dtype=float))
    lim = float(np.nanmax(bounds)) if np.isfinite(bounds).any() else 1.0
    lim = lim or 1.0
    im = ax.imshow(grid.to_numpy(), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
    ax.set_xticks(range(len(grid.columns)), [f"{v:g}" for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [f"{v:g}" for v in grid.index])
    ax.set_xlabel("cost dispersion d")
    ax.set_ylabel("lambda")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            if pd.notna(v):
                ax.text(j, i, _cell_text(v, bool(excl.iat[i, j])), ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * lim else "black")
            if (degenerate is not None and bool(degenerate.iat[i, j])) or bool(nothing.iat[i, j]):
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                                          edgecolor="0.55", linewidth=0))
    difference = difference or long.attrs.get("difference", "method minus reference")
    fig.colorbar(im, ax=ax, label="payoff difference:\n" + difference.replace(" (", "\n("))
    hatched = [what for what, flag in ((f"degenerate cell, headroom < {DEGENERATE_HEADROOM:g}", degenerate),
                                       ("every method pays below 0", nothing))
               if flag is not None and flag.to_numpy().any()]
    title += "\n(\u2020 CI excludes 0" + (f"; hatched: {' or '.join(hatched)})" if hatched else ")")
    ax.set_title(title, fontsize=9)
    return png_bytes(fig)


def log_x_panels_png(panels: list, draw, *, title: str, xlabel: str, ylabel: str, width: float = 4.0,
                     height: float = 3.8, sharey: bool = True, ncols: int = 3) -> bytes:
    """A grid of panels (``ncols`` a row), a log x axis each (A28's payoff against N, A29's against a search's
    price); ``sharey=False`` gives each panel its own y scale.

    ``draw(ax, panel)`` plots one panel's lines and returns its title (it may replace the log axis and its label, for
    a panel with a single x value, and set its own y label, for a panel of another quantity); one legend, on the
    right of the grid, names
    every line any panel drew (a line one panel leaves out is still named); a line at payoff 0 and a light grid
    on every panel.
    """
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ncols = max(1, min(ncols, len(panels)))
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), dpi=110, sharey=sharey,
                             squeeze=False)
    flat = list(axes.ravel())
    handles: dict[str, object] = {}
    for i, (ax, panel) in enumerate(zip(flat, panels)):
        ax.set_xscale("log")  # before draw: a panel of one x value may set its own axis (categories)
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 0.5, 1, 2, 5, 10, ... as plain numbers
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_title(draw(ax, panel), fontsize=9)
        ax.axhline(0, color="0.7", linewidth=0.8)
        ax.grid(alpha=0.3)
        if (not sharey or i % ncols == 0) and not ax.get_ylabel():  # a panel of another quantity names its own
            ax.set_ylabel(ylabel)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    right = 1 - 2.3 / (width * ncols + 2.3)  # the legend's column: 2.3 inches beside the grid
    fig.set_size_inches(width * ncols + 2.3, height * nrows)
    fig.legend(list(handles.values()), list(handles), fontsize=7, loc="upper left", bbox_to_anchor=(right, 0.93),
               frameon=False)
    fig.suptitle(title, fontsize=9)
    return png_bytes(fig, rect=(0, 0, right, 0.96))


def interval_panels_png(panels: dict[str, list[tuple[str, float, float, float, str]]], *, title: str,
                        xlabel: str, ncols: int = 3) -> bytes:
    """A grid of panels, each a dot plot of labelled values with their 95% CIs on its own x scale (A30).

    ``panels`` maps a panel's title to its rows ``(label, mean, ci_low, ci_high, colour)``, drawn top down;
    a row without a CI (nan) is a dot alone. Every panel names its rows on its own y axis, so no legend is needed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(panels)
    ncols = max(1, min(ncols, len(names)))
    nrows = -(-len(names) // ncols)
    tallest = max((len(rows) for rows in panels.values()), default=1)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 0.28 * tallest * nrows + 1.2 * nrows), dpi=110,
                             squeeze=False)
    for ax, name in zip(axes.flat, names):
        rows = panels[name]
        y = np.arange(len(rows))[::-1]
        for yi, (label, mean, lo, hi, colour) in zip(y, rows):
            if np.isfinite(lo) and np.isfinite(hi):
                ax.plot([lo, hi], [yi, yi], color=colour, linewidth=2.0, alpha=0.7)
            ax.plot([mean], [yi], "o", color=colour, markersize=5)
        ax.set_yticks(y, [r[0] for r in rows], fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.axvline(0, color="0.7", linewidth=0.8)
        ax.grid(alpha=0.3, axis="x")
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=9)
    return png_bytes(fig)
