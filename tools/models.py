"""Model files and loaded models for the model tools (never imports ComfyUI).

A ``ToolRuntime`` knows where model files live (ComfyUI's model folders when running inside
ComfyUI, explicit folders otherwise), which file the user chose per kind, and keeps each
loaded model for reuse across calls and loop rounds. Inside ComfyUI a ``manager`` hook wraps
torch modules in ModelPatcher and loads them through ComfyUI's model management.
"""
from __future__ import annotations

import logging
import pickle  # only for its exception type: model files are never unpickled
import threading
import weakref
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from .errors import shown_by_name
from .spec import Vision


@shown_by_name
class MissingModelError(FileNotFoundError):
    """A model tool's file is not there; the message names the file, the folder and what to get."""


@shown_by_name
class ModelFileError(ValueError):
    """A model file is there but cannot be loaded (truncated, corrupt, another kind of model)."""


@dataclass(frozen=True)
class ModelKind:
    folder: str  # ComfyUI model folder name (models/<folder>/)
    what: str  # what a valid entry looks like
    example: str  # a known-good download
    suffixes: tuple[str, ...] = ()  # the model is a file with one of these suffixes; () means a folder
    foreign: str = ""  # what other packs keep in the same folder that this one cannot load, and why

    def accepts(self, entry: Path) -> bool:
        """Whether a folder entry can be this kind of model (so ComfyUI's `put_..._here` placeholders and
        stray files are never offered or picked as 'first available')."""
        if entry.name.startswith("."):
            return False
        return entry.is_file() and entry.suffix.lower() in self.suffixes if self.suffixes else entry.is_dir()


MODEL_KINDS: dict[str, ModelKind] = {
    "grounding-dino": ModelKind("grounding-dino", "a folder in transformers layout (config.json, model.safetensors, "
                                "preprocessor and tokenizer files), e.g. models/grounding-dino/grounding-dino-tiny/",
                                "IDEA-Research/grounding-dino-tiny",
                                foreign="the original GroundingDINO release's .pth weights and .cfg.py config, which "
                                        "other packs (e.g. comfyui_segment_anything) keep here, need that project's own "
                                        "code; this pack loads the transformers conversion"),
    "sams": ModelKind("sams", "a segment-anything checkpoint (.pth)", "sam_vit_b_01ec64.pth from segment-anything",
                      (".pth", ".pt", ".safetensors")),
    "instruct-pix2pix": ModelKind("diffusers", "an InstructPix2Pix pipeline folder in diffusers layout (model_index.json, "
                                  "unet/, vae/, text_encoder/, tokenizer/, scheduler/)", "timbrooks/instruct-pix2pix"),
    "inpaint": ModelKind("diffusers", "an SD or SDXL inpainting pipeline folder in diffusers layout",
                         "stable-diffusion-v1-5/stable-diffusion-inpainting or "
                         "diffusers/stable-diffusion-xl-1.0-inpainting-0.1"),
    # reward models
    "clip": ModelKind("clip-hf", "a CLIP model folder in transformers layout (config.json, model.safetensors, "
                      "tokenizer and preprocessor files)", "openai/clip-vit-large-patch14"),
    "aesthetic": ModelKind("aesthetic", "a LAION aesthetic predictor head (.pth or .safetensors) matching the CLIP model",
                           "sac+logos+ava1-l14-linearMSE.pth from christophschuhmann/improved-aesthetic-predictor",
                           (".pth", ".pt", ".safetensors")),
    "image-reward": ModelKind("ImageReward", "a folder with ImageReward.pt and med_config.json",
                              "THUDM/ImageReward (and pip install image-reward)"),
}


# -- before a large model loads -------------------------------------------------------------------

_BEFORE_LOAD: list[Callable[[], Callable[[str], None] | None]] = []  # weak references to the hooks
_BEFORE_LOAD_LOCK = threading.Lock()


def before_large_model_load(hook: Callable[[str], None]) -> None:
    """Call ``hook(what)`` just before a large model is placed on its device (an editor, CLIP, a local VLM; inside
    ComfyUI, every model ComfyUI loads), for as long as the hook's owner lives: a bound method is held weakly, so a
    Brain that asks Ollama to unload its models stops asking once it is gone."""
    ref = weakref.WeakMethod(hook) if hasattr(hook, "__self__") else (lambda: hook)
    with _BEFORE_LOAD_LOCK:
        _BEFORE_LOAD[:] = [r for r in _BEFORE_LOAD if r() is not None] + [ref]


def large_model_loading(what: str) -> None:
    """Run the live ``before_large_model_load`` hooks. One that fails is logged, never raised: the load goes on."""
    with _BEFORE_LOAD_LOCK:
        hooks = [h for h in (r() for r in _BEFORE_LOAD) if h is not None]
    for hook in hooks:
        try:
            hook(what)
        except Exception as err:  # a hook frees memory for the load; failing to is no reason to fail the load
            logging.getLogger(__name__).warning("Edit Agents: before loading %s: %s", what, err)


class DeviceManager(Protocol):
    def place(self, module: Any) -> Any:
        """Make ``module`` ready to run and return the torch device it runs on."""

    def place_all(self, modules: list[Any]) -> Any:
        """Make all of ``modules`` ready to run together (one model's parts) and return their device."""


class LocalDevice:
    """Outside ComfyUI: CUDA when present, else the CPU (fp32)."""

    def device(self) -> Any:
        import torch

        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def dtype(self, device: Any) -> Any:
        """fp32 on the CPU (half precision is slow there); on a GPU bf16 where it runs, else fp16."""
        import torch

        if getattr(device, "type", str(device)) == "cpu":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float16

    def place(self, module: Any) -> Any:
        return self.place_all([module])

    def place_all(self, modules: list[Any]) -> Any:
        device = self.device()
        large_model_loading(", ".join(type(m).__name__ for m in modules))
        for module in modules:
            module.to(device)
        return device


class ToolRuntime:
    def __init__(self, model_dirs: dict[str, list[Path]] | None = None, choices: dict[str, str] | None = None,
                 manager: DeviceManager | None = None, vision: Vision | None = None,
                 extras: dict[str, Any] | None = None):
        # folder name (grounding-dino, sams, diffusers) -> where to look
        self.model_dirs = {k: [Path(p) for p in v] for k, v in (model_dirs or {}).items()}
        self.choices = dict(choices or {})  # kind -> file or folder name the user picked
        self.manager = manager or LocalDevice()
        self.vision = vision  # for VLM tools (caption, visual questions)
        self.extras = dict(extras or {})  # host objects for host tools, e.g. ComfyUI's MODEL/CLIP/VAE
        self.loads: Counter[str] = Counter()  # how many times each model was loaded (should stay 1)
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._in_use: dict[str, threading.Lock] = {}

    def dtype(self) -> Any:
        """The dtype models load in: the device manager's choice for its device."""
        manager = self.manager
        device = manager.device() if hasattr(manager, "device") else LocalDevice().device()
        return (manager if hasattr(manager, "dtype") else LocalDevice()).dtype(device)

    def exclusive(self, kind: str) -> threading.Lock:
        """A lock to hold while running the ``kind`` model: a diffusers pipeline keeps its scheduler's step in
        itself, so two loops' generators calling it at once would corrupt each other's denoising."""
        with self._lock:
            return self._in_use.setdefault(kind, threading.Lock())

    def folders(self, kind: str) -> list[Path]:
        """The folders holding models of ``kind`` (keyed by ComfyUI's model folder name)."""
        return self.model_dirs.get(MODEL_KINDS[kind].folder, [])

    def available(self, kind: str) -> list[str]:
        names: list[str] = []
        for folder in self.folders(kind):
            if folder.is_dir():
                names += sorted(p.name for p in folder.iterdir() if MODEL_KINDS[kind].accepts(p))
        return names

    def unusable(self, kind: str) -> list[str]:
        """Entries of ``kind``'s folders that are not this kind of model (ComfyUI's placeholders aside): named in
        the missing-model error, so a file another pack keeps there is explained rather than silently ignored."""
        names: list[str] = []
        for folder in self.folders(kind):
            if folder.is_dir():
                names += sorted(p.name for p in folder.iterdir() if not p.name.startswith((".", "put_"))
                                and not MODEL_KINDS[kind].accepts(p))
        return names

    def path(self, kind: str) -> Path:
        info = MODEL_KINDS[kind]
        folders = self.folders(kind)
        name = self.choices.get(kind)
        candidates = [f / name for f in folders] if name else [f / n for f in folders for n in self.available(kind)[:1]]
        for c in candidates:
            if c.exists():
                return c
        where = ", ".join(str(f) for f in folders) or f"models/{info.folder}/ (no folder registered)"
        wanted = f"'{name}'" if name else "a model"
        others = self.unusable(kind)
        found = (f" Found there but not loadable: {', '.join(others[:4])}"
                 f"{' (' + info.foreign + ')' if info.foreign else ''}." if others else "")
        raise MissingModelError(f"{wanted} for {kind} was not found in {where}.{found} Put {info.what} there, "
                                f"for example {info.example}.")

    def load(self, kind: str, loader: Callable[[Path], Any]) -> Any:
        """The loaded model for ``kind``: loaded once, then reused."""
        path = self.path(kind)
        key = f"{kind}:{path}"
        with self._lock:
            if key not in self._models:
                try:
                    self._models[key] = loader(path)
                except (RuntimeError, OSError, EOFError, ValueError, KeyError, IndexError, pickle.UnpicklingError) as err:
                    if isinstance(err, MissingModelError) or str(path) in str(err):
                        raise  # already names the file
                    info = MODEL_KINDS[kind]
                    raise ModelFileError(f"{path} could not be loaded as {info.what}: {type(err).__name__}: "
                                         f"{str(err)[:300]}. It may be truncated or corrupt (an interrupted download?): "
                                         f"get it again, e.g. {info.example}.") from None
                self.loads[key] += 1
            return self._models[key]
