"""`make setup`'s script: a wrong COMFYUI_DIR or EDIT_AGENTS_VENV is reported clearly, and a warm run is a no-op."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PACK_ROOT, setup_env

SETUP = PACK_ROOT / "scripts" / "setup.py"
# The project's venv, the one `make setup` recorded: not the Python 3.13 run's (.setup/py313), whose set-up is
# ensure_py313's and which must never become .setup/env's PYTHON.
VENV = Path(setup_env().get("PYTHON", sys.executable)).parent.parent


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

    root = PACK_ROOT
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


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_with_github_reachable_setup_takes_the_newest_release_not_the_oldest(tmp_path, monkeypatch):
    """A repository with tags as ComfyUI's has them (releases, and tags that are not): the newest release is
    cloned, whatever order git lists the tags in."""
    from helpers import load_script

    repo = tmp_path / "ComfyUI"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    for tag in ("v0.3.75", "v0.33.0", "v0.4.10", "latest", "v0.33.0-rc1"):
        (repo / "main.py").write_text(f"# {tag}\n")
        git("add", "main.py", cwd=repo)
        git("commit", "-qm", tag, cwd=repo)
        git("tag", tag, cwd=repo)
    setup_module = load_script("setup")
    monkeypatch.setattr(setup_module, "COMFYUI_GIT_URL", repo.as_uri())
    monkeypatch.setattr(setup_module, "COMFYUI_REF", "")
    assert setup_module.newest_release_tag(dict(os.environ)) == "v0.33.0"
    assert setup_module.fetch_comfyui_git(tmp_path / "clone") == "v0.33.0"
    assert (tmp_path / "clone" / "main.py").read_text() == "# v0.33.0\n"


def test_comfyui_source_takes_an_archive_and_names_what_is_wrong(tmp_path):
    """COMFYUI_SOURCE: an archive of a ComfyUI tree (one folder down, as release archives are) is unpacked into
    the managed folder; a path that is not there, or an archive without ComfyUI, is named."""
    import tarfile

    from helpers import load_script

    tree = tmp_path / "src" / "ComfyUI-9.9.9"
    tree.mkdir(parents=True)
    (tree / "main.py").write_text("")
    (tree / "comfyui_version.py").write_text('__version__ = "9.9.9"\n')
    archive = tmp_path / "ComfyUI-9.9.9.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="ComfyUI-9.9.9")
    setup_module = load_script("setup")
    setup_module.STATE = tmp_path / "state"
    setup_module.STATE.mkdir()
    setup_module.unpack_comfyui(archive, tmp_path / "managed")
    assert setup_module.comfyui_version(tmp_path / "managed") == "9.9.9"
    assert (tmp_path / "managed" / "custom_nodes").is_dir()

    r = setup(EDIT_AGENTS_VENV=str(VENV), COMFYUI_SOURCE=str(tmp_path / "nowhere.tar.gz"))
    assert r.returncode != 0 and f"COMFYUI_SOURCE={tmp_path / 'nowhere.tar.gz'} does not exist" in r.stderr
    (tree / "main.py").unlink()
    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz") as tar:
        tar.add(tree, arcname="ComfyUI-9.9.9")
    with pytest.raises(SystemExit, match="holds no ComfyUI"):
        setup_module.unpack_comfyui(empty, tmp_path / "managed2")
    assert not (tmp_path / "managed2").exists()
