"""Agent tools that run on the user's own ComfyUI checkpoint (MODEL / CLIP / VAE from their loaders),
through ComfyUI's own nodes and sampler, so any checkpoint the user has becomes an agent tool.
They live in nodes/ because they call ComfyUI; the Toolbox adds them when MODEL, CLIP and VAE are connected."""
from __future__ import annotations

import comfy.samplers
import numpy as np
import torch

from ..tools.generative import GEN, SEED
from ..tools.imageops import join_alpha, paste_masked, resize, split_alpha, to_rgb
from ..tools.spec import Param, ToolOutput, ToolSpec

# what this ComfyUI's KSampler offers, custom samplers from other packs included
SAMPLERS = tuple(comfy.samplers.KSampler.SAMPLERS)
SCHEDULERS = tuple(comfy.samplers.KSampler.SCHEDULERS)


def _models(runtime):
    found = {k: runtime.extras.get(k) for k in ("model", "clip", "vae")}
    missing = [k.upper() for k, v in found.items() if v is None]
    if missing:
        raise ValueError(f"this tool needs {', '.join(missing)}: connect your checkpoint loader's outputs to the Toolbox")
    return found["model"], found["clip"], found["vae"]


def _pixels(img: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(to_rgb(img), dtype=np.float32))[None]


def _back(decoded: torch.Tensor, like: np.ndarray) -> np.ndarray:
    out = decoded[0].detach().cpu().float().numpy()
    h, w = like.shape[:2]
    if out.shape[:2] != (h, w):  # VAE encode crops to multiples of 8
        out = resize(out, (w, h), "cubic")
    return np.clip(out, 0, 1)


def _encode_text(clip, prompt: str, negative: str):
    import nodes as comfy_nodes  # ComfyUI's own nodes module (absolute import)

    return comfy_nodes.CLIPTextEncode().encode(clip, prompt)[0], comfy_nodes.CLIPTextEncode().encode(clip, negative)[0]


def _sample(model, seed, steps, cfg, sampler, scheduler, positive, negative, latent, denoise):
    import nodes as comfy_nodes

    return comfy_nodes.common_ksampler(model, int(seed), int(steps), float(cfg), sampler, scheduler, positive, negative,
                                       latent, denoise=float(denoise))[0]


@torch.inference_mode()  # agent roles may call tools from a worker thread, where ComfyUI's mode is not set
def comfy_img2img(img, prompt="", negative_prompt="", denoise=0.5, steps=20, cfg=7.0, seed=0, sampler="euler",
                  scheduler="normal", runtime=None):
    import nodes as comfy_nodes

    model, clip, vae = _models(runtime)
    color, alpha = split_alpha(img)
    pos, neg = _encode_text(clip, prompt, negative_prompt)
    latent = comfy_nodes.VAEEncode().encode(vae, _pixels(color))[0]
    samples = _sample(model, seed, steps, cfg, sampler, scheduler, pos, neg, latent, denoise)
    out = _back(comfy_nodes.VAEDecode().decode(vae, samples)[0], color)
    return ToolOutput(join_alpha(out if color.shape[2] == 3 else out.mean(axis=2, keepdims=True), alpha),
                      [f"img2img '{prompt}' on your checkpoint, denoise {denoise:g}"])


@torch.inference_mode()  # agent roles may call tools from a worker thread, where ComfyUI's mode is not set
def comfy_inpaint(img, prompt="", mask=None, negative_prompt="", denoise=1.0, steps=20, cfg=7.0, seed=0,
                  sampler="euler", scheduler="normal", runtime=None):
    import nodes as comfy_nodes

    if mask is None:
        raise ValueError("comfy_inpaint needs a mask: pass mask='step:N' from ground, segment_box or box_mask")
    model, clip, vae = _models(runtime)
    color, alpha = split_alpha(img)
    m = mask[:, :, 0] if mask.ndim == 3 else mask
    if m.max() <= 0:
        return ToolOutput(img, ["comfy_inpaint skipped: the mask is empty"])
    pos, neg = _encode_text(clip, prompt, negative_prompt)
    pos, neg, latent = comfy_nodes.InpaintModelConditioning().encode(pos, neg, _pixels(color), vae,
                                                                     torch.from_numpy(m.astype(np.float32))[None],
                                                                     noise_mask=True)
    samples = _sample(model, seed, steps, cfg, sampler, scheduler, pos, neg, latent, denoise)
    painted = _back(comfy_nodes.VAEDecode().decode(vae, samples)[0], color)
    merged = paste_masked(to_rgb(color), painted, m)  # outside the mask: exactly the input
    return ToolOutput(join_alpha(merged if color.shape[2] == 3 else merged.mean(axis=2, keepdims=True), alpha),
                      [f"inpainted '{prompt}' on your checkpoint"])


@torch.inference_mode()  # agent roles may call tools from a worker thread, where ComfyUI's mode is not set
def comfy_instruct_pix2pix(img, prompt="", negative_prompt="", steps=20, cfg=7.5, seed=0, sampler="euler",
                           scheduler="normal", runtime=None):
    import nodes as comfy_nodes
    from comfy_extras.nodes_ip2p import InstructPixToPixConditioning

    model, clip, vae = _models(runtime)
    color, alpha = split_alpha(img)
    pos, neg = _encode_text(clip, prompt, negative_prompt)
    out = InstructPixToPixConditioning.execute(pos, neg, _pixels(color), vae)
    pos, neg, latent = out.args if hasattr(out, "args") else out
    samples = _sample(model, seed, steps, cfg, sampler, scheduler, pos, neg, latent, 1.0)
    res = _back(comfy_nodes.VAEDecode().decode(vae, samples)[0], color)
    return ToolOutput(join_alpha(res if color.shape[2] == 3 else res.mean(axis=2, keepdims=True), alpha),
                      [f"InstructPix2Pix '{prompt}' on your checkpoint"])


def _common():
    return (Param("negative_prompt", "string", "what to avoid", default=""),
            Param("steps", "int", "sampling steps", default=20, minimum=1, maximum=150),
            Param("cfg", "float", "classifier-free guidance: how strongly to follow the prompt", default=7.0,
                  minimum=1.0, maximum=30.0, neutral=1.0, effect="Raise it when the edit is too weak."),
            SEED,
            Param("sampler", "enum", "sampler", default="euler", choices=SAMPLERS),
            Param("scheduler", "enum", "noise schedule", default="normal", choices=SCHEDULERS))


COMFY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("comfy_img2img", "Re-render the photo from a prompt with your own checkpoint (img2img).",
             "Encodes the image with your VAE, partially re-noises it (denoise) and samples with your MODEL and CLIP "
             "through ComfyUI's sampler. Low denoise keeps the photo; high denoise follows the prompt.",
             (Param("prompt", "string", "what the result should look like", required=True),
              Param("denoise", "float", "how much to change (0 keeps the photo, 1 ignores it)", default=0.5,
                    minimum=0.0, maximum=1.0, neutral=0.0), *_common()),
             comfy_img2img, keywords=("re-render", "restyle", "in the style of"), **GEN),
    ToolSpec("comfy_inpaint", "Repaint a masked region with your own checkpoint.",
             "InpaintModelConditioning with your MODEL/CLIP/VAE: repaints where the mask is white; outside stays exact. "
             "Works best with an inpainting checkpoint; pass the mask as 'step:N'.",
             (Param("prompt", "string", "what should appear in the masked region", required=True),
              Param("mask", "mask", "where to repaint: 'step:N' from a mask tool", required=True),
              Param("denoise", "float", "how much to change the masked region", default=1.0, minimum=0.0,
                    maximum=1.0, neutral=0.0), *_common()),
             comfy_inpaint, **GEN),
    ToolSpec("comfy_instruct_pix2pix", "Edit by instruction with your own InstructPix2Pix checkpoint.",
             "InstructPixToPixConditioning with your MODEL/CLIP/VAE (an InstructPix2Pix checkpoint).",
             (Param("prompt", "string", "the edit instruction", required=True), *_common()),
             comfy_instruct_pix2pix, **GEN),
)
