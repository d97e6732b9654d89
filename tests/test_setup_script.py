"""`make setup`'s script: a wrong COMFYUI_DIR or EDIT_AGENTS_VENV is reported clearly, and a warm run is a no-op."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import PACK_ROOT

SETUP = PACK_ROOT / "scripts" / "setup.py"
VENV = Path(sys.executable).parent.parent


def setup(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SETUP)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "EDIT_AGENTS_SKIP_CHROMIUM": "1", **env})


def test_comfyui_dir_without_comfyui_is_named(tmp_path):
    r = setup(EDIT_AGENTS_VENV=str(VENV), COMFYUI_DIR=str(tmp_path))
    assert r.returncode != 0
    assert f"COMFYUI_DIR={tmp_path} has no main.py" in r.stderr


def test_venv_without_python_is_named(tmp_path):
    r = setup(EDIT_AGENTS_VENV=str(tmp_path / "nothing"))
    assert r.returncode != 0 and "has no bin/python" in r.stderr


def test_warm_run_reuses_everything():
    r = setup(EDIT_AGENTS_VENV=str(VENV))
    assert r.returncode == 0, r.stderr
    assert "reusing" in r.stdout and "up to date" in r.stdout and "already points at this checkout" in r.stdout
    assert "pip install" not in r.stdout  # nothing was installed again


def test_pyproject_lists_the_requirements_literally_and_registry_fields_are_filled():
    """The Comfy Registry reads pyproject's literal dependencies; ComfyUI-Manager installs requirements.txt: the
    same list. Neither names torch (the user's ComfyUI owns it)."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())
    listed = [line.strip() for line in (root / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert project["project"]["dependencies"] == listed and "dynamic" not in project["project"]
    assert not any(d.split(">")[0].split("=")[0].strip() in ("torch", "torchvision", "opencv-python-headless")
                   for d in listed)
    assert any(d.startswith("comfyui-frontend-package>=") for d in listed)
    comfy, urls = project["tool"]["comfy"], project["project"]["urls"]
    assert comfy["Icon"].endswith("web/icon.svg") and (root / "web" / "icon.svg").exists()
    assert {"Homepage", "Repository", "Documentation", "Issues"} <= set(urls)  # the keys the Registry reads
    assert project["project"]["license"] == {"file": "LICENSE"} and (root / "LICENSE").exists()
    assert "BRISQUE" in (root / "NOTICE").read_text() and (root / ".github" / "workflows" / "publish.yml").exists()
