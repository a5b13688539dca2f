"""One reader of tools of any harness: every shape of one tool gives the same plain description and ranker text.

The harness libraries' own objects (LangChain, MCP, the OpenAI Agents SDK) are read in
tests/unit/adapters/test_same_tools.py; here, the dict shapes and plain objects the slim runtime sees.
"""

import pytest

from camdf.data.model import Tool
from camdf.rankers.text import tool_document
from camdf.runtime.tooltext import describe_tool, ranker_key, ranker_keys, tool_text

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}}}
PLAIN = {"name": "refund_order", "description": "Refund a delivered order.", "parameters": SCHEMA}
SHAPES = {
    "plain": PLAIN,
    "openai chat completions": {"type": "function", "function": PLAIN},
    "openai responses": {"type": "function", **PLAIN},
    "mcp": {"name": "refund_order", "description": "Refund a delivered order.", "inputSchema": SCHEMA},
    "anthropic": {"name": "refund_order", "description": "Refund a delivered order.", "input_schema": SCHEMA},
}


class FunctionToolLike:
    """An object read by its attributes, as the OpenAI Agents SDK's FunctionTool is."""

    name = "refund_order"
    description = "Refund a delivered order."
    params_json_schema = SCHEMA


@pytest.mark.parametrize("shape", [*SHAPES, "object"])
def test_every_shape_reads_the_same(shape):
    tool = SHAPES.get(shape, FunctionToolLike())
    assert describe_tool(tool) == PLAIN
    assert tool_text(tool) == tool_document(Tool(**PLAIN)) == "refund order. Refund a delivered order. " \
                                                               "Parameters: order id, reason."
    assert ranker_keys([tool]) == (ranker_key(PLAIN),) == (("refund_order", "Refund a delivered order.",
                                                            ("order_id", "reason")),)


@pytest.mark.parametrize("tool", [
    {"type": "web_search"}, {"name": ""}, {"name": 7, "description": "x"}, {"type": "function", "function": {}},
    object(),
])
def test_a_tool_without_a_name_is_none_and_refused_by_the_text(tool):
    assert describe_tool(tool) is None
    with pytest.raises(ValueError, match=r"^tool: expected a tool with a name"):
        tool_text(tool)
    with pytest.raises(ValueError, match=r"^tools\[1\]: expected a tool with a name"):
        ranker_keys([PLAIN, tool])


def test_odd_fields_read_as_empty():
    tool = {"name": "x_y", "description": ["not text"], "parameters": ["not a schema"]}
    assert describe_tool(tool) == {"name": "x_y", "description": "", "parameters": None}
    assert ranker_keys([tool]) == (("x_y", "", ()),) == (ranker_key(describe_tool(tool)),)
    assert tool_text({"name": "x_y", "parameters": {"properties": ["a"]}}) == "x y."
