"""Cell identity: which config keys define a cell, its content key and its readable run name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from camdf.common.fingerprint import code_version, hash_json, hash_paths
from camdf.core.payoff import has_fallback
from camdf.data.io import CATALOG, TASKS


#: Domain keys that say where and how the domain's input is read, not what it is: the converted files' bytes
#: stand for them in the key (``cell_key``), so a cell keeps its key whichever folder holds the checkout or
#: the benchmark (an absolute ``$STABLETOOLBENCH`` and ``<root>/../shared/...`` are one cell).
DOMAIN_INPUT_KEYS = ("source", "inputs", "converter", "packages", "make_data", "make_needs")


#: The top-level config keys that define a cell: every one is hashed into its key (:func:`cell_config`).
#: The top-level keys that do not define a cell, each with why. Every other key of a cell's config does (the key is
#: opt-out: a new setting is in it unless named here; tests/unit/pipeline/test_identity.py changes every defining
#: leaf of every experiment's config and sees the cell config change).
NOT_CELL_KEYS = {
    "paths": "where files go, not what is computed",
    "tracking": "which store records the cell",
    "hydra": "Hydra's own settings (folders, launcher, logging)",
    "make_needs": "what `make` builds before the experiment",
    "make_reproduce": "whether `make reproduce` runs the experiment",
    "search": "hashed where the payoff reads it (recovery), below",
}


def _without_inputs(domain: Any) -> Any:
    return {k: v for k, v in domain.items() if k not in DOMAIN_INPUT_KEYS} if isinstance(domain, dict) else domain


def cell_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved config that defines a cell (what the cell key hashes): every key but
    :data:`NOT_CELL_KEYS`, a domain's input locations left out (their bytes stand for them), and ``search`` where
    the payoff reads it."""
    out = {k: v for k, v in cfg.items() if k not in NOT_CELL_KEYS}
    if "domain" in out:
        out["domain"] = _without_inputs(out["domain"])
    if isinstance(out.get("transfer"), dict) and isinstance(out["transfer"].get("domains"), dict):
        out["transfer"] = {**out["transfer"], "domains": {name: _without_inputs(d)
                                                          for name, d in out["transfer"]["domains"].items()}}
    if has_fallback(cfg.get("payoff")):  # the fallback defines the cell only where the payoff reads it
        out["search"] = cfg.get("search")
    return out


def cell_key(cfg: dict[str, Any], data_dir: Path) -> str:
    """Resolved cell config + code version (camdf and the stage entry points) + fingerprint of the domain's data
    files (and of every domain a transfer cell trains on, ``transfer.domains``) + the OpenBLAS kernel."""
    key = {"cell": cell_config(cfg), "code": code_versions(),
           "data": data_fingerprint(data_dir, cfg["domain"]["name"]), "blas_kernel": blas_kernel()}
    transfer = cfg.get("transfer") or {}
    if transfer.get("leave_out"):
        key["training_data"] = {name: data_fingerprint(data_dir, d["name"])
                                for name, d in sorted((transfer.get("domains") or {}).items())}
    return hash_json(key)


def data_fingerprint(data_dir: str | Path, name: str) -> str:
    """The bytes of the converted domain ``data_dir/<name>`` (its catalog and tasks): what stands for the domain's
    input in every key built from it (a cell, its scores, its costs) and the digest of the cell's logged dataset."""
    folder = Path(data_dir, name)
    return hash_paths([folder / CATALOG, folder / TASKS])


def code_versions() -> dict[str, str]:
    """Fingerprints of the ``camdf`` package and of the stage entry points under ``pipelines/`` (read, not imported)."""
    return {"camdf": code_version("camdf"), "pipelines": hash_paths(sorted(PIPELINES_DIR.glob("*.py")))}


def blas_kernel() -> str:
    """The kernel(s) of the loaded BLAS libraries as threadpoolctl reports them (``pipelines`` pins OpenBLAS's)."""
    from threadpoolctl import threadpool_info

    kernels = sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("user_api") == "blas"})
    return ",".join(kernels) or "none loaded"


CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
PIPELINES_DIR = CONF_DIR.parent / "pipelines"


def code_stamp() -> str:
    """Short version of everything a result depends on in the checkout: ``camdf``, ``pipelines`` and ``conf/``.

    The README Results carry it (:func:`camdf.reporting.readme.results_markdown`);
    ``camdf results check`` compares it with the checkout.
    """
    return hash_json({"code": code_versions(), "conf": hash_paths([CONF_DIR])})[:12]


def cell_name(cfg: dict[str, Any]) -> str:
    """Readable run name: domain/scorer/regime/lam/d (+ payoff, noise and label source when not default)."""
    c = cfg["cost"]
    parts = [cfg["domain"]["name"], cfg["scorer"].get("label", cfg["scorer"]["name"]), c["regime"], f"lam={c['lam']}", f"d={c['d']}"]
    if cfg.get("payoff", "exact") != "exact":
        parts.append(cfg["payoff"])
    if has_fallback(cfg.get("payoff")):
        search = cfg.get("search") or {}
        parts.append(f"search={search.get('cost')}x{search.get('k')}" + (f"~{search['noise']}" if search.get("noise")
                                                                          else "")
                     + (f"x{search['rounds']}rounds" if int(search.get("rounds") or 1) > 1 else "")
                     + ("" if search.get("aware", True) else "-unaware"))
    if float(cfg.get("label_noise", 0)) > 0:
        parts.append(f"eps={cfg['label_noise']}")
    if cfg.get("label_source", "data") != "data":
        parts.append(f"labels={cfg['label_source']}")
    folds = cfg.get("folds") or {}
    if folds.get("protocol", "kfold") != "kfold":
        by = folds.get("group_by")
        parts.append(f"folds={folds['protocol']}" + (f"@{by.removeprefix('meta.')}" if by else ""))
    candidates = cfg.get("candidates") or {}
    if candidates.get("top_k") is not None:
        parts.append(f"top{candidates['top_k']}")
    if candidates.get("fit_depth") is not None:
        parts.append(f"fit{candidates['fit_depth']}")
    if cfg.get("list_cost") is not None:
        parts.append(f"list_cost={cfg['list_cost']}")
    return "/".join(parts)
