"""Read, validate and write a domain folder (``catalog.json`` + ``tasks.jsonl``): :mod:`.read`, :mod:`.validate`, :mod:`.write`.

The reader refuses a malformed folder as a whole: it collects every problem as
``file:line: what is wrong (what is expected)`` and raises :class:`DomainFormatError`
listing them all, one per line. Hostile input is refused the same way, never with a
traceback: a file that is missing, unreadable, a folder, a broken link or not a regular
file; bytes that are not UTF-8 or a byte-order mark; nesting deeper than
:data:`MAX_DEPTH`; a number literal longer than :data:`MAX_NUMBER_CHARS`; a lone
surrogate escape (text that cannot be written back as UTF-8); a file larger than
:data:`MAX_FILE_BYTES`. Values quoted in a message are clipped to
:data:`MAX_SHOWN_CHARS`, so a message stays one short line whatever the input.

The writer is atomic: it fills a temporary sibling folder and swaps it in, so a
failed write leaves the previous folder (or nothing) behind, never half a folder.
It writes only a folder with a plain name (:func:`check_domain_name`) and removes
the temporaries a killed earlier write of the same name left beside it.
"""

from camdf.common.jsonguard import MAX_DEPTH, MAX_NUMBER_CHARS
from camdf.data.io.read import MAX_FILE_BYTES, read_domain
from camdf.data.io.validate import (
    CATALOG, CATALOG_FIELDS, DOMAIN_NAME, MAX_LISTED, MAX_SHOWN_CHARS, TASK_FIELDS, TASKS, TOOL_FIELDS,
    DomainFormatError, check_domain_name,
)
from camdf.data.io.write import remove_stale_temporaries, write_domain

__all__ = [
    "CATALOG", "CATALOG_FIELDS", "DOMAIN_NAME", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_LISTED", "MAX_NUMBER_CHARS",
    "MAX_SHOWN_CHARS", "TASKS", "TASK_FIELDS", "TOOL_FIELDS", "DomainFormatError", "check_domain_name",
    "read_domain", "remove_stale_temporaries", "write_domain",
]
