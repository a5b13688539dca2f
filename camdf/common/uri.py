"""URIs as they may be shown: without the credentials a tracking URI can carry."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@")


def safe_uri(text: str) -> str:
    """``text`` with the credentials of every URI in it removed (``http://user:pw@host`` -> ``http://host``).

    Examples
    --------
    >>> safe_uri("cannot reach http://ana:s3cret@db.example:5000/x")
    'cannot reach http://db.example:5000/x'
    """
    return _USERINFO.sub(lambda m: m.group("scheme"), str(text))
