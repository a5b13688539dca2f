"""Text as it may be shown: without the credentials a URI can carry, its query's values, or a known secret."""

from __future__ import annotations

import re
from typing import Iterable

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@")
# A URI's query values (``?token=abc&x=1``): access tokens travel there as often as in the userinfo.
_QUERY = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*:[^\s?'\"]*\?)(?P<query>[^\s'\"#]*)")
# Secrets written as prose (a query an agent was given, an error a library raised): a value after a word that
# names one (``password: x``, ``api_key=x``, ``aws_secret_access_key=x``, ``Authorization: Bearer x`` or
# ``Authorization: Basic x``), and tokens whose shape says what they are (provider key prefixes, AWS access key ids,
# JWTs). Each is at least 8 characters, so plain words stay.
_NAMED = re.compile(r"(?i)(?P<head>\b(?:(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|token"
                    r"|access[_-]?token|api[_-]?key|apikey|auth[_-]?token|aws[_-]?secret[_-]?access[_-]?key"
                    r"|secret[_-]?access[_-]?key)\b['\"]?\s*(?:\bis\b|[:=])\s*|bearer\s+"
                    r"|authorization['\"]?\s*[:=]\s*['\"]?basic\s+)"
                    r"['\"]?)(?P<value>[^\s'\",;&*]{8,})")
_SHAPED = re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj|ant)?[-_]?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic, Stripe
                     r"|\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"  # GitHub
                     r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
                     r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
                     r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API key
                     r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")  # a JWT
#: What a removed secret or query value reads as.
HIDDEN = "***"
#: Values taken from the environment (``${oc.env:...}``) in this process, removed from every shown text.
_SECRETS: set[str] = set()
#: Shorter environment values are not hidden (``0``, ``true`` would be hidden everywhere in a line).
MIN_SECRET = 4


def add_secrets(values: Iterable[str]) -> None:
    """Remember ``values`` (each at least :data:`MIN_SECRET` characters) to remove from every :func:`safe_uri` text."""
    _SECRETS.update(v for v in map(str, values) if len(v) >= MIN_SECRET)


def _hide_query(m: re.Match) -> str:
    parts = [p.split("=", 1)[0] + f"={HIDDEN}" if "=" in p else p for p in m.group("query").split("&")]
    return m.group("head") + "&".join(parts)


def safe_uri(text: str) -> str:
    """``text`` without credentials: a URI's ``user:password@`` and query values, a secret written as prose (after a
    word naming it, or a token of a known shape), and every registered secret.

    Examples
    --------
    >>> safe_uri("cannot reach http://ana:s3cret@db.example:5000/x")
    'cannot reach http://db.example:5000/x'
    >>> safe_uri("cannot reach http://db.example:5000/x?token=abc&v=1")
    'cannot reach http://db.example:5000/x?token=***&v=***'
    >>> safe_uri("my password is hunter2-Pa55, key sk-proj-Abc123def456GHI789jk")
    'my password is ***, key ***'
    """
    text = _QUERY.sub(_hide_query, _USERINFO.sub(lambda m: m.group("scheme"), str(text)))
    text = _SHAPED.sub(HIDDEN, _NAMED.sub(lambda m: m.group("head") + HIDDEN, text))
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text
