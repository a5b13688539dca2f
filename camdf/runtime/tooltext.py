"""A tool of any harness as the runtime reads it: a plain description, and the text the bm25 ranker reads.

Harnesses hand over tools in their own shapes: OpenAI function tools (``{"type": "function", "function":
{...}}``, or the Responses API's flat ``{"type": "function", "name", ...}``), MCP tool descriptions
(``inputSchema``, or the SDK's ``Tool`` objects), Anthropic tools (``input_schema``), LangChain tools
(``BaseTool``: the JSON schema the model is shown, ``tool_call_schema``), the OpenAI Agents SDK's
``FunctionTool`` (``params_json_schema``) and plain ``{name, description, parameters}``. :func:`describe_tool`
reads every one of them the same way, and every adapter and the runtime's requests go through it, so the same
tools give the same ranking, and the same decision, whichever harness they come from.

Nothing here imports a harness library: a tool object is read by its attributes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from itertools import repeat
from typing import Any, Sequence

#: Where each harness keeps a tool's JSON schema, in the order they are looked for.
SCHEMA_KEYS = ("parameters", "inputSchema", "input_schema", "params_json_schema")
# LangChain builds a tool's schema from its pydantic model on each read (tens of microseconds; a catalog of
# thousands would pay it on every model call), so the descriptions of such tools are kept, by the object
# (held, so its id is not reused) and checked against its name and description (a changed tool is read again).
_KEPT: OrderedDict[int, tuple[Any, str, Any, dict]] = OrderedDict()
_KEPT_SIZE = 16_384
_KEPT_LOCK = threading.Lock()


def _schema(spec: Any, get) -> dict | None:
    for key in SCHEMA_KEYS:
        value = get(spec, key)
        if value is not None:
            return value if isinstance(value, dict) else None
    return None


# The attribute holding a tool class's schema, found once per class: a missing attribute of a pydantic model
# raises inside getattr, which costs microseconds per tool and decision.
_SCHEMA_ATTR: dict[type, str | None] = {}
# Whether a tool class is LangChain's (its schema is ``tool_call_schema``, a property of the class).
_LANGCHAIN: dict[type, bool] = {}


def _object_schema(tool: Any) -> dict | None:
    kind = type(tool)
    if kind not in _SCHEMA_ATTR:
        _SCHEMA_ATTR[kind] = next((k for k in SCHEMA_KEYS if hasattr(tool, k)), None)  # noqa: B009
    attr = _SCHEMA_ATTR[kind]
    value = None if attr is None else getattr(tool, attr, None)
    if value is None and attr is not None:  # this object lacks its class's usual one: look again
        value = _schema(tool, lambda o, k: getattr(o, k, None))
    return value if isinstance(value, dict) else None


def _dict_spec(tool: dict) -> dict:
    """The dict holding a dict tool's name: ``function`` of a Chat Completions tool, else the tool itself."""
    inner = tool.get("function")
    return inner if isinstance(inner, dict) else tool


def _langchain_schema(tool: Any) -> dict | None:
    """The JSON schema a LangChain tool shows the model (``tool_call_schema``: injected arguments left out)."""
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return schema
    for method in ("model_json_schema", "schema"):  # pydantic 2, then 1
        if callable(getattr(schema, method, None)):
            return getattr(schema, method)()
    return None


def _object(tool: Any) -> dict | None:
    name, description = getattr(tool, "name", None), getattr(tool, "description", None)
    if not isinstance(name, str) or not name:
        return None
    kind = type(tool)
    if kind not in _LANGCHAIN:  # by its class: a missing attribute of a pydantic object raises inside hasattr
        _LANGCHAIN[kind] = hasattr(kind, "tool_call_schema")
    if not _LANGCHAIN[kind]:
        return {"name": name, "description": description if isinstance(description, str) else "",
                "parameters": _object_schema(tool)}
    # A read is one dict lookup, atomic under the GIL; only a write takes the lock (oldest out first).
    kept = _KEPT.get(id(tool))
    if kept is not None and kept[0] is tool and kept[1] is name and kept[2] is description:
        return kept[3]
    plain = {"name": name, "description": description if isinstance(description, str) else "",
             "parameters": _langchain_schema(tool)}
    with _KEPT_LOCK:
        _KEPT[id(tool)] = (tool, name, description, plain)
        while len(_KEPT) > _KEPT_SIZE:
            _KEPT.popitem(last=False)
    return plain


def describe_tool(tool: Any) -> dict | None:
    """A plain ``{"name", "description", "parameters"}`` of a tool of any harness (None: it has no name).

    Parameters
    ----------
    tool : dict or object
        An OpenAI function tool (Chat Completions or Responses shape), an MCP tool description (a dict with
        ``inputSchema`` or an SDK ``Tool``), an Anthropic tool (``input_schema``), a LangChain ``BaseTool``
        (its ``tool_call_schema``), an OpenAI Agents ``FunctionTool`` (``params_json_schema``), or a plain
        description.

    Returns
    -------
    dict or None
        ``name`` (str), ``description`` (str; "" when missing or not a string) and ``parameters`` (the JSON
        schema, a dict, or None). None for a tool without a non-empty string name, such as a provider's
        built-in tool (``{"type": "web_search"}``): callers pass it on or refuse it, as their harness needs.
        A dict that already is a plain description is returned as it is.
    """
    if type(tool) is dict:
        # The common case (plain descriptions the adapters built): no copy.
        if (tool.keys() == {"name", "description", "parameters"} and type(tool["name"]) is str and tool["name"]
                and type(tool["description"]) is str and (tool["parameters"] is None or type(tool["parameters"]) is dict)):
            return tool
        spec = _dict_spec(tool)
        name, description = spec.get("name"), spec.get("description")
        if not isinstance(name, str) or not name:
            return None
        return {"name": name, "description": description if isinstance(description, str) else "",
                "parameters": _schema(spec, dict.get)}
    if isinstance(tool, dict):
        return describe_tool(dict(tool))
    return _object(tool)


def parameter_words(plain: dict) -> tuple[str, ...]:
    """The top-level parameter names of a plain description's schema (what the ranker reads of it)."""
    params = plain["parameters"]
    props = params.get("properties") if isinstance(params, dict) else None
    return tuple(props) if isinstance(props, dict) else ()


def ranker_key(plain: dict) -> tuple[str, str, tuple[str, ...]]:
    """Everything of a plain description the ranker's document is made of: ``(name, description, parameter
    names)``; equal keys give equal documents (:func:`tool_text`)."""
    return plain["name"], plain["description"], parameter_words(plain)


def _dict_key(tool: dict) -> tuple[str, str, tuple[str, ...]] | None:
    """:func:`ranker_key` of a dict tool without building its plain description: the hot path of an index hit,
    once per tool and decision, so :func:`_dict_spec` and :func:`_schema` are inlined."""
    spec = tool.get("function")
    if not isinstance(spec, dict):
        spec = tool
    name, description = spec.get("name"), spec.get("description")
    if not isinstance(name, str) or not name:
        return None
    params = spec.get("parameters")
    if params is None:
        params = _schema(spec, dict.get)
    props = params.get("properties") if isinstance(params, dict) else None
    return name, description if isinstance(description, str) else "", tuple(props) if isinstance(props, dict) else ()


def ranker_keys(tools: Sequence[Any]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """:func:`ranker_key` of each tool of any harness (:func:`describe_tool`); ValueError naming ``tools[i]``
    when one has no name."""
    return tuple(zip(*ranker_fields(tools)))


def ranker_fields(tools: Sequence[Any]) -> tuple[list[str], list[str], list[tuple[str, ...]]]:
    """:func:`ranker_keys` a field at a time: the names, descriptions and parameter names of the tools, each a
    list of length A; ValueError naming ``tools[i]`` when one has no name."""
    fields = _flat_fields(tools)
    if fields is not None:
        return fields
    keys = [_dict_key(t) if type(t) is dict else _object_key(t) for t in tools]
    if None in keys:
        raise ValueError(f"tools[{keys.index(None)}]: expected a tool with a name")
    if not keys:
        return [], [], []
    return tuple(map(list, zip(*keys)))


def _flat_fields(tools: Sequence[Any]) -> tuple[list[str], list[str], list[tuple[str, ...]]] | None:
    """:func:`ranker_fields` of flat dict tools (a name at the top: plain, MCP, Anthropic, Responses API), with
    C-level ``map`` over the whole list (the hot path of an index hit, every decision: a Python loop over
    thousands of tools costs milliseconds); None for any other list."""
    if set(map(type, tools)) != {dict} or any(map(dict.__contains__, tools, repeat("function"))):
        return None
    names = list(map(dict.get, tools, repeat("name")))
    if set(map(type, names)) != {str} or not all(names):
        return None
    descs = list(map(dict.get, tools, repeat("description")))
    if set(map(type, descs)) != {str}:
        descs = [d if isinstance(d, str) else "" for d in descs]
    params = list(map(dict.get, tools, repeat("parameters")))
    if set(map(type, params)) != {dict}:
        params = [p if p is not None else _schema(t, dict.get) for t, p in zip(tools, params)]
        params = [p if isinstance(p, dict) else {} for p in params]
    props = list(map(dict.get, params, repeat("properties")))
    words = list(map(tuple, props)) if set(map(type, props)) == {dict} else [
        tuple(x) if isinstance(x, dict) else () for x in props]
    return names, descs, words


def _object_key(tool: Any) -> tuple[str, str, tuple[str, ...]] | None:
    plain = describe_tool(tool)
    return None if plain is None else ranker_key(plain)


def tool_text(tool: Any) -> str:
    """The text the bm25 ranker reads for a tool of any harness (:func:`describe_tool`): its name's words, its
    description and its parameters' names (:func:`camdf.rankers.text.document`).

    Raises ValueError when the tool has no name."""
    from camdf.rankers.text import document

    plain = describe_tool(tool)
    if plain is None:
        raise ValueError(f"tool: expected a tool with a name, got {type(tool).__name__}")
    return document(*ranker_key(plain))


def _raw_schema(tool: Any, plain: dict) -> tuple[str, Any]:
    """Where a tool keeps its schema and the value as the harness gave it (:func:`describe_tool` reads a schema
    that is not a dict as none): a dict tool's own, an object's as its library typed it."""
    if isinstance(tool, dict):
        spec = _dict_spec(tool)
        return next(((k, spec[k]) for k in SCHEMA_KEYS if spec.get(k) is not None), ("parameters", None))
    return "parameters", plain["parameters"]


def check_tool(i: int, tool: Any, plain: dict | None, seen: dict[str, int]) -> None:
    """Refuse (ValueError naming ``tools[i]``) a tool a harness could not send or a model could not call: a name
    that is there but is not a non-empty string, a blank name, a name an earlier tool of the list has (``seen``:
    name -> position, updated), or a schema that is not a JSON schema of an object (providers take only
    ``{"type": "object", ...}`` for a function's parameters). ``plain``: the tool's :func:`describe_tool`; None (no
    name at all, such as a provider's built-in ``{"type": "web_search"}``) is the caller's to pass on or refuse."""
    if plain is None:  # a name that is there (a dict's key, an object's attribute) but empty or not a string
        spec = _dict_spec(tool) if isinstance(tool, dict) else {"name": tool.name} if hasattr(tool, "name") else {}
        if "name" in spec:
            raise ValueError(f"tools[{i}]: expected a tool name (a non-empty string), got {spec['name']!r:.80}")
        return
    name = plain["name"]
    if not name.strip():
        raise ValueError(f"tools[{i}]: expected a tool name with a visible character, got {name!r}")
    if name in seen:
        raise ValueError(f"tools[{i}]: the name {name!r} is also tools[{seen[name]}]'s; tool names must be unique")
    seen[name] = i
    key, schema = _raw_schema(tool, plain)
    if schema is not None and (not isinstance(schema, dict) or schema.get("type", "object") != "object"):
        got = repr(schema.get("type")) if isinstance(schema, dict) else type(schema).__name__
        raise ValueError(f"tools[{i}]: {name!r}'s {key} must be a JSON schema of an object "
                         f"({{\"type\": \"object\", ...}}), got {got:.80}")


def check_tools(tools: Sequence[Any], described: Sequence[dict | None]) -> None:
    """:func:`check_tool` for each tool of a harness's list (``described``: their :func:`describe_tool`)."""
    seen: dict[str, int] = {}
    for i, (tool, plain) in enumerate(zip(tools, described)):
        check_tool(i, tool, plain, seen)
