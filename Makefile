# Edit Agents: `make demo` and `make test` do all the set-up themselves (see README).
PYTHON_BOOT ?= python3
VENV ?= $(if $(EDIT_AGENTS_VENV),$(EDIT_AGENTS_VENV),.venv)
PY := $(VENV)/bin/python

.PHONY: setup demo test coverage test-compat test-compat-run test-py313 test-py313-run test-fast check docs bench clean

setup:
	@$(PYTHON_BOOT) scripts/setup.py

demo: setup
	@$(PY) scripts/demo.py

# The whole suite on the current ComfyUI and the newest frontend: unit, real-server integration, CLI and browser
# tests, and the ecosystem's own checks (tests/project/test_ecosystem_checks.py: comfy node validate, the Registry zip,
# comfy-test lint, ruff, ESLint; tests/workflows/test_fresh_install.py: every shipped workflow runs as it is on a fresh
# install). Then the compatibility run: the server, workflow and browser tests again on the oldest supported
# pair (ComfyUI 0.3.75 with frontend 1.32.9) that `make setup` prepared. Last the Python 3.13 run: the unit tests
# and the offline workflow on a ComfyUI server under 3.13, which ComfyUI's portable build ships.
#
# Each run spreads the test modules over TEST_WORKERS processes (pytest-xdist, a module's tests on one worker, each
# worker with its own ComfyUI server): 2 by default, the cores CI has; TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)

test: setup
	@$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory test-compat-run
	@$(MAKE) --no-print-directory test-py313-run

# The main run with coverage (the pack's code in the tests' process, the CLI's and the servers' subprocesses).
coverage: setup
	@$(PY) -m pytest $(XDIST) --cov=$(CURDIR) --cov-report=term:skip-covered $(PYTEST_ARGS)

test-compat: setup
	@$(MAKE) --no-print-directory test-compat-run

test-compat-run:
	@if [ -n "$$EDIT_AGENTS_SKIP_COMPAT" ]; then echo "compatibility run skipped (EDIT_AGENTS_SKIP_COMPAT is set)"; \
	else EDIT_AGENTS_TEST_RUN=compat $(PY) -m pytest -m "server or browser" -p no:cacheprovider $(XDIST) $(COMPAT_ARGS) $(PYTEST_ARGS); fi

# The Python 3.13 run, on the venv `make setup` made at .setup/py313 (PY313 in .setup/env; none when it found no
# Python 3.13 or EDIT_AGENTS_SKIP_PY313 is set): the unit tests, then the offline workflow on the current ComfyUI
# started under 3.13 (the session's server runs on the tests' own Python) and tests/project/test_python_version.py's check
# that it does.
PY313 ?= $(shell sed -n 's/^PY313=//p' .setup/env 2>/dev/null)
PY313_SERVER_TESTS := tests/project/test_python_version.py \
	"tests/workflows/test_fresh_install.py::test_each_shipped_workflow_runs_as_it_is_on_a_fresh_install[photoagent_offline.json]"

test-py313: setup
	@$(MAKE) --no-print-directory test-py313-run

test-py313-run:
	@if [ -z "$(PY313)" ]; then echo "Python 3.13 run skipped: .setup/env names no PY313 (make setup found no" \
		"Python 3.13, or EDIT_AGENTS_SKIP_PY313 is set)"; \
	else EDIT_AGENTS_TEST_RUN=py313 $(PY313) -m pytest -m "not server and not browser" -p no:cacheprovider \
		$(XDIST) $(PYTEST_ARGS); status=$$?; \
	EDIT_AGENTS_TEST_RUN=py313 $(PY313) -m pytest -p no:cacheprovider $(PY313_SERVER_TESTS) $(PYTEST_ARGS) \
		|| status=1; exit $$status; fi

# Unit tests only (no ComfyUI server, no browser).
test-fast: setup
	@$(PY) -m pytest -m "not server and not browser" $(XDIST) $(PYTEST_ARGS)

# Only the ecosystem's checks and the fresh-install run of the shipped workflows.
check: setup
	@$(PY) -m pytest tests/project/test_ecosystem_checks.py tests/workflows/test_fresh_install.py $(PYTEST_ARGS)

# Regenerate the README's tool, provider and node tables and web/docs/ (starts a local ComfyUI for the node schemas).
docs: setup
	@$(PY) scripts/gen_docs.py

clean:
	rm -rf output .pytest_cache .coverage htmlcov test-artifacts
