"""Generative editors through diffusers: InstructPix2Pix, and SD / SDXL inpainting.

Pipelines load offline from ComfyUI's models/diffusers/<name>/ (diffusers layout), once per
runtime. Each torch component is placed by the runtime's device manager (ComfyUI's model
management inside ComfyUI); fp32 on the CPU.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .backends import require
from .imageops import join_alpha, paste_masked, split_alpha, to_rgb, to_uint8
from .spec import Param, ToolOutput, ToolSpec


def load_pipeline(path: Path, dtype: Any = None) -> Any:
    """A diffusers pipeline folder, in ``dtype`` (the runtime's choice: fp16/bf16 on a GPU, fp32 on the CPU)."""
    diffusers = require("diffusers")
    if not (path / "model_index.json").exists():
        raise ValueError(f"{path} is not a diffusers pipeline folder (no model_index.json)")
    pipe = diffusers.DiffusionPipeline.from_pretrained(path, local_files_only=True, low_cpu_mem_usage=False,
                                                       **({"torch_dtype": dtype} if dtype is not None else {}))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _pipeline(runtime, kind: str) -> Any:
    return runtime.load(kind, lambda path: load_pipeline(path, runtime.dtype()))


def _place(runtime, pipe) -> Any:
    """Every torch component of the pipeline onto the device in one call, so that under memory pressure the
    model manager frees room for all of them at once instead of one component evicting another."""
    import torch

    return runtime.manager.place_all([c for c in pipe.components.values() if isinstance(c, torch.nn.Module)])


def _generator(seed: int, device) -> Any:
    import torch

    return torch.Generator(device="cpu").manual_seed(int(seed))


def _to_pil(img: np.ndarray):
    from PIL import Image

    return Image.fromarray(to_uint8(to_rgb(img)))


def _from_pil(pil, like: np.ndarray) -> np.ndarray:
    from PIL import Image

    h, w = like.shape[:2]
    out = np.asarray(pil.convert("RGB").resize((w, h), Image.LANCZOS), np.float32) / 255.0
    if like.shape[2] == 1:
        out = out.mean(axis=2, keepdims=True)
    return out


def _native_side(pipe) -> int:
    """The resolution a pipeline was trained at: 512 for SD 1.5, 1024 for SDXL (sample size x VAE factor)."""
    size = pipe.unet.config.sample_size
    size = max(size) if isinstance(size, (list, tuple)) else int(size)
    return max(64, size * int(getattr(pipe, "vae_scale_factor", 8)))


def _size_multiple(img: np.ndarray, side: int) -> tuple[int, int]:
    """Work size: longest side ``side`` (at least 64), both sides multiples of 8 (what the UNet needs)."""
    h, w = img.shape[:2]
    scale = max(64, side) / max(h, w)
    return max(8, int(round(w * scale / 8)) * 8), max(8, int(round(h * scale / 8)) * 8)


def instruct_pix2pix(img, prompt="", text_guidance=7.5, image_guidance=1.5, steps=20, seed=0, work_side=0, runtime=None):
    pipe = _pipeline(runtime, "instruct-pix2pix")
    device = _place(runtime, pipe)
    color, alpha = split_alpha(img)
    w, h = _size_multiple(color, work_side or _native_side(pipe))
    with runtime.exclusive("instruct-pix2pix"):
        result = pipe(prompt=prompt, image=_to_pil(color).resize((w, h)), guidance_scale=text_guidance,
                      image_guidance_scale=image_guidance, num_inference_steps=int(steps),
                      generator=_generator(seed, device)).images[0]
    return ToolOutput(join_alpha(_from_pil(result, color), alpha), [f"InstructPix2Pix '{prompt}' at {w}x{h}"])


def inpaint(img, prompt="", mask=None, negative_prompt="", strength=0.99, guidance=7.5, steps=25, seed=0,
            work_side=0, runtime=None):
    from PIL import Image

    if mask is None:
        raise ValueError("inpaint needs a mask: pass mask='step:N' from ground, segment_box or box_mask")
    pipe = _pipeline(runtime, "inpaint")
    device = _place(runtime, pipe)
    color, alpha = split_alpha(img)
    m = mask[:, :, 0] if mask.ndim == 3 else mask
    if m.max() <= 0:
        return ToolOutput(img, ["inpaint skipped: the mask is empty, so there is nothing to repaint"])
    w, h = _size_multiple(color, work_side or _native_side(pipe))
    mask_pil = Image.fromarray((np.clip(m, 0, 1) * 255).astype(np.uint8)).resize((w, h))
    with runtime.exclusive("inpaint"):
        result = pipe(prompt=prompt, negative_prompt=negative_prompt or None, image=_to_pil(color).resize((w, h)),
                      mask_image=mask_pil, strength=strength, guidance_scale=guidance, num_inference_steps=int(steps),
                      generator=_generator(seed, device), height=h, width=w).images[0]
    return ToolOutput(join_alpha(paste_masked(color, _from_pil(result, color), m), alpha),  # outside stays exact
                      [f"inpainted '{prompt}' at {w}x{h}"])


SEED = Param("seed", "int", "random seed (same seed, same result)", default=0, minimum=0, maximum=2**31 - 1)
STEPS = Param("steps", "int", "denoising steps (more = slower, finer)", default=20, minimum=1, maximum=150)
SIDE = Param("work_side", "int", "longest side the model works at, the result resized back; 0: the model's own "
             "(512 for SD 1.5, 1024 for SDXL)", default=0, minimum=0, maximum=2048)
GEN = dict(category="generative", speed="slow", needs_model=True, needs_gpu=True, needs_runtime=True)

GENERATIVE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("instruct_pix2pix", "Edit the photo by a written instruction (e.g. 'make it winter').",
             "InstructPix2Pix follows an instruction. text_guidance controls how strongly it follows the words "
             "(raise it when the edit is too weak, e.g. 4 -> 8); image_guidance how closely it keeps the input.",
             (Param("prompt", "string", "the edit instruction", required=True),
              Param("text_guidance", "float", "how strongly to follow the instruction", default=7.5, minimum=1.0,
                    maximum=20.0, neutral=1.0, effect="Higher = stronger edit."),
              Param("image_guidance", "float", "how closely to keep the input image", default=1.5, minimum=1.0,
                    maximum=5.0, effect="Higher = closer to the input."),
              STEPS, SEED, SIDE),
             instruct_pix2pix, keywords=("turn it into", "make it look like", "change the season", "instruct"), **GEN),
    ToolSpec("inpaint", "Repaint a masked region from a text prompt (remove or replace things).",
             "Stable Diffusion (or SDXL) inpainting repaints only where the mask is white; pixels outside stay exact. "
             "Get the mask from ground ('the dog'), segment_box or box_mask and pass it as mask='step:N'.",
             (Param("prompt", "string", "what should appear in the masked region", required=True),
              Param("mask", "mask", "where to repaint: 'step:N' from a mask tool", required=True),
              Param("negative_prompt", "string", "what to avoid", default=""),
              Param("strength", "float", "how much to change the masked region", default=0.99, minimum=0.05, maximum=1.0,
                    neutral=0.0),
              Param("guidance", "float", "how strongly to follow the prompt", default=7.5, minimum=1.0, maximum=20.0,
                    neutral=1.0),
              STEPS, SEED, SIDE),
             inpaint, keywords=("remove", "replace", "inpaint", "erase", "add a", "put a"), **GEN),
)
