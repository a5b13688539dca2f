"""The text a ranker reads: a tool's document and a light, deterministic normaliser.

A tool's document is its name split into words, its description and the names
of its top-level parameters, so ``find_user_id_by_name_zip(first_name, ...)``
reads as ``find user id by name zip ... first name ...``.  Queries and documents
go through the same :func:`normalize`, so lexical matching sees the same words.
"""

from __future__ import annotations

import re

from camdf.data.model import Tool

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9A-Za-z]+")


def split_identifier(name: str) -> str:
    """``GorillaFileSystem.mkdir`` -> ``Gorilla File System mkdir``; ``get_user_id`` -> ``get user id``."""
    return " ".join(_CAMEL.sub(" ", _NON_WORD.sub(" ", name)).split())


def parameter_names(tool: Tool) -> list[str]:
    """Top-level parameter names of the tool's JSON schema (empty without a schema)."""
    props = (tool.parameters or {}).get("properties") or {}
    return list(props) if isinstance(props, dict) else []


def tool_document(tool: Tool) -> str:
    """The text a ranker reads for a tool: name words, description, parameter words."""
    return document(tool.name, tool.description, parameter_names(tool))


def document(name: str, description: str, params: list[str] | tuple[str, ...]) -> str:
    """:func:`tool_document` from its three parts (the runtime builds it from any harness's tool, without a
    :class:`~camdf.data.model.Tool`)."""
    parts = [split_identifier(name) + ".", description.strip()]
    if params:
        parts.append("Parameters: " + ", ".join(split_identifier(p) for p in params) + ".")
    return " ".join(p for p in parts if p)


def normalize(text: str) -> str:
    """Split identifiers (snake_case, camelCase, dotted) into words, so they match prose."""
    return _CAMEL.sub(" ", _NON_WORD.sub(" ", text))


def s_stem(word: str) -> str:
    """Harman's S-stemmer (1991): conflate English plurals, nothing more.

    ``-ies`` -> ``-y`` (not after ``e``/``a``), ``-es`` -> ``-e`` (not after ``a``/``e``/``o``),
    ``-s`` -> ``''`` (not after ``u``/``s``).  Chosen because it is tiny, documented and
    needs no package; a full Porter stemmer is not among the project's dependencies.
    """
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def stem_words(words: list[str]) -> list[str]:
    """Apply :func:`s_stem` to a list of tokens (the stemmer interface bm25s expects)."""
    return [s_stem(w) for w in words]


#: A sentence boundary (after . ? !) or a semicolon: where a query's requests part.
_BOUNDARY = re.compile(r"(?<=[.?!])\s+|\s*;\s*")


def clauses(text: str, min_words: int = 3) -> list[str]:
    """The query's sentences of at least ``min_words`` words (the whole text when none is)."""
    parts = [p.strip() for p in _BOUNDARY.split(text) if len(p.split()) >= min_words]
    return parts or [text]
