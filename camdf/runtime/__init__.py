"""The run-time stopper: decide how deep a prefix of any tool ranking to expose (library, pyfunc model, CLI glue)."""

from camdf.runtime.policy import Request, Selection, StopPolicy, bm25_tool_scores, check_lam
from camdf.runtime.pyfunc import load_policy, log_policy

__all__ = ["Request", "Selection", "StopPolicy", "bm25_tool_scores", "check_lam", "load_policy", "log_policy"]
