# Edit Agents: `make demo` and `make test` do all the set-up themselves (see README).
PYTHON_BOOT ?= python3
VENV ?= $(if $(EDIT_AGENTS_VENV),$(EDIT_AGENTS_VENV),.venv)
PY := $(VENV)/bin/python

.PHONY: setup demo test test-fast check docs bench clean

setup:
	@$(PYTHON_BOOT) scripts/setup.py

demo: setup
	@$(PY) scripts/demo.py

# The whole suite: unit, real-server integration, CLI and browser tests, and the ecosystem's own checks
# (tests/test_ecosystem_checks.py: comfy node validate, the Registry zip, comfy-test lint, ruff, ESLint;
# tests/test_fresh_install.py: every shipped workflow runs as it is on a fresh install).
test: setup
	@$(PY) -m pytest --cov=$(CURDIR) --cov-report=term:skip-covered $(PYTEST_ARGS)

# Unit tests only (no ComfyUI server, no browser).
test-fast: setup
	@$(PY) -m pytest -m "not server and not browser" $(PYTEST_ARGS)

# Only the ecosystem's checks and the fresh-install run of the shipped workflows.
check: setup
	@$(PY) -m pytest tests/test_ecosystem_checks.py tests/test_fresh_install.py $(PYTEST_ARGS)

# Regenerate the README's tool, provider and node tables and web/docs/ (starts a local ComfyUI for the node schemas).
docs: setup
	@$(PY) scripts/gen_docs.py

clean:
	rm -rf output .pytest_cache .coverage htmlcov test-artifacts
