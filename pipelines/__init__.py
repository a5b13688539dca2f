"""The stages' Hydra entry points. Importing the package pins OpenBLAS's kernel, so results do not depend on the CPU,
and turns MLflow's usage telemetry off (``MLFLOW_DISABLE_TELEMETRY``, unless set otherwise).

OpenBLAS picks its kernel from the CPU (Haswell, SkylakeX, ...) and the kernels sum in
different orders: the membership model's probabilities moved by up to 1e-10 between
Haswell and SkylakeX on one machine, enough to flip LightGBM depths on the 200-task
BFCL cell even after rounding. Every stage therefore runs OpenBLAS with one kernel that
every x86-64 CPU has (``Nehalem``; OpenBLAS ignores the setting elsewhere), set before
numpy loads. ``CAMDF_OPENBLAS_CORETYPE`` chooses another kernel; ``native`` leaves
OpenBLAS's own choice (and ``OPENBLAS_CORETYPE``) alone. The kernel in use is in every
cell run's ``provenance.json`` artifact (``numeric.blas.architecture``). The BLAS work of a cell is small (logistic fits
and the bootstrap's resample means), so the older kernel costs little time.
"""

import os
import sys

from camdf.common.process import guard_start, started_as_command

if started_as_command():
    guard_start()  # Ctrl-C during the imports: one line, exit 130 (camdf.common.process)

PINNED_CORETYPE = "Nehalem"

_core = os.environ.get("CAMDF_OPENBLAS_CORETYPE", PINNED_CORETYPE)
if _core != "native":
    if "numpy" in sys.modules:  # too late to choose the kernel: say so rather than pretend
        print("warning: numpy was imported before pipelines; OpenBLAS keeps its own kernel", file=sys.stderr)
    os.environ["OPENBLAS_CORETYPE"] = _core

# MLflow's usage telemetry stays off in every stage (set before mlflow is imported; a user's own setting wins).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
