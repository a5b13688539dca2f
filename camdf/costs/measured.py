"""The contract of a measured cost regime: costs obtained by running a domain's tools.

An integration declares its measured regimes (:class:`MeasuredRegime`, in its package's
``INTEGRATION``); :func:`camdf.costs.regimes.base_costs` receives them from the caller
(:func:`camdf.integrations.registry.cost_measures`), so costs import no integration and
name none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the config checks read the regimes' names without pandas
    import pandas as pd


@dataclass(frozen=True)
class MeasuredRegime:
    """A measured cost regime.

    Attributes
    ----------
    measure : callable ``(domain, **params) -> DataFrame``
        Each acquirable tool's measurement: a frame indexed by tool with ``mean_tokens``.
    params : tuple of str
        The keyword arguments ``measure`` accepts (the regime's ``cost.params``).
    section : callable ``{domain name: frame} -> str``, optional
        The markdown section the data report lists the measurements in.
    domain_param : str, optional
        A param that defaults to the domain config's value of the same key, else to the
        domain's name (``environment``: the environment the tools run in).
    """

    measure: Callable[..., pd.DataFrame]
    params: tuple[str, ...]
    section: Callable[[Mapping[str, pd.DataFrame]], str] | None = None
    domain_param: str | None = None

    def with_defaults(self, params: Mapping[str, Any], domain_cfg: Mapping[str, Any], name: str,
                      cache_dir: str) -> dict[str, Any]:
        """``params`` with ``cache_dir`` and :attr:`domain_param` filled in when not given."""
        out = dict(params)
        if self.domain_param is not None:
            out[self.domain_param] = out.get(self.domain_param) or domain_cfg.get(self.domain_param) or name
        if "cache_dir" in self.params:
            out.setdefault("cache_dir", cache_dir)
        return out
