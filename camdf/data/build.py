"""The data stage: convert a source into ``data/<domain>/``, cached by content key."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from camdf.cache import code_version, hash_json, hash_paths, package_versions
from camdf.data.io import write_domain
from camdf.data.model import Domain
from camdf.data.report import render_report, summarize

MANIFEST = "manifest.json"


@dataclass
class DataBuild:
    """What the data stage did for one domain."""

    folder: Path
    key: str
    cached: bool
    summary: dict[str, Any]


def data_key(config: dict[str, Any], packages: list[str], inputs: list[str]) -> str:
    """Cache key: resolved domain config + camdf.data code + package versions + input bytes."""
    return hash_json(
        {
            "config": config,
            "code": code_version("camdf.data", "camdf.cache"),
            "packages": package_versions(packages),
            "inputs": hash_paths(inputs) if inputs else None,
        }
    )


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def build_domain(
    convert: Callable[[], Domain],
    out_dir: str | Path,
    config: dict[str, Any],
    packages: list[str] = (),
    inputs: list[str] = (),
    force: bool = False,
) -> DataBuild:
    """Convert a domain and write it with its report, unless the cached copy has the same key.

    Parameters
    ----------
    convert : callable returning Domain
        The converter (tau2, BFCL, or a user folder reader).
    out_dir : path
        ``data/<domain>``; replaced atomically.
    config : dict
        The resolved domain config (part of the key).
    packages, inputs : list of str
        Distribution packages and input paths whose versions/bytes enter the key.
    force : bool
        Rebuild even when the key matches.
    """
    out_dir = Path(out_dir)
    key = data_key(config, list(packages), list(inputs))
    manifest = read_manifest(out_dir)
    if not force and manifest is not None and manifest.get("key") == key:
        return DataBuild(out_dir, key, True, manifest["summary"])
    domain = convert()
    domain.name = config.get("name", domain.name)
    summary = summarize(domain)
    files = {
        "report.md": render_report(domain, summary),
        MANIFEST: json.dumps({"key": key, "config": config, "summary": summary}, indent=2, sort_keys=True) + "\n",
    }
    write_domain(domain, out_dir, extra_files=files)  # validated before it is swapped in
    return DataBuild(out_dir, key, False, summary)
