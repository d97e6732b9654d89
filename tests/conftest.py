"""Shared fixtures: real photos, a real ComfyUI server (one per session) and a client for it."""
from __future__ import annotations

import asyncio
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import aiohttp
import numpy as np
import pytest
from skimage import data

from edit_agents.cli.client import ComfyClient
from edit_agents.cli.server import LocalServer
from edit_agents.tools import imageops
from edit_agents.tools.imageops import as_image

from helpers import ARTIFACTS, frontends, setup_env, which_run

# Fixtures kept in tests/support/ beside the helpers they use: the real frontend in Chromium (``page``).
pytest_plugins = ("browser",)


def pytest_configure(config):
    """The compatibility run (EDIT_AGENTS_TEST_RUN=compat) points every server the tests start, and every
    subprocess, at the oldest supported ComfyUI that `make setup` prepared."""
    if which_run() != "compat":
        return
    compat = setup_env().get("COMPAT_COMFYUI_DIR")
    if not compat:
        raise pytest.UsageError("EDIT_AGENTS_TEST_RUN=compat, but `make setup` prepared no compatibility ComfyUI "
                                "(EDIT_AGENTS_SKIP_COMPAT was set?): run `make setup` without it")
    os.environ["COMFYUI_DIR"] = compat


def frontend_args(root: str | None) -> tuple[str, ...]:
    return ("--front-end-root", root) if root else ()


@pytest.fixture(scope="session")
def photos() -> dict[str, np.ndarray]:
    """Real photos bundled with scikit-image, as float images in [0, 1]."""
    return {name: as_image(getattr(data, name)()) for name in ("astronaut", "chelsea", "coffee", "rocket", "camera")}


@pytest.fixture(params=["built-in", "opencv"])
def filters(request, monkeypatch) -> str:
    """Which filters run (tools/imageops): the pack's own, or OpenCV's through the same functions, as where
    another pack installed OpenCV (requirements-dev.txt installs it for this)."""
    monkeypatch.setenv(imageops.OPENCV_SWITCH, "0" if request.param == "built-in" else "1")
    if request.param == "opencv":
        assert imageops.opencv() is not None, "requirements-dev.txt installs opencv-python-headless for this test"
    else:
        assert imageops.opencv() is None
    return request.param


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where tests leave screenshots and files to look at: test-artifacts/, or test-artifacts/compat/ in the
    compatibility run (the oldest supported ComfyUI and frontend)."""
    folder = ARTIFACTS / "compat" if which_run() == "compat" else ARTIFACTS
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def comfy_server(tmp_path_factory, model_root):
    """A real ComfyUI on a free loopback port, with temp input/output/user folders, CPU only, and the
    tiny test models in its model folders (through an extra-model-paths file, as users add folders)."""
    base = tmp_path_factory.mktemp("comfy")
    extra = base / "extra_model_paths.yaml"
    extra.write_text(f"edit_agents_tests:\n    base_path: {model_root}\n    grounding-dino: grounding-dino\n"
                     f"    sams: sams\n    diffusers: diffusers\n    checkpoints: checkpoints\n    clip-hf: clip-hf\n"
                     f"    aesthetic: aesthetic\n    LLM: LLM\n    diffusion_models: diffusion_models\n    vae: vae\n")
    server = LocalServer(base_dir=base, extra_args=("--extra-model-paths-config", str(extra),
                                                     *frontend_args(frontends()[0][1])))
    server.start()
    yield server
    server.stop()


class SyncClient:
    """Blocking wrapper so tests read top to bottom; each call opens its own HTTP session."""

    def __init__(self, url: str):
        self.url = url

    def call(self, method: str, *args, **kwargs):
        async def go():
            async with aiohttp.ClientSession() as session:
                client = ComfyClient(self.url, session, timeout=300)
                return await getattr(client, method)(*args, **kwargs)
        return asyncio.run(go())

    def get(self, path: str):
        return self.call("get_json", path)


@pytest.fixture(scope="session")
def comfy(comfy_server) -> SyncClient:
    return SyncClient(comfy_server.url)


@pytest.fixture(scope="session")
def object_info(comfy) -> dict:
    return comfy.get("/object_info")


def pytest_collection_modifyitems(config, items):
    # Tests that take the comfy_server fixture are integration tests.
    for item in items:
        if "comfy_server" in getattr(item, "fixturenames", ()) or "comfy" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)



@pytest.fixture(scope="session")
def llm_server():
    from llm_server import ScriptedLLM

    server = ScriptedLLM().start()
    yield server
    server.stop()


@pytest.fixture()
def llm(llm_server):
    """The scripted endpoint, emptied for each test."""
    return llm_server.reset()


def save_as_safetensors(pth: Path, out: Path) -> None:
    """The same weights in the format most model sites now offer."""
    import torch
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in torch.load(pth, weights_only=True).items()}, str(out))


LOCAL_FAMILIES = ("qwen2-vl", "qwen2.5-vl", "smolvlm", "text")


@pytest.fixture(scope="session")
def model_root(tmp_path_factory):
    """A models/ folder laid out like ComfyUI's, holding tiny random-weight models built once per session."""
    from tiny_vlms import build_tiny_model
    from tiny_models import (build_aesthetic_head, build_clip, build_grounding_dino, build_instruct_pix2pix, build_sam,
                             build_sd_inpaint, build_sdxl_inpaint)

    root = tmp_path_factory.mktemp("models")
    build_grounding_dino(root / "grounding-dino" / "tiny-grounding-dino")
    build_sam(root / "sams" / "tiny_sam.pth")
    save_as_safetensors(root / "sams" / "tiny_sam.pth", root / "sams" / "tiny_sam.safetensors")
    build_instruct_pix2pix(root / "diffusers" / "tiny-instruct-pix2pix")
    build_sd_inpaint(root / "diffusers" / "tiny-sd-inpaint")
    build_sdxl_inpaint(root / "diffusers" / "tiny-sdxl-inpaint")
    build_clip(root / "clip-hf" / "tiny-clip")
    build_aesthetic_head(root / "aesthetic" / "tiny-aesthetic.pth")
    for family in LOCAL_FAMILIES:  # the local brain's models, as users download them into models/LLM/
        build_tiny_model(family, root / "LLM" / f"tiny-{family}")
    (root / "checkpoints").mkdir()
    for name, channels in (("tiny-sd15.safetensors", 4), ("tiny-sd15-ip2p.safetensors", 8)):
        (root / "checkpoints" / name).symlink_to(tiny_checkpoint(name, channels))
    flux, flux_vae = tiny_flux()  # a FLUX-architecture edit model (Kontext's), loaded with Load Diffusion Model
    (root / "diffusion_models").mkdir()
    (root / "diffusion_models" / "tiny-flux-kontext.safetensors").symlink_to(flux)
    (root / "vae").mkdir()
    (root / "vae" / "tiny-flux-vae.safetensors").symlink_to(flux_vae)
    return root


CHECKPOINT_CACHE = Path(os.environ.get("EDIT_AGENTS_TEST_CACHE", Path.home() / ".cache" / "edit-agents"))
CHECKPOINT_VERSION = "v2"  # bump when build_tiny_checkpoint.py changes (v2: TAESD's vae_scale 1, not 0)


def built_for() -> Path:
    """The cache folder for models built from the classes of the ComfyUI the tests run: the layouts differ between
    versions (0.3.75 cannot detect a FLUX built from 0.33's classes)."""
    from edit_agents.cli.server import find_comfyui
    from helpers import load_script

    return CHECKPOINT_CACHE / CHECKPOINT_VERSION / f"comfyui-{load_script('setup').comfyui_version(find_comfyui())}"


@contextmanager
def built_alone(folder: Path) -> Iterator[None]:
    """Held while a tiny model is looked for and built: the test workers (pytest-xdist) build each one once."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def tiny_checkpoint(name: str, in_channels: int) -> Path:
    """A tiny SD1.5-detected checkpoint built from ComfyUI's classes, cached outside the repository."""
    path = built_for() / name
    with built_alone(path.parent):
        if not path.exists():
            partial = path.with_suffix(".partial")
            build_in_comfyui("build_tiny_checkpoint.py", str(partial), "--in-channels", str(in_channels))
            partial.rename(path)
    return path


def tiny_flux() -> tuple[Path, Path]:
    """A tiny FLUX-detected diffusion model and its 16-channel VAE, built from ComfyUI's classes, cached outside
    the repository (1 GB)."""
    model, vae = (built_for() / n for n in ("tiny-flux-kontext.safetensors", "tiny-flux-vae.safetensors"))
    with built_alone(model.parent):
        if not (model.exists() and vae.exists()):
            partial = [p.with_suffix(".partial") for p in (model, vae)]
            build_in_comfyui("build_tiny_flux.py", *map(str, partial))
            for done, path in zip(partial, (model, vae)):
                done.rename(path)
    return model, vae


def build_in_comfyui(script: str, *args: str) -> None:
    """Run tests/support/``script`` in ComfyUI's folder, with ComfyUI importable (it builds from its classes)."""
    import subprocess
    import sys

    from edit_agents.cli.server import find_comfyui

    comfy_dir = find_comfyui()
    subprocess.run([sys.executable, str(Path(__file__).parent / "support" / script), *args], cwd=comfy_dir,
                   env={**os.environ, "PYTHONPATH": str(comfy_dir)}, check=True, capture_output=True, timeout=600)


@pytest.fixture()
def runtime(model_root):
    from edit_agents.tools.models import ToolRuntime

    return ToolRuntime({folder: [model_root / folder] for folder in ("grounding-dino", "sams", "diffusers")},
                       choices={"instruct-pix2pix": "tiny-instruct-pix2pix", "inpaint": "tiny-sd-inpaint"})
