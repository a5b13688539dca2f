"""What ``make data`` and ``make reproduce`` run, read from ``conf/``: no hand-kept list in the Makefile.

A domain config (``conf/domain/<name>.yaml``) that ``make data`` builds says so with
``make_data: <order>``; an experiment file (``conf/experiment/<name>.yaml``) that ``make reproduce``
runs says so with ``make_reproduce: <order>``. The lists come in ascending order (a domain built
from others, like ``retail_d100``, after its sources); a file without the key is left out.

A file may also declare ``make_needs: {env: <VAR>, get: <how to get it>}``: it reads a folder that is
not part of the checkout (A28's StableToolBench queries), named by the environment variable ``VAR``;
it is listed only when ``$VAR`` names an existing folder, and ``... skipped`` prints one line per file
left out, saying how to get the folder.

``python -m camdf.pipeline.make_lists domains`` prints the domains comma-separated (a Hydra sweep
value); ``... experiments`` prints the experiments space-separated (a shell loop).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

from camdf.pipeline.identity import CONF_DIR


def _unmet(path: Path, needs) -> str | None:
    """Why a file's ``make_needs`` is not met (one line saying how to meet it), or None when it is (or has none)."""
    if needs is None:
        return None
    if not isinstance(needs, dict) or not isinstance(needs.get("env"), str) or not isinstance(needs.get("get"), str):
        raise ValueError(f"{path}: make_needs: expected {{env: <VARIABLE>, get: <how to get the folder>}}, got {needs!r}")
    folder = os.environ.get(needs["env"], "")
    if folder and Path(folder).is_dir():
        return None
    return f"{needs['env']}={folder or '(unset)'} is not a folder|{path.parent.name} {path.stem}|{needs['get']}"


def _declared(folder: Path, key: str, skipped: list[str] | None = None) -> list[str]:
    """The stems of ``folder``'s YAML files declaring ``key: <int>``, by that int; raises on a bad value or a tie.

    A file whose ``make_needs`` is not met is left out (its line appended to ``skipped``)."""
    found: dict[str, int] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        value = data.get(key)
        if value is None:
            continue
        why = _unmet(path, data.get("make_needs"))
        if why is not None:
            if skipped is not None:
                skipped.append(why)
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{path}: {key}: expected an integer (the order), got {value!r}")
        if value in found.values():
            other = next(n for n, v in found.items() if v == value)
            raise ValueError(f"{path}: {key}: {value} is also {other}.yaml's; each order is used once")
        found[path.stem] = value
    return sorted(found, key=found.__getitem__)


def make_domains(conf_dir: Path = CONF_DIR) -> list[str]:
    """The domains ``make data`` builds, in order: ``conf/domain/*.yaml`` with ``make_data``."""
    return _declared(Path(conf_dir) / "domain", "make_data")


def make_experiments(conf_dir: Path = CONF_DIR) -> list[str]:
    """The experiments ``make reproduce`` runs, in order: ``conf/experiment/*.yaml`` with ``make_reproduce``."""
    return _declared(Path(conf_dir) / "experiment", "make_reproduce")


def skipped(conf_dir: Path = CONF_DIR) -> list[str]:
    """One line per missing ``make_needs`` folder: what ``make`` leaves out without it and how to get it."""
    found: list[str] = []
    _declared(Path(conf_dir) / "domain", "make_data", found)
    _declared(Path(conf_dir) / "experiment", "make_reproduce", found)
    by_need: dict[str, list[tuple[str, str]]] = {}
    for item in found:
        need, what, get = item.split("|", 2)
        by_need.setdefault(need, []).append((what, get))
    return [f"{need}: {', '.join(w for w, _ in items)} skipped; to run them, {items[-1][1]}"
            for need, items in by_need.items()]


def main(argv: list[str]) -> int:
    if argv == ["domains"]:
        print(",".join(make_domains()))
    elif argv == ["experiments"]:
        print(" ".join(make_experiments()))
    elif argv == ["skipped"]:
        print("\n".join(skipped()))
    else:
        print("usage: python -m camdf.pipeline.make_lists {domains|experiments|skipped}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
