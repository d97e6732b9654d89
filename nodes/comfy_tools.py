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


def _outputs(out) -> tuple:
    """A ComfyUI node function's outputs, V1 tuple or V3 NodeOutput alike."""
    return tuple(out.args if hasattr(out, "args") else out)


def _first(out):
    return _outputs(out)[0]


def _pixels(img: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(to_rgb(img), dtype=np.float32))[None]


def _back(decoded: torch.Tensor, like: np.ndarray) -> np.ndarray:
    out = decoded[0].detach().cpu().float().numpy()
    if not np.isfinite(out).all():  # clipped, NaN would read as black: a broken result, never a photo
        raise ValueError(f"the model and VAE gave {(~np.isfinite(out)).mean():.0%} of the pixels as NaN or infinity: "
                         "the VAE or the model file is damaged or does not match the model, or the model overflows at "
                         "this precision; load another VAE, or set Load Diffusion Model's weight_dtype to default")
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
    pos, neg, latent = _outputs(out)
    samples = _sample(model, seed, steps, cfg, sampler, scheduler, pos, neg, latent, 1.0)
    res = _back(comfy_nodes.VAEDecode().decode(vae, samples)[0], color)
    return ToolOutput(join_alpha(res if color.shape[2] == 3 else res.mean(axis=2, keepdims=True), alpha),
                      [f"InstructPix2Pix '{prompt}' on your checkpoint"])


# -- instruction editing on the user's edit model (FLUX.1 Kontext, Qwen-Image-Edit, any reference-latent model) --

KONTEXT_SIDE = 1024  # at this working side the Kontext tool snaps to Kontext's preferred resolutions, as ComfyUI's does


def edit_family(model) -> str:
    """Which instruction editor the connected MODEL is: 'kontext' (FLUX: a reference latent and Flux guidance),
    'qwen-image-edit' (Qwen-Image: the text encoder sees the image too) or 'reference-latent' (another model that
    reads ComfyUI's reference latents); a model none of these can drive gets an error naming what to connect."""
    base = getattr(model, "model", None)
    kind = type(base).__name__
    if kind in ("Flux", "Flux2"):
        return "kontext"
    if kind == "QwenImage":
        return "qwen-image-edit"
    if "ref_latents" in getattr(base, "memory_usage_factor_conds", ()):
        return "reference-latent"
    raise ValueError(f"comfy_edit needs an instruction-edit model as the Toolbox's MODEL (FLUX.1 Kontext, "
                     f"Qwen-Image-Edit, or another model that reads a reference latent); the connected model is "
                     f"{kind or 'unknown'}. Load one with Load Diffusion Model (models/diffusion_models/) and connect "
                     "it, its text encoder (Load CLIP / DualCLIPLoader) and its VAE to the Toolbox.")


def _working_size(family: str, h: int, w: int, side: int) -> tuple[int, int]:
    """(width, height) the model edits at: Kontext's preferred resolution nearest in aspect at its own side, else
    the longest side ``side`` (Qwen-Image-Edit: the same pixel count), in multiples of 16."""
    if family == "kontext" and side == KONTEXT_SIDE:
        from comfy_extras.nodes_flux import PREFERED_KONTEXT_RESOLUTIONS

        return min(PREFERED_KONTEXT_RESOLUTIONS, key=lambda r: abs(w / h - r[0] / r[1]))
    if family == "qwen-image-edit":
        scale = side / (h * w) ** 0.5
    else:
        scale = side / max(h, w)
    return max(16, round(w * scale / 16) * 16), max(16, round(h * scale / 16) * 16)


@torch.inference_mode()  # agent roles may call tools from a worker thread, where ComfyUI's mode is not set
def comfy_edit(img, prompt="", steps=20, guidance=2.5, seed=0, work_side=KONTEXT_SIDE, sampler="euler",
               scheduler="simple", mask=None, runtime=None):
    import comfy.utils
    import nodes as comfy_nodes
    from comfy_extras.nodes_edit_model import ReferenceLatent

    model, clip, vae = _models(runtime)
    family = edit_family(model)
    color, alpha = split_alpha(img)
    rgb = to_rgb(color)
    w, h = _working_size(family, *rgb.shape[:2], int(work_side))
    pixels = comfy.utils.common_upscale(_pixels(rgb).movedim(-1, 1), w, h, "lanczos", "disabled").movedim(1, -1)
    latent = comfy_nodes.VAEEncode().encode(vae, pixels)[0]
    if family == "qwen-image-edit":  # the 2509 encoder: the model's text encoder reads the photo with the prompt
        from comfy_extras.nodes_qwen import TextEncodeQwenImageEditPlus

        positive = _first(TextEncodeQwenImageEditPlus.execute(clip, prompt, vae, image1=pixels))
        negative = _first(TextEncodeQwenImageEditPlus.execute(clip, "", vae, image1=pixels))
        cfg = float(guidance)
    else:
        positive = _first(ReferenceLatent.execute(comfy_nodes.CLIPTextEncode().encode(clip, prompt)[0], latent))
        if family == "kontext":  # guidance is distilled into the model: Flux guidance, no negative, CFG 1
            from comfy_extras.nodes_flux import FluxGuidance

            positive = _first(FluxGuidance.execute(positive, float(guidance)))
            negative, cfg = comfy_nodes.ConditioningZeroOut().zero_out(positive)[0], 1.0
        else:
            negative = _first(ReferenceLatent.execute(comfy_nodes.CLIPTextEncode().encode(clip, "")[0], latent))
            cfg = float(guidance)
    samples = _sample(model, seed, steps, cfg, sampler, scheduler, positive, negative, latent, 1.0)
    out = _back(comfy_nodes.VAEDecode().decode(vae, samples)[0], rgb)
    if mask is not None:  # the edit only where the mask is: outside it, exactly the input
        out = paste_masked(rgb, out, mask[:, :, 0] if mask.ndim == 3 else mask)
    notes = [f"{family} edit '{prompt}' at {w}x{h} on your model" + (" inside the mask" if mask is not None else "")]
    return ToolOutput(join_alpha(out if color.shape[2] == 3 else out.mean(axis=2, keepdims=True), alpha), notes)


def comfy_edit_region(img, prompt="", mask=None, **kw):
    if mask is None:
        raise ValueError("comfy_edit_region needs a mask: pass mask='step:N' from ground, segment_box or box_mask")
    return comfy_edit(img, prompt=prompt, mask=mask, **kw)


def _editing():
    return (Param("steps", "int", "sampling steps", default=20, minimum=1, maximum=100),
            Param("guidance", "float", "how strongly to follow the instruction (Kontext: Flux guidance; Qwen-Image-Edit "
                  "and others: CFG)", default=2.5, minimum=1.0, maximum=10.0, neutral=1.0,
                  effect="Raise it when the edit is too weak."),
            SEED,
            Param("work_side", "int", f"the longest side the model edits at (Qwen-Image-Edit: the side of a square "
                  f"of the same area); at {KONTEXT_SIDE}, Kontext's preferred resolutions. The result is resized back",
                  default=KONTEXT_SIDE, minimum=64, maximum=2048, pixels=True),
            Param("sampler", "enum", "sampler", default="euler", choices=SAMPLERS),
            Param("scheduler", "enum", "noise schedule", default="simple" if "simple" in SCHEDULERS else SCHEDULERS[0],
                  choices=SCHEDULERS))


EDIT_KEYWORDS = ("add a", "add an", "remove the", "replace the", "change the", "turn the", "make it look like",
                 "instruction edit")


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

# the Toolbox adds these when the connected MODEL is an instruction editor (``edit_family``)
EDIT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("comfy_edit", "Edit the photo by instruction with your edit model (FLUX.1 Kontext, Qwen-Image-Edit).",
             "Runs your instruction-edit model through ComfyUI's own nodes and sampler: the photo is VAE-encoded as "
             "the reference (Kontext: ReferenceLatent, Flux guidance, no negative; Qwen-Image-Edit: "
             "TextEncodeQwenImageEditPlus), sampled, decoded and resized back. For semantic edits (add, remove, "
             "replace, restyle); tone and colour are better done by the classic tools. Write the prompt as an "
             "instruction: 'add a red hat to the cat'.",
             (Param("prompt", "string", "the edit instruction", required=True), *_editing()),
             comfy_edit, keywords=EDIT_KEYWORDS, **GEN),
    ToolSpec("comfy_edit_region", "Edit one region by instruction with your edit model; outside the mask stays exact.",
             "comfy_edit, then the result pasted back only where the mask is (from ground, segment_box or box_mask "
             "as 'step:N'): a local edit that cannot touch the rest of the photo.",
             (Param("prompt", "string", "the edit instruction", required=True),
              Param("mask", "mask", "where the edit may change the photo: 'step:N' from a mask tool", required=True),
              *_editing()),
             comfy_edit_region, **GEN),
)
