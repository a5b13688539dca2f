"""What ``make data`` and ``make reproduce`` run, read from ``conf/``: no hand-kept list in the Makefile.

A domain config (``conf/domain/<name>.yaml``) that ``make data`` builds says so with
``make_data: <order>``; an experiment file (``conf/experiment/<name>.yaml``) that ``make reproduce``
runs says so with ``make_reproduce: <order>``. The lists come in ascending order (a domain built
from others, like ``retail_d100``, after its sources); a file without the key is left out.

``python -m camdf.pipeline.targets domains`` prints the domains comma-separated (a Hydra sweep
value); ``... experiments`` prints the experiments space-separated (a shell loop).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from camdf.pipeline.identity import CONF_DIR


def _declared(folder: Path, key: str) -> list[str]:
    """The stems of ``folder``'s YAML files declaring ``key: <int>``, by that int; raises on a bad value or a tie."""
    found: dict[str, int] = {}
    for path in sorted(folder.glob("*.yaml")):
        value = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get(key)
        if value is None:
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


def main(argv: list[str]) -> int:
    if argv == ["domains"]:
        print(",".join(make_domains()))
    elif argv == ["experiments"]:
        print(" ".join(make_experiments()))
    else:
        print("usage: python -m camdf.pipeline.targets {domains|experiments}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
