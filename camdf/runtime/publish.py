"""Log a fitted StopPolicy as an MLflow pyfunc model, with the camdf wheel its requirements install.

The model carries the typed signature (:mod:`camdf.runtime.signature`), the policy as JSON
numbers (``artifacts/policy.json``, :mod:`camdf.runtime.policy_file`), the lean numbers of a rule
with a lean form (:mod:`camdf.runtime.lean`) and the checkout's camdf built as a wheel (``artifacts/camdf-<version>-py3-none-any.whl``), named by
that relative path in ``requirements.txt``, which MLflow's environment managers install from
the model's folder. It is logged from code (:mod:`camdf.runtime.served`): nothing of camdf's is
pickled into it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from camdf.common.waits import BUILD, run
from camdf.runtime.signature import INPUT_COLUMNS, signature

#: The models-from-code file MLflow copies into a logged model and runs on load (not imported here: it sets
#: MLflow's current model as it runs).
SERVED = Path(__file__).with_name("served.py")

def build_wheel(dst: Path) -> Path:
    """Build the checkout's camdf as a wheel into ``dst`` and return its path.

    The sources (``pyproject.toml``, ``README.md``, ``camdf/``) are copied to a temporary
    folder first, so that the build writes nothing into the checkout. Raises RuntimeError
    when camdf is not imported from a checkout or the build fails.
    """
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "camdf" / "__init__.py").is_file():
        raise RuntimeError(f"camdf wheel: {root} is not a camdf checkout (no pyproject.toml); log the policy "
                           "from a checkout")
    dst.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="camdf-wheel-") as tmp:
        src = Path(tmp, "src")
        shutil.copytree(root / "camdf", src / "camdf", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        proc = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-q", "-w", str(dst), str(src)], BUILD, "camdf wheel: pip wheel", capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"camdf wheel: pip wheel exited {proc.returncode}: {proc.stderr[-2000:]}")
    wheels = sorted(dst.glob("camdf-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"camdf wheel: expected one wheel in {dst}, found {[w.name for w in wheels]}")
    return wheels[0]


def log_policy(policy, name: str = "policy", example: dict | None = None,
               registered_model_name: str | None = None) -> str:
    """Log the policy as an MLflow pyfunc model in the active run; returns its model URI.

    The model carries :func:`signature`, ``example`` (one request) as its input example,
    and the camdf wheel (:func:`build_wheel`) that its ``requirements.txt`` names.
    """
    import logging
    import warnings

    from camdf.common.progress import no_download_bars

    logging.getLogger("mlflow.pyfunc").setLevel(logging.ERROR)
    # MLflow checks the input example by loading the model back: no download bars for that.
    with no_download_bars(), tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _log_model(policy, Path(tmp), name, example, registered_model_name)


def _log_model(policy, tmp: Path, name: str, example: dict | None, registered_model_name: str | None) -> str:
    import mlflow
    import pandas as pd

    from camdf.runtime.lean import LEAN_ARTIFACT, LEAN_FILE, write_lean

    from camdf.runtime.policy_file import POLICY_ARTIFACT, POLICY_FILE, write_policy

    path = write_policy(policy, Path(tmp, POLICY_FILE))  # data, not a pickle: refused before anything is logged
    wheel = build_wheel(Path(tmp, "wheel"))
    artifacts = {POLICY_ARTIFACT: str(path), "wheel": str(wheel)}
    # What camdf select reads without scikit-learn (camdf.runtime.lean), tied to policy.json by its SHA-256.
    lean = write_lean(policy, Path(tmp, LEAN_FILE), path)
    if lean is not None:
        artifacts[LEAN_ARTIFACT] = str(lean)
    frame = None
    if example is not None:
        frame = pd.DataFrame([{k: example[k] for k in INPUT_COLUMNS if example.get(k) is not None}])
    info = mlflow.pyfunc.log_model(
        # Models from code: MLflow copies served.py and runs it on load, pickling no instance of ours.
        name=name, python_model=str(SERVED), artifacts=artifacts,
        signature=signature(policy), input_example=frame, registered_model_name=registered_model_name,
        # MLflow's environment managers install these from the model's folder, where the wheel is.
        pip_requirements=[f"mlflow=={mlflow.__version__}", f"artifacts/{wheel.name}"],
    )
    return info.model_uri


