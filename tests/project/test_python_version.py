"""Each run is on the Python it claims: `make test`'s main (and compatibility) run on the venv `make setup` recorded
in .setup/env as PYTHON, its Python 3.13 run (EDIT_AGENTS_TEST_RUN=py313, what ComfyUI's portable build ships) on
the 3.13 venv recorded as PY313; and the ComfyUI server a session starts runs on that same Python
(cli/server.py's LocalServer starts ComfyUI with sys.executable), as its /system_stats says."""
from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from helpers import setup_env, which_run


def test_the_run_is_on_the_python_setup_recorded():
    key = "PY313" if which_run() == "py313" else "PYTHON"
    recorded = setup_env().get(key)
    if not recorded:
        pytest.skip(f".setup/env names no {key}: run `make setup`")
    if which_run() == "py313":
        assert sys.version_info[:2] == (3, 13), sys.version
    # the venv's own bin/python: compare the venvs, not the interpreters they link to
    assert Path(sys.prefix).resolve() == Path(recorded).parent.parent.resolve(), (sys.prefix, recorded)


def test_the_sessions_comfyui_runs_on_the_same_python(comfy, comfy_server):
    assert comfy_server.python == sys.executable
    reported = comfy.get("/system_stats")["system"]["python_version"]  # ComfyUI's sys.version
    assert reported.split()[0] == platform.python_version(), reported
    if which_run() == "py313":
        assert reported.startswith("3.13."), reported
