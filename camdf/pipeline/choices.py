"""Config-group choices on a stage's command line, checked before Hydra composes (kept light: no numpy)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from camdf.pipeline.identity import CONF_DIR

# Options that point Hydra at other config folders, where choices this checkout lacks may live.
_OTHER_CONFIGS = ("-cd", "--config-dir", "-cp", "--config-path", "-cn", "--config-name", "hydra.searchpath")


def check_choices(argv: Sequence[str] | None = None, conf_dir: Path = CONF_DIR) -> None:
    """Refuse a config-group choice that names no file under ``conf/``, before Hydra composes.

    ``domain=nope`` would otherwise end in Hydra's composition error (exit 1, several lines)
    and ``domain=../data`` in an error about another file. Each choice of a group of this
    checkout's ``conf/`` (one value, or each of a sweep's) must be a config of that group;
    otherwise one line ``error: <group>: no config '<value>' (expected one of ...)`` and exit 2.
    Skipped when the command line points Hydra at other config folders (``-cd``,
    ``hydra.searchpath``): those may hold the choice.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a.split("=", 1)[0].lstrip("+~") in _OTHER_CONFIGS or a in _OTHER_CONFIGS for a in args):
        return
    try:
        overrides = OverridesParser.create().parse_overrides([a for a in args if not a.startswith("-")])
    except HydraException:
        return  # a syntax error: Hydra's own message says where
    for o in overrides:
        group = o.key_or_group
        if o.is_delete() or group.startswith("hydra") or not (conf_dir / group).is_dir():
            continue
        try:
            values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.value()]
        except HydraException:
            continue  # glob(...): Hydra expands it against the group itself
        names = sorted(p.relative_to(conf_dir / group).with_suffix("").as_posix()
                       for p in (conf_dir / group).rglob("*.yaml"))
        for value in values:
            if value is None or (isinstance(value, str) and value in names):
                continue
            shown = ", ".join(names)
            print(f"error: {group}: no config {str(value)!r} (expected one of {shown})", file=sys.stderr)
            raise SystemExit(2)
