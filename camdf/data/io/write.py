"""Write a domain folder atomically: fill a temporary sibling folder, check it, swap it in.

A failed write leaves the previous folder (or nothing) behind, never half a folder. It writes only a
folder with a plain name (:func:`~camdf.data.io.validate.check_domain_name`) and removes the temporaries
a killed earlier write of the same name left beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from camdf.data.io import read as _read
from camdf.data.io.validate import CATALOG, TASKS, check_domain_name
from camdf.data.model import Domain

try:  # a live writer locks its temporary folder, so another writer never removes it as stale
    import fcntl
except ImportError:  # pragma: no cover (not POSIX: no locks, every temporary counts as stale)
    fcntl = None


def _remove(path: Path) -> None:
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _lock(path: Path, block: bool) -> int | None:
    """An open descriptor of folder ``path`` holding an exclusive lock on it; None if a live writer holds it.

    Where locks are not available (no ``fcntl``, a file system without them) the
    descriptor is returned unlocked.
    """
    fd = os.open(path, os.O_RDONLY)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError:
            pass
    return fd


def _target(folder: str | os.PathLike) -> tuple[Path, str]:
    """``folder`` as a Path and its checked name; the folder must be directly inside its parent."""
    folder = Path(folder)
    name = check_domain_name(folder.name)
    if Path(os.path.abspath(folder)).parent != Path(os.path.abspath(folder.parent)):
        raise ValueError(f"{folder}: a domain folder must be directly inside {folder.parent}")
    return folder, name


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove what earlier writes of ``folder`` left beside it when they were killed; return what was removed.

    They are ``.<name>.<random>`` (the writer's temporary folder) and ``.<name>.old-<pid>``
    (the previous folder, swapped out). Only hidden folders of the parent with exactly
    that prefix are touched (a plain name has no ``.``, so no other domain's folders
    have it), and a temporary folder a running writer holds locked is kept.
    """
    folder, name = _target(folder)
    parent, prefix = folder.parent, f".{name}."
    if not parent.is_dir():
        return []
    removed = []
    for entry in sorted(parent.iterdir()):
        if not entry.name.startswith(prefix) or not entry.is_dir():
            continue
        if entry.name.startswith(f"{prefix}old-") or entry.is_symlink():
            _remove(entry)
            removed.append(entry)
            continue
        try:
            fd = _lock(entry, block=False)
        except OSError:  # gone meanwhile
            continue
        if fd is not None:
            try:
                shutil.rmtree(entry, ignore_errors=True)
            finally:
                os.close(fd)
            removed.append(entry)
    return removed


def _new_temporary(parent: Path, name: str) -> tuple[Path, int]:
    """A new ``.<name>.<random>`` folder in ``parent`` and a descriptor locking it."""
    for _ in range(10):
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
        fd = _lock(tmp, block=True)
        try:  # another writer may have taken it for stale between mkdtemp and the lock
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return tmp, fd
        except FileNotFoundError:
            pass
        os.close(fd)
    raise OSError(f"could not keep a temporary folder for {name} in {parent}")


def write_domain(
    domain: Domain, folder: str | os.PathLike, extra_files: dict[str, Any] | None = None, validate: bool = True
) -> Path:
    """Write ``domain`` to ``folder`` atomically (temporary sibling, then swap).

    Parameters
    ----------
    domain : Domain
    folder : path
        Target folder; replaced whole if it exists. Its name must be a plain name
        (:func:`check_domain_name`), checked before anything is written or removed.
    extra_files : dict of str to (str or callable), optional
        More text files to write beside the two data files (e.g. ``report.md``). A callable
        is called with the sha256 (hex) of each data file as written (``{"catalog.json": ...,
        "tasks.jsonl": ...}``) and returns the text (a manifest that hashes them).
    validate : bool
        Read the written files back through the validator before swapping them in,
        so a converter bug raises here and leaves the old folder untouched.

    Returns
    -------
    Path
        The folder written.

    Notes
    -----
    The temporary folder is ``.<name>.<random>`` beside ``folder`` and the replaced
    folder is moved to ``.<name>.old-<pid>`` for the swap. Those a killed earlier
    write left behind are removed first (:func:`remove_stale_temporaries`).
    """
    folder, name = _target(folder)
    parent = folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)
    tmp, lock = _new_temporary(parent, name)
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        with (tmp / CATALOG).open("w", encoding="utf-8") as fh:
            json.dump(domain.catalog_json(), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        with (tmp / TASKS).open("w", encoding="utf-8") as fh:
            for task in domain.tasks:
                fh.write(json.dumps(task.to_json(), ensure_ascii=False, sort_keys=False) + "\n")
        hashes = {f: hashlib.sha256((tmp / f).read_bytes()).hexdigest() for f in (CATALOG, TASKS)}
        for fname, text in (extra_files or {}).items():
            (tmp / fname).write_text(text(hashes) if callable(text) else text, encoding="utf-8")
        if validate:
            _read.read_domain(tmp, domain.acquirable_kinds, domain.never_acquirable)
        old = None
        if folder.exists() or folder.is_symlink():
            old = parent / f".{name}.old-{os.getpid()}"
            _remove(old)
            os.replace(folder, old)
        try:
            os.replace(tmp, folder)
        except BaseException:
            if old is not None and not folder.exists():
                os.replace(old, folder)  # put the previous folder back
            raise
        if old is not None:
            _remove(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(lock)
    return folder
