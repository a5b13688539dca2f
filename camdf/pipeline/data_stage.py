"""The data stage: convert a source into ``data/<domain>/``, cached by content key.

A domain config may set ``label_source``: ``annotated`` (default; G_x as the
converter gives it) or ``derived`` (G_x derived by running the tools of the
executable domain named by ``executable``, :mod:`camdf.sufficiency`). Derived
labels add the sufficiency and agreement sections (with the label audit) to the
report, and exclude the tasks whose gold plan does not execute unless
``keep_non_executable: true``. ``where`` filters the tasks
(:mod:`camdf.data.filters`) after labelling; its counts (the excluded plans
included, as ``meta.gold_executable``) go to the report and the manifest.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from camdf.common.fingerprint import code_version, defining_package, hash_json, hash_paths, package_versions
from camdf.data.filters import apply_where, check_where
from camdf.data.io import CATALOG, TASKS, check_domain_name, remove_stale_temporaries, write_domain
from camdf.data.model import TOOL_KINDS, Domain
from camdf.data.overview import render_report, summarize

MANIFEST = "manifest.json"


@dataclass
class DataBuild:
    """What the data stage did for one domain."""

    folder: Path
    key: str
    cached: bool
    summary: dict[str, Any]


LABEL_SOURCES = ("annotated", "derived")
#: The measured cost regime ``report_execution_costs: true`` lists in the data report (declared by an integration).
EXECUTION_REGIME = "execution"


def data_key(
    config: dict[str, Any], packages: list[str], inputs: list[str], code: tuple[str, ...] = ("camdf.data", "camdf.common.fingerprint")
) -> str:
    """Cache key: resolved domain config + code of ``code`` modules + package versions + input bytes."""
    return hash_json(
        {
            "config": config,
            "code": code_version(*code),
            "packages": package_versions(packages),
            "inputs": hash_paths(inputs) if inputs else None,
        }
    )


def _label_source(config: dict[str, Any]) -> str:
    source = config.get("label_source", "annotated")
    if source not in LABEL_SOURCES:
        raise ValueError(
            f"domain.label_source: must be one of {', '.join(LABEL_SOURCES)}, got {source!r}"
        )
    return source


def executable_of(config: dict[str, Any]) -> str:
    """The registry name (:mod:`camdf.integrations.registry`) in ``config["executable"]``, checked.

    Derived labels run the tools of the executable domain the config names,
    whatever the catalog's ``domain`` field says, so a user folder over tau2
    retail's database derives with ``executable: retail``.
    """
    from camdf.integrations.registry import executable_domains

    name = config.get("executable")
    known = ", ".join(executable_domains())
    if name is None:
        raise ValueError(f"domain.executable: label_source `derived` needs the executable domain whose tools "
                         f"run the check (one of {known}); or use label_source: annotated")
    if name not in executable_domains():
        raise ValueError(f"domain.executable: {name!r} is not an executable domain (expected one of {known})")
    return name


def derive_labels(
    domain: Domain, cache_dir: str | Path | None, executable: str | None = None
) -> tuple[Domain, list[str], dict[str, Any]]:
    """Relabel ``domain`` with G_x derived by execution on the registry's ``executable`` domain (default:
    the one named like the domain); return it, the report sections and a summary."""
    from camdf import sufficiency
    from camdf.integrations.registry import get_executable

    name = executable_of({"executable": executable or domain.name})
    der = sufficiency.derive(domain, get_executable(name), cache_dir)
    sections = [sufficiency.sufficiency_section(der, "derived"), sufficiency.agreement_section(der)]
    return sufficiency.relabel(domain, der, "derived"), sections, sufficiency.summary(der)


def _converter_package(config: dict[str, Any]) -> tuple[str, ...]:
    """The package defining the config's converter (``converter._target_``), when it can be imported.

    A target that does not import adds nothing: converting refuses it with its own message.
    """
    target = (config.get("converter") or {}).get("_target_") if isinstance(config.get("converter"), dict) else None
    if not isinstance(target, str) or "." not in target:
        return ()
    module, _, name = target.rpartition(".")
    try:
        return (defining_package(getattr(importlib.import_module(module), name)),)
    except (ImportError, AttributeError):
        return ()


def stage_code(executable: str | None, execution_costs: bool, config: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The modules and packages whose source enters a domain's data key.

    The data code and the package of the config's converter (``converter._target_``, e.g.
    ``camdf.integrations.tau2``) always; with derived labels (``executable`` names the registry's domain)
    :mod:`camdf.sufficiency` and the executable domain's whole integration package, where
    its derivation rules live (:func:`camdf.integrations.registry.executable_code`); with the
    execution-cost report, :mod:`camdf.costs` and the package that measures them
    (:func:`camdf.integrations.registry.measure_code`). No module is listed by hand, so an edit
    to any module of an integration rebuilds what it made.
    """
    from camdf.integrations.registry import executable_code, measure_code

    code: tuple[str, ...] = ("camdf.data", "camdf.common.fingerprint", *_converter_package(config or {}))
    if executable is not None:
        code += ("camdf.sufficiency", *executable_code(executable))
    if execution_costs:
        code += ("camdf.costs", *measure_code(EXECUTION_REGIME))
    return tuple(dict.fromkeys(code))  # once each, in order


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's ``manifest.json`` as a dict; None when there is none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


#: The data files whose sha256 the manifest holds (``files``) and every reading stage checks.
DATA_FILES = (CATALOG, TASKS)


class DataNotReady(ValueError):
    """A domain folder a stage would read is not built, or no longer matches its manifest: one line, rerun make data."""


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 (hex) of each of :data:`DATA_FILES` in ``folder``."""
    return {name: hashlib.sha256(Path(folder, name).read_bytes()).hexdigest() for name in DATA_FILES}


def verify_built(data_dir: Path, name: str) -> dict[str, Any]:
    """The manifest of ``data_dir/name``, once the folder is built and its data files match the manifest's hashes.

    Raises
    ------
    DataNotReady
        No ``manifest.json`` (not built, or an interrupted build), a manifest that does not
        parse or predates file hashes, a data file missing, or one whose bytes differ from
        the manifest's sha256 (edited by hand, or copied in part). The message names the file
        and says to rerun the data stage (which rebuilds a folder that does not match).
    """
    folder = Path(data_dir, name)
    rebuild = f"rerun `make data` (or `python -m pipelines.data domain={name}`)"
    if not (folder / MANIFEST).is_file():
        raise DataNotReady(f"{folder}: domain `{name}` is not built; run `make data` "
                           f"(or `python -m pipelines.data domain={name}`) first")
    try:
        manifest = read_manifest(folder)
        expected = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataNotReady(f"{folder / MANIFEST}: not a manifest with file hashes ({type(err).__name__}); "
                           f"{rebuild}") from None
    for fname in DATA_FILES:
        path = folder / fname
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as err:
            raise DataNotReady(f"{path}: cannot read ({err.strerror or err}); {rebuild}") from None
        if not isinstance(expected, dict) or digest != expected.get(fname):
            raise DataNotReady(f"{path}: does not match {MANIFEST} (edited after the data stage wrote it?); "
                               f"{rebuild}")
    return manifest


def _matches(out_dir: Path, manifest: dict[str, Any]) -> bool:
    """Whether the folder's data files are the ones its manifest hashed (a cached build is reused only then)."""
    try:
        return manifest.get("files") == file_hashes(out_dir)
    except OSError:
        return False


def _task_filter(config: dict[str, Any], derived: bool) -> dict:
    """``config["where"]`` checked, with derived labels' non-executable gold plans filtered out unless
    ``keep_non_executable``; ``acquirable_kinds`` and ``keep_non_executable`` checked too (ValueError naming the key),
    before anything is converted."""
    where = check_where(config.get("where"))  # a bad filter is refused before anything is converted
    kinds = config.get("acquirable_kinds")
    if kinds is not None and (not isinstance(kinds, (list, tuple)) or not set(map(str, kinds)) <= set(TOOL_KINDS)):
        raise ValueError(f"domain.acquirable_kinds: expected a list of tool kinds from {', '.join(TOOL_KINDS)}, "
                         f"got {kinds!r}")
    keep = config.get("keep_non_executable", False)
    if not isinstance(keep, bool):
        raise ValueError(f"domain.keep_non_executable: expected true or false, got {keep!r}")
    if derived and not keep:  # gold plans that do not execute are excluded, counted as a filter
        where = {**where, "meta": {**where.get("meta", {}), "gold_executable": [True]}}
    return where


def _check_inputs(inputs, name: str) -> None:
    """Every input exists (ValueError naming it as configured, before the fingerprint reads anything)."""
    missing = [str(p) for p in inputs if not os.path.lexists(p)]
    if missing:
        raise ValueError(f"domain.source: {missing[0]}: no such file or folder (the domain `{name}` reads it; set the "
                         "domain config's `source`, or the folder's setting such as STABLETOOLBENCH, to where it is)")


def build_domain(
    convert: Callable[[], Domain],
    out_dir: str | Path,
    config: dict[str, Any],
    packages: list[str] = (),
    inputs: list[str] = (),
    force: bool = False,
    cache_dir: str | Path | None = None,
    validated_input: bool = False,
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
    cache_dir : path, optional
        Folder for stage caches (the derivation of labels caches there).
    validated_input : bool
        ``convert`` is the task-format reader (its tasks passed the validator; the written copy is not read
        back through it; a derived domain is read back whatever this says).

    Raises
    ------
    ValueError
        The folder's name or ``config["name"]`` is not a plain name (:func:`check_domain_name`),
        ``config["where"]`` is not a valid task filter (:func:`camdf.data.filters.check_where`),
        ``config["executable"]`` names no executable domain while labels are derived
        (:func:`executable_of`), ``acquirable_kinds`` names an unknown kind or ``keep_non_executable``
        is not a boolean; checked first,
        before anything is read, converted or written.
    """
    out_dir = Path(out_dir)
    check_domain_name(out_dir.name)
    if "name" in config:
        check_domain_name(config["name"])
    derived = _label_source(config) == "derived"
    executable = executable_of(config) if derived else None
    where = _task_filter(config, derived)
    exec_costs = bool(config.get("report_execution_costs", False))
    _check_inputs(inputs, config.get("name", out_dir.name))
    key = data_key(config, list(packages), list(inputs), stage_code(executable, exec_costs, config))
    manifest = read_manifest(out_dir)
    if not force and manifest is not None and manifest.get("key") == key and _matches(out_dir, manifest):
        remove_stale_temporaries(out_dir)  # a killed forced rebuild's leftovers (the writer removes them otherwise)
        return DataBuild(out_dir, key, True, manifest["summary"])
    domain = convert()
    sections: list[str] = []
    extra: dict[str, Any] = {}
    if derived:
        domain, sections, extra["sufficiency"] = derive_labels(domain, cache_dir, executable)
    if where:
        domain, extra["filter"] = apply_where(domain, where)
    domain.name = config.get("name", domain.name)
    if exec_costs:
        from camdf.integrations.registry import cost_measures

        regime = cost_measures()[EXECUTION_REGIME]
        measured = regime.measure(domain, cache_dir=cache_dir)
        if regime.section is not None:
            sections.append(regime.section({domain.name: measured}))
        extra["execution_costs"] = measured["mean_tokens"].round(3).to_dict()
    summary = {**summarize(domain), "label_source": "derived" if derived else "annotated", **extra}
    files = {
        "report.md": render_report(domain, summary, extra_sections=sections),
        # The data files' hashes are known once they are written: write_domain calls this with them.
        MANIFEST: lambda hashes: json.dumps({"key": key, "config": config, "summary": summary, "files": hashes},
                                            indent=2, sort_keys=True) + "\n",
    }
    # A converter's output is read back through the validator before it is swapped in.
    write_domain(domain, out_dir, extra_files=files, validate=derived or not validated_input)
    return DataBuild(out_dir, key, False, summary)
