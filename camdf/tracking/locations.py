"""Where a store and its artifacts live: the default URI, the artifact root, a moved SQLite store pointed
at its artifacts again, and values written without the machine's paths."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from camdf.common.files import exclusive_folder

log = logging.getLogger(__name__)


def store_uri(output_dir: str | os.PathLike) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``sqlite:///<output_dir>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(output_dir).resolve()}/mlflow.db"


#: The checkout camdf runs from (the venv's libraries, the default data and outputs live under it).
CODE_ROOT = Path(__file__).resolve().parents[2]


def portable(values: dict[str, str], roots: tuple[str | os.PathLike, ...] = ()) -> dict[str, str]:
    """``values`` with every occurrence of the checkout (and of ``roots``) written ``.``: params and tags
    name no absolute path of the machine that logged them, so a store reads the same anywhere."""
    prefixes = sorted({str(Path(r).resolve()) for r in (CODE_ROOT, *roots) if r}, key=len, reverse=True)
    out = {}
    for key, value in values.items():
        for prefix in prefixes:
            value = value.replace(prefix, ".")
        out[key] = value
    return out


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, else None."""
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


def default_artifact_root(uri: str) -> str | None:
    """Where a new experiment's artifacts go when ``tracking.artifact_root`` is unset: ``mlartifacts/`` beside
    a SQLite file (so store and artifacts move together); a server decides for itself (None)."""
    db = sqlite_path(uri)
    return str(db.resolve().parent / "mlartifacts") if db is not None else None


#: The first 16 bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def check_store_file(uri: str) -> None:
    """Refuse a SQLite store file that is not a database (0 bytes, random bytes, a truncated copy).

    MLflow would silently make an empty store of a 0-byte file, and fail deep inside SQLAlchemy
    on any other; this names the file first. A missing file is not refused (MLflow creates it).
    Raises :class:`sqlite3.DatabaseError` (a fault of the store: the stages exit 1).
    """
    import sqlite3

    db = sqlite_path(uri)
    if db is None or not db.exists():
        return
    if db.is_dir():
        raise sqlite3.DatabaseError(f"{db}: is a folder, not an MLflow SQLite store")
    try:
        with open(db, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except OSError as err:
        raise sqlite3.DatabaseError(f"{db}: cannot read: {err.strerror or err}") from None
    if head != _SQLITE_HEADER:
        what = "0 bytes" if not head else "not a SQLite database"
        raise sqlite3.DatabaseError(f"{db}: {what}, not an MLflow store (restore it from a copy, or move it "
                                    "away to start an empty store)")


#: Columns of an MLflow SQLite store that hold artifact locations (table, column).
_LOCATION_COLUMNS = (("experiments", "artifact_location"), ("runs", "artifact_uri"),
                     ("model_versions", "source"), ("model_versions", "storage_location"),
                     ("logged_models", "artifact_location"))


def relocate_store(uri: str) -> bool:
    """Point a moved SQLite store at its artifacts again; returns whether anything was rewritten.

    MLflow records artifact locations as absolute ``file://`` URIs. A store folder copied or
    moved whole (``mlflow.db`` with ``mlartifacts/`` beside it) keeps the old ones; when an
    experiment's recorded location is not under the ``mlartifacts/`` beside the database, but
    ``mlartifacts/<experiment>`` is there or the old location was another store's
    ``mlartifacts/``, every location under the old root is rewritten to the new one. So a copy
    (whose original still exists) writes its new runs' artifacts into its own folder, as a
    moved store does. Stores whose artifacts are elsewhere (a server, object storage, a
    configured ``artifact_root``) are left alone.
    """
    import sqlite3

    from camdf.common.waits import open_sqlite

    db = sqlite_path(uri)
    if db is None or not db.is_file():
        return False
    here = db.resolve().parent / "mlartifacts"
    changed = False
    with open_sqlite(db) as conn:
        try:
            rows = conn.execute("SELECT name, artifact_location FROM experiments").fetchall()
        except sqlite3.Error:
            return False  # not an MLflow store (yet): MLflow creates or refuses it
        for name, location in rows:
            if not (location or "").startswith("file://"):
                continue
            old = Path(_file_uri_path(location))
            new = here / old.name
            if old.parent == here or not (new.is_dir() or old.parent.name == "mlartifacts"):
                continue  # already here, or artifacts kept elsewhere on purpose
            old_root, new_root = old.parent.as_uri(), here.as_uri()
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, column in _LOCATION_COLUMNS:
                if table in tables:
                    conn.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {column} LIKE ?",
                                 (new_root, len(old_root) + 1, old_root + "/%"))
            changed = True
    if changed:
        log.warning("tracking store %s was moved or copied: its artifact locations now point to %s", db, here)
    return changed


def _file_uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


@contextmanager
def store_init_lock(uri: str) -> Iterator[None]:
    """Serialise opening a SQLite store across local processes.

    MLflow creates the tables of a fresh SQLite file without a lock, so two workers
    opening a new store at once can both try; a server or another database needs none.
    The lock is held on the store's folder itself: no lock file is written anywhere.
    """
    db = sqlite_path(uri)
    if db is None or not db.parent.is_dir():  # no SQLite file, or a folder MLflow itself will refuse
        yield
        return
    with exclusive_folder(db.parent):
        yield
