"""The pipeline end to end on the smoke grid: data -> evaluate (MLflow) -> tables, in a temp folder."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUIET = ["hydra/job_logging=none", "hydra/hydra_logging=none"]
SMOKE = ["pipelines.evaluate", "-m", "experiment=smoke"]
TABLES = ["pipelines.tables", "update_readme=false", "experiments=[smoke]"]


def _env(out: Path, uri: str | None = None, environ=None) -> dict:
    """The stage's environment: ``environ`` (default ``os.environ``) with the store and offline model hub."""
    base = os.environ if environ is None else environ
    env = {**base, "MLFLOW_TRACKING_URI": uri or f"sqlite:///{out}/mlflow.db", "HF_HUB_OFFLINE": "1"}
    return env


def _run(args, out: Path, data: Path, uri=None, check=True, environ=None, **kw):
    cmd = [sys.executable, "-m", *args, f"paths.output_dir={out}", f"paths.data_dir={data}", *QUIET]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(out, uri, environ), capture_output=True, text=True, **kw)
    if check:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def _tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.suffix in (".md", ".csv", ".tex")}


def _strip(tables: dict[str, bytes]) -> dict[str, bytes]:
    """Tables without the notes naming MLflow run ids (they differ between stores by design)."""
    return {k: b"\n".join(line for line in v.splitlines() if b"MLflow run" not in line) for k, v in tables.items()}


def _finished_keys(uri: str, experiment: str = "camdf") -> list[str]:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], "attributes.status = 'FINISHED'", max_results=1000)
    return [r.data.tags["cell_key"] for r in runs if r.data.tags.get("kind", "cell") == "cell"]


def _results_check_recomputes_the_numbers(tmp_path: Path, out: Path, data: Path) -> None:
    """``camdf results check`` passes on the Results the tables stage wrote and fails on the same page with one
    number changed, naming the number on the page and the store's."""
    import re

    checkout = tmp_path / "checkout"  # the outputs (tmp_path / "out") lie outside it, as the path gate asks
    checkout.mkdir()
    page, readme = checkout / "results.md", checkout / "README.md"
    page.write_text("# Results\n<!-- results:start -->\n<!-- results:end -->\n")
    readme.write_text("# x\n<!-- headline:start -->\n<!-- headline:end -->\n")
    same = ["experiments=[smoke]", "main.lam=0.12", "main.d=1.0"]
    root = [f"paths.root_dir={checkout}"]  # the Results are written only inside the root
    _run(["pipelines.tables", *same, *root, f"readme={page}", f"headline={readme}"], out, data)
    overrides = [a for o in [*same, *root, f"paths.output_dir={out}", f"paths.data_dir={data}"]
                 for a in ("--override", o)]

    def check(path):
        return subprocess.run([sys.executable, "-m", "camdf.cli", "results", "check", str(path), *overrides],
                              cwd=ROOT, env=_env(out), capture_output=True, text=True)

    ok = check(page)
    assert ok.returncode == 0 and "every number matches" in ok.stdout, ok.stdout + ok.stderr
    assert "source fingerprint" in page.read_text() and "git commit" in page.read_text()
    assert check(readme).returncode == 0  # the README's headline block, compared with the recomputed one
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| camdf |"))
    number = re.search(r"\| (\d\.\d{3}) \|", row).group(1)
    changed = f"{float(number) + 0.001:.3f}"
    page.write_text(text.replace(row, row.replace(f"| {number} |", f"| {changed} |", 1), 1))
    bad = check(page)
    assert bad.returncode == 1 and f"{changed} on the page, {number} from the store" in bad.stdout, bad.stdout


def check_smoke_store(tmp_path: Path, out: Path, data_dir: Path, reference: dict[str, bytes]) -> None:
    """The smoke grid's tables, given a store the grid was swept into (``make reproduce-smoke``, which the README's
    walkthrough runs: tests/integration/test_readme_walkthrough.py calls this on its store): the same seed gives the
    tables of the session's reference sweep (``reference``: another store, Hydra's basic launcher) byte for byte
    but for run ids; they regenerate byte-identical, name their folds, are logged in one tables run per code
    version, recompute in ``camdf results check``, and a rerun of the grid reuses every cell; another grid in the
    same store is read only when asked."""
    keys = _finished_keys(f"sqlite:///{out}/mlflow.db")
    assert len(keys) == 4 and len(set(keys)) == 4
    _run(["pipelines.tables", "update_readme=false", "experiments=[smoke]", "main.lam=0.12", "main.d=1.0"] , out, data_dir)
    first = _tables(out / "tables")
    # The notes name the MLflow run id, which differs between stores by design; compare everything else.
    assert _strip(first) == _strip(reference)
    assert "a18.md" in first and "a24.md" in first and "table2.md" in first
    assert (out / "tables" / "a18_heatmap.png").stat().st_size > 1000
    assert "claims.md" in first
    # The `tables` run holds every table (the claims table among them) beside the figures.
    from mlflow.tracking import MlflowClient
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    exp = client.get_experiment_by_name("camdf")
    (tables_run,) = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("kind") == "tables"]
    logged = {a.path for a in client.list_artifacts(tables_run.info.run_id, "tables")}
    assert {"tables/claims.md", "tables/table2.md", "tables/table2.html", "tables/a18.csv"} <= logged
    _results_check_recomputes_the_numbers(tmp_path, out, data_dir)
    again = _run(["pipelines.evaluate", "-m", "experiment=smoke"], out, data_dir)
    assert again.stdout.count("reused FINISHED run") == 4
    keys = _finished_keys(f"sqlite:///{out}/mlflow.db")
    assert len(keys) == 4 and len(set(keys)) == 4
    # d=1 and d=1.0 are one value: one cell key, and the tables find the cell either way (main.d=1 below).
    one = _run(["pipelines.evaluate", "experiment=smoke", "cost.lam=0.12", "cost.d=1"], out, data_dir)
    assert "reused FINISHED run" in one.stdout
    # Another grid (the smoke grid's main cell at 2 folds) lands in the same store, newer than every cell above.
    _run(["pipelines.evaluate", "-m", "experiment=smoke", "folds.n_folds=2", "cost.lam=0.12", "cost.d=1.0"], out,
         data_dir)
    # Deleted and rebuilt, with d spelled 1: byte-identical (the tables read only the cells of their own
    # experiments, not the newer 2-fold cell), and one tables run per code version (the build updated it).
    shutil.rmtree(out / "tables")
    args = ["pipelines.tables", "update_readme=false", "experiments=[smoke]"]
    _run([*args, "main.lam=0.12", "main.d=1"], out, data_dir)
    assert _tables(out / "tables") == first
    again = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("kind") == "tables"]
    assert [r.info.run_id for r in again] == [tables_run.info.run_id] and again[0].data.tags["code_version"]
    _run([*args, "cell_overrides=['folds.n_folds=2']"], out, data_dir)  # and that grid's tables read its cells
    other = _tables(out / "tables")
    assert "of 2 folds" in other["table2.md"].decode() and "of 3 folds" in first["table2.md"].decode()
    assert "2 repeated cross-fits" in first["table2.md"].decode()  # the smoke grid's R = 2, named in the note
    assert other["a18.md"] != first["a18.md"]


def test_sigkill_mid_sweep_then_rerun_completes_with_one_finished_run_per_key(tmp_path, data_dir, smoke_reference):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pipelines.evaluate", "-m", "experiment=smoke",
           f"paths.output_dir={out}", f"paths.data_dir={data_dir}", *QUIET]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(out), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    lines = []
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "logged run" in line:  # one cell done, the next one under way: kill the whole sweep
            time.sleep(1.5)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    uri = f"sqlite:///{out}/mlflow.db"
    assert 1 <= len(_finished_keys(uri)) < 4
    rerun = _run(["pipelines.evaluate", "-m", "experiment=smoke"], out, data_dir)
    assert rerun.stdout.count("reused FINISHED run") >= 1
    keys = _finished_keys(uri)
    assert len(keys) == 4 and len(set(keys)) == 4
    # Tables after the interrupted sweep equal those of an uninterrupted one (the session's reference sweep).
    _run(TABLES, out, data_dir)
    assert _strip(_tables(out / "tables")) == _strip(smoke_reference.tables)
