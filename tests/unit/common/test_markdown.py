"""The one markdown table renderer: layout, alignment, escaping and shape errors."""

import pytest

from camdf.common.markdown import cell, markdown_table


def test_header_rule_and_rows_with_alignment():
    assert markdown_table(["tool", "tasks"], [["`a`", 3], ["b", 10]], "lr") == [
        "| tool | tasks |", "| --- | ---: |", "| `a` | 3 |", "| b | 10 |"]


def test_a_pipe_or_line_break_cannot_split_a_row():
    line = markdown_table(["mean |G_x|"], [["x | y\nz"]])
    assert line[0] == "| mean \\|G_x\\| |"
    assert line[2] == "| x \\| y z |"
    assert cell("already \\| escaped") == "already \\| escaped"


@pytest.mark.parametrize("align, rows, message", [("lx", [], "align"), ("l", [], "align"), ("lr", [[1]], "row")])
def test_shape_errors_name_what_is_wrong(align, rows, message):
    with pytest.raises(ValueError, match=message):
        markdown_table(["a", "b"], rows, align)
