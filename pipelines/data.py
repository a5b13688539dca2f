"""Data stage: convert one domain into ``data/<name>/``.

Inputs: the installed benchmark package (tau2, BFCL) or a user folder, per ``conf/domain/``.
Outputs: ``data/<name>/catalog.json``, ``tasks.jsonl``, ``report.md``, ``manifest.json``; with
``label_source: derived``, the derivation cache under ``paths.cache_dir``.
Make target: ``make data`` (all built-in domains as one Hydra multirun).

``domain.name`` is checked first (:func:`camdf.data.io.check_domain_name`): a name that
is not a plain folder name (``""``, ``.``, ``../x``, ``a/b``) stops the stage with one
line on stderr and exit code 2, before anything is converted, read or written; so does
a bad task filter ``domain.where`` (:func:`camdf.data.filters.check_where`). A folder or
file the converter refuses (:class:`camdf.data.io.DomainFormatError`, an unreadable input)
stops it the same way, exit 2, one problem per line, ``data/<name>/`` untouched. A
``domain.converter._target_`` outside the built-in converters is refused by the schema
(:func:`camdf.pipeline.checks.values.converters`) before anything is imported from it.
"""

from pathlib import Path

import hydra
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

import camdf.pipeline.resolvers  # noqa: F401  (registers resolvers)
from camdf.pipeline.boundary import run_stage, stage
from camdf.data.filters import check_where
from camdf.data.io import DomainFormatError, check_domain_name, read_domain
from camdf.pipeline.data_stage import build_domain
from camdf.pipeline.checks.values import checked


_READER = f"{read_domain.__module__}.{read_domain.__name__}"  # the task-format reader's _target_


def _select(cfg: DictConfig, key: str):
    return OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)


def _check_folder(folder) -> None:
    """A user domain's folder (``domain.converter.folder``) must be a folder, checked before it is read."""
    if folder is None or Path(folder).is_dir():
        return
    what = "does not exist" if not Path(folder).exists() else "is not a folder"
    raise ValueError(f"domain.converter.folder: {folder} {what} (expected a folder holding catalog.json and "
                     "tasks.jsonl in the task format, docs/task-format.md)")


def _convert(converter: DictConfig):
    try:
        return instantiate(converter)
    except InstantiationException as err:  # Hydra wraps the converter's refusal in one escaped line
        if isinstance(err.__cause__, (ValueError, OSError)):
            raise err.__cause__ from None
        raise


def _refusal(name: str, err: Exception) -> ValueError:
    """The refusal's text: a header line, then one problem per line."""
    if isinstance(err, DomainFormatError):
        return ValueError(f"domain `{name}`: refused, {len(err.problems)} problem(s):\n" + "\n".join(err.listed()))
    if isinstance(err, OSError) and err.filename is not None:
        return ValueError(f"domain `{name}`: {err.filename}: cannot read: {err.strerror}")
    return ValueError(f"domain `{name}`: {err}")


def _refuse(err: Exception, cfg: DictConfig):
    from camdf.pipeline.checks.values import refuse  # the stages' refusal: exit 2, Hydra's job folder removed

    refuse(err, _select(cfg, "paths.output_dir"))


@hydra.main(version_base="1.3", config_path="../conf", config_name="data")
@stage
def main(cfg: DictConfig) -> None:
    try:
        name = check_domain_name(_select(cfg, "domain.name"))
        where = _select(cfg, "domain.where")
        check_where(OmegaConf.to_container(where, resolve=True) if OmegaConf.is_config(where) else where)
        _check_folder(_select(cfg, "domain.converter.folder"))
    except ValueError as err:
        _refuse(err, cfg)
    checked(cfg, "data")  # names, confined paths, and a converter from the allow-list (no code named by a value)
    dom = cfg.domain
    try:
        result = build_domain(
            convert=lambda: _convert(dom.converter),
            out_dir=f"{cfg.paths.data_dir}/{name}",
            config=OmegaConf.to_container(dom, resolve=True),
            packages=list(dom.packages),
            inputs=list(dom.inputs),
            force=cfg.force,
            cache_dir=cfg.paths.cache_dir,
            validated_input=_select(dom, "converter._target_") == _READER,
        )
    except (ValueError, OSError) as err:  # a refused input folder or file, a filter keeping no task
        _refuse(_refusal(name, err), cfg)
    s = result.summary
    state = "cached" if result.cached else "built"
    kept = f" (filter kept {s['filter']['kept']}, removed {s['filter']['removed']})" if s.get("filter") else ""
    print(f"{dom.name}: {state} {s['n_tasks']} tasks{kept}, {s['n_acquirable']} acquirable tools, "
          f"mean |G_x| {s['required_size_mean']:.3f} ({s.get('label_source', 'annotated')}) -> {result.folder}")


if __name__ == "__main__":
    run_stage(main, "data")  # the command line checked first; any failure: one line, exit 2 / 1 / 130
