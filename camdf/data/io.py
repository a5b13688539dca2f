"""Read, validate and write a domain folder (``catalog.json`` + ``tasks.jsonl``).

The reader refuses a malformed folder as a whole: it collects every problem as
``file:line: what is wrong`` and raises :class:`DomainFormatError` listing them all.
The writer is atomic: it fills a temporary sibling folder and swaps it in, so a
failed write leaves the previous folder (or nothing) behind, never half a folder.
It writes only a folder with a plain name (:func:`check_domain_name`) and removes
the temporaries a killed earlier write of the same name left beside it.
"""

from __future__ import annotations

import bisect
import json
import json.scanner
import math
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from camdf.data.model import DEFAULT_ACQUIRABLE_KINDS, KINDS, Domain, Task, Tool

CATALOG = "catalog.json"
TASKS = "tasks.jsonl"
TOOL_FIELDS = {"name", "description", "parameters", "kind", "cost"}
TASK_FIELDS = {"id", "text", "required", "candidates", "alternatives", "split", "group", "meta"}
CATALOG_FIELDS = {"domain", "source", "tools"}
DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")

try:  # a live writer locks its temporary folder, so another writer never removes it as stale
    import fcntl
except ImportError:  # pragma: no cover (not POSIX: no locks, every temporary counts as stale)
    fcntl = None


class DomainFormatError(ValueError):
    """A domain folder that does not follow the task format; ``problems`` lists each one."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} problem(s):\n" + "\n".join(self.problems))


class _LineDict(dict):
    """A JSON object that remembers the line it starts on."""

    line: int = 1


def _loads_with_lines(text: str) -> Any:
    """``json.loads`` whose objects are :class:`_LineDict` carrying their start line."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    decoder = json.JSONDecoder()
    parse_object = decoder.parse_object

    def parse_with_line(s_and_end, *args):
        _, start = s_and_end
        obj, end = parse_object(s_and_end, *args)
        out = _LineDict(obj)
        out.line = bisect.bisect_left(newlines, start) + 1
        return out, end

    decoder.parse_object = parse_with_line
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(text)


def _is_name_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_fields(obj: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for key in sorted(set(obj) - allowed):
        problems.append(f"{where}: unknown field `{key}` (expected one of {', '.join(sorted(allowed))})")


def _read_catalog(path: Path, problems: list[str]) -> tuple[str, str, list[Tool], set[str]]:
    name = f"{path.parent.name}/{CATALOG}"
    if not path.is_file():
        problems.append(f"{name}:1: missing file (expected a JSON object with a `tools` list)")
        return "", "", [], set()
    text = path.read_text(encoding="utf-8")
    try:
        doc = _loads_with_lines(text)
    except json.JSONDecodeError as err:
        problems.append(f"{name}:{err.lineno}: invalid JSON: {err.msg} (column {err.colno})")
        return "", "", [], set()
    if not isinstance(doc, dict):
        problems.append(f"{name}:1: expected a JSON object with a `tools` list, got {type(doc).__name__}")
        return "", "", [], set()
    _check_fields(doc, CATALOG_FIELDS, f"{name}:{doc.line}", problems)
    domain = doc.get("domain", path.parent.name)
    source = doc.get("source", "")
    for key, value in (("domain", domain), ("source", source)):
        if not isinstance(value, str):
            problems.append(f"{name}:{doc.line}: field `{key}` must be a string, got {type(value).__name__}")
    tools_raw = doc.get("tools")
    if tools_raw is None:
        problems.append(f"{name}:{doc.line}: missing field `tools` (expected a non-empty list of tools)")
        return str(domain), str(source), [], set()
    if not isinstance(tools_raw, list):
        problems.append(f"{name}:{doc.line}: field `tools` must be a list, got {type(tools_raw).__name__}")
        return str(domain), str(source), [], set()
    if not tools_raw:
        problems.append(f"{name}:{doc.line}: empty catalog: `tools` has no entries")
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(tools_raw):
        if not isinstance(raw, dict):
            problems.append(f"{name}:{doc.line}: tools[{i}] must be an object, got {type(raw).__name__}")
            continue
        where = f"{name}:{raw.line}"
        ok = True
        _check_fields(raw, TOOL_FIELDS, where, problems)
        tname = raw.get("name")
        if not isinstance(tname, str) or not tname.strip():
            problems.append(f"{where}: tools[{i}]: field `name` must be a non-empty string, got {tname!r}")
            ok = False
        elif tname in seen:
            problems.append(f"{where}: duplicate tool name `{tname}` (first defined at line {seen[tname]})")
            ok = False
        else:
            seen[tname] = raw.line
        desc = raw.get("description", "")
        if not isinstance(desc, str):
            problems.append(f"{where}: tool `{tname}`: field `description` must be a string")
            ok = False
        params = raw.get("parameters")
        if params is not None and not isinstance(params, dict):
            problems.append(f"{where}: tool `{tname}`: field `parameters` must be a JSON schema object")
            ok = False
        kind = raw.get("kind")
        if kind not in KINDS:
            problems.append(f"{where}: tool `{tname}`: field `kind` must be one of {', '.join(KINDS)}, got {kind!r}")
            ok = False
        cost = raw.get("cost")
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost <= 0
        ):
            problems.append(f"{where}: tool `{tname}`: field `cost` must be a finite number > 0, got {cost!r}")
            ok = False
        if ok:
            tools.append(
                Tool(
                    name=tname,
                    description=desc,
                    parameters=_plain(params),
                    kind=kind,
                    cost=None if cost is None else float(cost),
                )
            )
    # Names of tools that are declared but invalid still count as known, so one bad
    # tool is reported once, not again at every task that requires it.
    return str(domain), str(source), tools, set(seen)


def _plain(value: Any) -> Any:
    """Strip the line-tracking dict subclass so domain objects hold plain JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _read_tasks(
    path: Path, declared: set[str], acquirable: set[str], problems: list[str], dropped: Counter
) -> list[Task]:
    name = f"{path.parent.name}/{TASKS}"
    if not path.is_file():
        problems.append(f"{name}:1: missing file (expected one JSON task object per line)")
        return []
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    check_names = bool(declared)
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{name}:{lineno}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as err:
                problems.append(f"{where}: invalid JSON: {err.msg} (column {err.colno})")
                continue
            if not isinstance(raw, dict):
                problems.append(f"{where}: expected a JSON object, got {type(raw).__name__}")
                continue
            _check_fields(raw, TASK_FIELDS, where, problems)
            n_before = len(problems)
            tid = raw.get("id")
            if not isinstance(tid, str) or not tid.strip():
                problems.append(f"{where}: field `id` must be a non-empty string, got {tid!r}")
            elif tid in seen:
                problems.append(f"{where}: duplicate task id `{tid}` (first at line {seen[tid]})")
            else:
                seen[tid] = lineno
            label = f"task `{tid}`" if isinstance(tid, str) else "task"
            text = raw.get("text")
            if not isinstance(text, str):
                problems.append(f"{where}: {label}: field `text` must be a string, got {text!r}")
            required = raw.get("required")
            if not _is_name_list(required):
                problems.append(f"{where}: {label}: field `required` must be a list of tool names, got {required!r}")
                required = []
            elif len(set(required)) != len(required):
                problems.append(f"{where}: {label}: `required` lists a tool twice")
            candidates = raw.get("candidates")
            if candidates is not None and not _is_name_list(candidates):
                problems.append(f"{where}: {label}: field `candidates` must be a list of tool names")
                candidates = None
            alternatives = raw.get("alternatives", [])
            if not isinstance(alternatives, list) or not all(_is_name_list(a) for a in alternatives):
                problems.append(f"{where}: {label}: field `alternatives` must be a list of lists of tool names")
                alternatives = []
            split = raw.get("split")
            if split is not None and (not isinstance(split, str) or not split):
                problems.append(f"{where}: {label}: field `split` must be a non-empty string, got {split!r}")
            group = raw.get("group")
            if group is not None and (not isinstance(group, str) or not group.strip()):
                problems.append(f"{where}: {label}: field `group` must be a non-empty string, got {group!r}")
            meta = raw.get("meta", {})
            if not isinstance(meta, dict):
                problems.append(f"{where}: {label}: field `meta` must be an object, got {type(meta).__name__}")
            if check_names:
                for field_name, names in (
                    ("required", required),
                    ("candidates", candidates or []),
                    *((f"alternatives[{k}]", alt) for k, alt in enumerate(alternatives)),
                ):
                    for tool in names:
                        if tool not in declared:
                            problems.append(f"{where}: {label}: unknown tool `{tool}` in `{field_name}` (not in catalog)")
                if candidates is not None:
                    for tool in required:
                        if tool in declared and tool not in candidates:
                            problems.append(f"{where}: {label}: required tool `{tool}` is not in `candidates`")
            if len(problems) > n_before:
                continue
            kept = tuple(t for t in required if t in acquirable)
            dropped.update(t for t in required if t not in acquirable)
            tasks.append(
                Task(
                    id=tid,
                    text=text,
                    required=kept,
                    candidates=None if candidates is None else tuple(candidates),
                    alternatives=tuple(tuple(t for t in alt if t in acquirable) for alt in alternatives),
                    split=split,
                    meta=meta,
                    group=group,
                )
            )
    if not seen and not any(p.startswith(name) for p in problems):
        problems.append(f"{name}:1: no tasks (expected one JSON task object per line)")
    return tasks


def read_domain(
    folder: str | os.PathLike,
    acquirable_kinds: Iterable[str] = DEFAULT_ACQUIRABLE_KINDS,
    never_acquirable: Iterable[str] = (),
) -> Domain:
    """Read and validate a domain folder.

    Parameters
    ----------
    folder : path
        Folder holding ``catalog.json`` and ``tasks.jsonl``.
    acquirable_kinds : iterable of str
        Tool kinds that are acquirable (default ``read`` and ``generic``).
    never_acquirable : iterable of str
        Tool names never acquirable whatever their kind.

    Returns
    -------
    Domain
        With ``dropped_required`` counting required names that were not acquirable.

    Raises
    ------
    DomainFormatError
        Listing every problem as ``file:line: what is wrong``.
    """
    folder = Path(folder)
    acquirable_kinds = tuple(acquirable_kinds)
    never_acquirable = tuple(never_acquirable)
    problems: list[str] = []
    bad_kinds = [k for k in acquirable_kinds if k not in KINDS]
    if bad_kinds:
        raise ValueError(f"acquirable_kinds: unknown kind(s) {bad_kinds}, expected a subset of {list(KINDS)}")
    if not folder.is_dir():
        raise DomainFormatError([f"{folder}: not a folder (expected a folder with {CATALOG} and {TASKS})"])
    dname, source, tools, declared = _read_catalog(folder / CATALOG, problems)
    for name in never_acquirable:
        if declared and name not in declared:
            problems.append(f"never_acquirable: unknown tool `{name}` (not in catalog)")
    acquirable = {t.name for t in tools if t.kind in acquirable_kinds and t.name not in never_acquirable}
    dropped: Counter = Counter()
    tasks = _read_tasks(folder / TASKS, declared, acquirable, problems, dropped)
    if problems:
        raise DomainFormatError(problems)
    domain = Domain(
        name=dname,
        source=source,
        tools=tools,
        tasks=tasks,
        acquirable_kinds=acquirable_kinds,
        never_acquirable=never_acquirable,
        dropped_required=dict(sorted(dropped.items())),
    )
    return domain


def check_domain_name(name: Any) -> str:
    """``name`` if it is a plain name, safe as one folder under the data folder; else ValueError.

    A plain name is letters, digits, ``_`` and ``-``, starting with a letter or digit:
    never empty, ``.``, ``..``, a path (``a/b``, ``../x``) or a hidden name.
    """
    if not isinstance(name, str) or not DOMAIN_NAME.fullmatch(name):
        raise ValueError(f"domain.name: expected a plain name (letters, digits, `_`, `-`), got {name!r}")
    return name


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
    domain: Domain, folder: str | os.PathLike, extra_files: dict[str, str] | None = None, validate: bool = True
) -> Path:
    """Write ``domain`` to ``folder`` atomically (temporary sibling, then swap).

    Parameters
    ----------
    domain : Domain
    folder : path
        Target folder; replaced whole if it exists. Its name must be a plain name
        (:func:`check_domain_name`), checked before anything is written or removed.
    extra_files : dict of str to str, optional
        More text files to write beside the two data files (e.g. ``report.md``).
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
        for fname, text in (extra_files or {}).items():
            (tmp / fname).write_text(text, encoding="utf-8")
        if validate:
            read_domain(tmp, domain.acquirable_kinds, domain.never_acquirable)
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
