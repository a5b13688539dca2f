"""Questions about a store's experiments that create nothing: is it there (:func:`store_has_experiment`),
and where the MLflow UI shows its runs (:func:`runs_view`, for ``make ui``)."""

from __future__ import annotations

from pathlib import Path

from camdf.tracking.client import EXPERIMENT_KIND
from camdf.tracking.locations import check_store_file, relocate_store
from camdf.tracking.probe import connect


def runs_view(uri: str, experiment: str) -> str:
    """The MLflow UI's path of ``experiment``'s runs view (``#/experiments/<id>/runs``), for ``make ui``.

    The store is relocated first (:func:`~camdf.tracking.locations.relocate_store`: a moved
    folder opens with its artifacts) and the experiment tagged :data:`EXPERIMENT_KIND` (a store
    made before the tag opens on its runs too). A store without the experiment gives ``""``
    (the UI's home page); nothing is created.
    """
    relocate_store(uri)
    if not store_has_experiment(uri, experiment):
        return ""
    client = connect(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
        client.set_experiment_tag(exp.experiment_id, *EXPERIMENT_KIND)
    return f"#/experiments/{exp.experiment_id}/runs"


def store_has_experiment(uri: str, experiment: str) -> bool:
    """Whether the store at ``uri`` holds ``experiment``, without creating either.

    A SQLite store whose file does not exist has no experiment (and is not created by
    asking); a reader such as the tables stage refuses instead of making an empty one.
    A tracking server that does not answer raises :class:`TrackingUnreachable`.
    """
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        return False
    check_store_file(uri)
    return connect(uri).get_experiment_by_name(experiment) is not None
