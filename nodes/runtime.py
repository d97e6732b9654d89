"""The model runtime inside ComfyUI: ComfyUI's model folders and ComfyUI's model management."""
from __future__ import annotations

import os
from pathlib import Path

from ..agents.brain import vision_of
from ..agents.local_brain import FOLDER as LLM_FOLDER
from ..agents.local_brain import model_entries
from ..tools.models import MODEL_KINDS, ToolRuntime, large_model_loading

# diffusers is ComfyUI's own; LLM holds the local brain's models
OUR_FOLDERS = tuple(sorted({k.folder for k in MODEL_KINDS.values()} - {"diffusers"} | {LLM_FOLDER}))
FIRST_AVAILABLE = "(first available)"


def register_model_folders() -> None:
    """models/grounding-dino, models/sams, models/clip-hf, ... next to ComfyUI's own folders (idempotent)."""
    import folder_paths

    for name in OUR_FOLDERS:
        folder_paths.add_model_folder_path(name, os.path.join(folder_paths.models_dir, name), is_default=True)


def model_dirs() -> dict[str, list[Path]]:
    import folder_paths

    register_model_folders()
    folders = {k.folder for k in MODEL_KINDS.values()}
    return {f: [Path(p) for p in folder_paths.get_folder_paths(f)] for f in folders}


def llm_folders() -> list[Path]:
    """Where local brain models live: models/LLM/ and any LLM path in extra_model_paths.yaml."""
    import folder_paths

    register_model_folders()
    return [Path(p) for p in folder_paths.get_folder_paths(LLM_FOLDER)]


def local_model_choices() -> list[str]:
    """What the Brain's local_model combo lists: "(none)" first, so a saved workflow that names no local model
    stays valid when models are added, then the model folders found."""
    return [NO_LOCAL_MODEL] + model_entries(llm_folders())


NO_LOCAL_MODEL = "(none)"


def model_choices(kind: str) -> list[str]:
    """What a Toolbox combo lists for ``kind``: the entries in its model folders."""
    return [FIRST_AVAILABLE] + ToolRuntime(model_dirs()).available(kind)


class ComfyDeviceManager:
    """Wraps each torch module in a ModelPatcher and loads it through ComfyUI's model management,
    so ComfyUI offloads and frees it like its own models."""

    def __init__(self):
        self._patchers: dict[int, object] = {}

    def device(self):
        import comfy.model_management as mm

        return mm.get_torch_device()

    def dtype(self, device):
        """ComfyUI's choice for this device: bf16 or fp16 on a GPU that runs them well, else fp32."""
        import comfy.model_management as mm
        import torch

        if mm.should_use_bf16(device):
            return torch.bfloat16
        return torch.float16 if mm.should_use_fp16(device) else torch.float32

    def read_weights(self, path):
        """A checkpoint's tensors through ComfyUI's own reader (safetensors or a weights-only torch.load)."""
        import comfy.utils

        return comfy.utils.load_torch_file(str(path), safe_load=True)

    def patcher(self, module):
        """The ModelPatcher of ``module``, made once."""
        import comfy.model_management as mm
        import comfy.model_patcher

        import torch

        patcher = self._patchers.get(id(module))
        if patcher is None:
            # ModelPatcher sets attributes (device, ...) on what it wraps; HF models make some read-only,
            # so it wraps a plain holder module instead, and moving the holder moves the model.
            holder = torch.nn.Module()
            holder.model = module
            patcher = comfy.model_patcher.ModelPatcher(holder, load_device=mm.get_torch_device(),
                                                       offload_device=mm.unet_offload_device())
            self._patchers[id(module)] = patcher
        return patcher

    def place(self, module):
        return self.place_all([module])

    def place_all(self, modules):
        """One load_models_gpu call for all of them: ComfyUI frees room for the whole set at once."""
        import comfy.model_management as mm

        patchers = [self.patcher(m) for m in modules]
        mm.load_models_gpu(patchers)
        return patchers[0].load_device if patchers else mm.get_torch_device()


def watch_model_loads() -> None:
    """Run the pack's before-load hooks (``tools.models.before_large_model_load``: a Brain that unloads Ollama's
    models) each time ComfyUI loads models onto its device: its own loaders' models in the graph (a checkpoint,
    FLUX Kontext, CLIP, a VAE) and the pack's. ComfyUI has no such event, so ``load_models_gpu`` is wrapped, once,
    and only when a Brain asks for it; the wrapper then calls ComfyUI's own, unchanged."""
    import functools

    import comfy.model_management as mm

    original = mm.load_models_gpu
    if getattr(original, "edit_agents_watched", False):
        return

    @functools.wraps(original)
    def load_models_gpu(models, *args, **kwargs):
        names = (", ".join(type(getattr(m, "model", m)).__name__ for m in models)
                 if isinstance(models, (list, tuple)) else "")  # never consume what ComfyUI iterates after us
        large_model_loading(names or "a model")
        return original(models, *args, **kwargs)

    load_models_gpu.edit_agents_watched = True
    mm.load_models_gpu = load_models_gpu


def comfy_runtime(choices: dict[str, str], brain=None, extras: dict | None = None) -> ToolRuntime:
    """The tools' runtime inside ComfyUI: the user's model choices, ComfyUI's model management, and ``brain`` lent
    to the VLM tools."""
    picked = {k: v for k, v in choices.items() if v and v != FIRST_AVAILABLE}
    return ToolRuntime(model_dirs(), picked, manager=ComfyDeviceManager(), vision=vision_of(brain), extras=extras)
