"""Every figure the project draws passes one contract before it is written (camdf.reporting.figures.png_bytes):
a title, an x label on every panel with data, a y label, and a legend entry for every labelled line. The figure
functions of the tables (A18/A24/A27 heatmaps, payoff-vs-tools, A28, A29) are drawn through it by their own tests;
here the contract itself, and A30's panels."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from camdf.reporting.figures import figure_problems, interval_panels_png, png_bytes  # noqa: E402


def _figure(title="payoff against N", xlabel="N", ylabel="payoff", legend=True, labels=("camdf", "full")):
    fig, ax = plt.subplots()
    for i, label in enumerate(labels):
        ax.plot([1, 2], [i, i + 1], label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend:
        ax.legend()
    return fig


def test_a_complete_figure_has_no_problem():
    fig = _figure()
    assert figure_problems(fig) == []
    assert png_bytes(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("change, problem", [
    ({"title": ""}, "no title"),
    ({"xlabel": ""}, "panel 'payoff against N' has no x label"),
    ({"ylabel": ""}, "no y label"),
    ({"legend": False}, "'camdf' is drawn but not in a legend"),
])
def test_a_figure_missing_what_a_reader_needs_is_refused_naming_it(change, problem):
    fig = _figure(**change)
    assert problem in figure_problems(fig)
    with pytest.raises(ValueError, match="^figure: .*" + problem.replace("(", r"\(")):
        png_bytes(fig)
    assert not plt.fignum_exists(fig.number)  # closed even when refused


def test_a_line_left_out_of_the_legend_is_named():
    fig = _figure()
    fig.axes[0].plot([1, 2], [3, 4], label="peer")  # drawn after the legend was made
    assert figure_problems(fig) == ["'peer' is drawn but not in a legend"]
    plt.close(fig)


def test_a30_panels_name_their_rows_and_pass():
    panels = {"retail": [("camdf_transfer", 0.1, 0.05, 0.15, "tab:red"), ("full", -0.2, math.nan, math.nan, "0.4")],
              "airline": [("camdf_transfer", 0.2, 0.1, 0.3, "tab:red")]}
    png = interval_panels_png(panels, title="A30: rules fitted on the other domains", xlabel="payoff")
    assert png.startswith(b"\x89PNG")
