"""Costs and lambda in a harness builder's units: schema tokens, and what one solved task is worth.

A tool's cost is the number of tokens its definition adds to every model call that exposes it
(:func:`schema_tokens`), counted offline by a byte-pair-like pre-tokeniser: no tokenizer package,
no download. A harness builder states lambda as the **task value** ``V``: how many tokens of tool
definitions one solved task is worth. The payoff ``U(A) = v(A, G_x) - C(A) / V`` then reads as
"success, minus the tokens spent in units of a solved task", so lambda is ``1 / V`` per token
(:func:`lam_from_task_value`). A policy whose manifest says ``cost_unit: tokens`` (the default policy
and every ``camdf fit`` policy) takes costs in these units; when a request gives no costs, each
tool's :func:`schema_tokens` is its cost.

The counter approximates the tokenisers of today's chat models (words, sub-word pieces of long
identifiers, digit groups of at most three, punctuation runs); `docs/harness.md` states how it
compares with a WordPiece tokenizer on the built-in catalogs. It is deterministic and the same on
every machine, which is what a cost unit needs to be.

The ``runtime_tokens`` cost regime (:func:`runtime_token_costs`) gives the pipeline these costs: each tool
costs its definition's tokens, **not** dispersed or scaled (lambda is per token, ``1 / V``; ``d`` must be
1), the units of the default policy and of ``camdf fit`` (A30).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Sequence

import numpy as np

#: Tokens of tool definitions one solved task is worth, by default (lambda = 1 / DEFAULT_TASK_VALUE per token): a
#: tool whose definition is 150 tokens is worth exposing when it raises the chance of solving the task by 3%.
#: Every exposed definition is sent with each model call of a task, so this is a per-call budget (docs/harness.md).
DEFAULT_TASK_VALUE = 5_000.0
#: The unit a policy's costs are in when its manifest says so (``cost_unit``).
TOKENS = "tokens"
#: The cost regimes this module declares, name -> its function here (found by camdf.costs from the source).
COST_REGIMES = {"runtime_tokens": "runtime_token_costs"}

# Pieces a byte-pair tokeniser mostly keeps whole: a word (optionally after one space), a group of at most
# three digits, a run of punctuation, a run of whitespace. Letters of long words split further (below).
_PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+")
# A common English word is one token; a longer run of letters (an identifier, a rare word) costs about one
# token per this many letters.
_LETTERS_PER_TOKEN = 6
_SHORT_WORD = 8


def definition(tool: dict) -> dict:
    """A tool as an agent receives it (an OpenAI-style function definition) from a plain view
    ``{name, description, parameters}``."""
    fn: dict[str, Any] = {"name": tool["name"], "description": tool.get("description") or ""}
    if tool.get("parameters") is not None:
        fn["parameters"] = tool["parameters"]
    return {"type": "function", "function": fn}


def count_text_tokens(text: str) -> int:
    """Approximate byte-pair tokens of ``text`` (see the module's docstring)."""
    total = 0
    for piece in _PIECE.findall(text):
        word = piece.strip()
        if word.isalpha() and len(word) > _SHORT_WORD:
            total += math.ceil(len(word) / _LETTERS_PER_TOKEN)
        elif piece.isspace():
            total += 1 if len(piece) > 1 else 0  # one space joins the next word's token
        else:
            total += 1
    return total


def schema_tokens(tools: Sequence[dict]) -> np.ndarray:
    """Approximate tokens of each tool's definition (its JSON, compact), shape (N,), each >= 1.

    Parameters
    ----------
    tools : sequence of dict
        Plain views ``{name, description, parameters}`` (:func:`camdf.runtime.requests.tool_view`).
    """
    texts = [json.dumps(definition(t), ensure_ascii=False, separators=(",", ":"), sort_keys=True) for t in tools]
    return np.array([max(1, count_text_tokens(s)) for s in texts], dtype=np.float64)


def runtime_token_costs(domain) -> np.ndarray:
    """The ``runtime_tokens`` regime: :func:`schema_tokens` of each acquirable tool of ``domain`` (a
    :class:`camdf.data.model.Domain`), in tokens, never dispersed (its ``unscaled`` mark)."""
    by_name = domain.tool_by_name
    return schema_tokens([{"name": t.name, "description": t.description, "parameters": t.parameters}
                          for t in (by_name[n] for n in domain.acquirable)])


runtime_token_costs.unscaled = True  # costs in their own unit (tokens): camdf.costs.regimes.costs keeps them


def lam_from_task_value(task_value: Any, field: str = "task_value") -> float:
    """Lambda per token for a task worth ``task_value`` tokens: ``1 / task_value``; ValueError naming ``field``
    unless it is a finite number > 0."""
    if isinstance(task_value, bool) or not isinstance(task_value, (int, float)) or not math.isfinite(task_value) \
            or task_value <= 0:
        raise ValueError(f"{field}: expected the tokens one solved task is worth, a finite number > 0, "
                         f"got {task_value!r}")
    return 1.0 / float(task_value)
