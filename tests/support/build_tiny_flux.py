"""Build the smallest diffusion model ComfyUI detects as FLUX (the architecture of FLUX.1 Kontext), and a
16-channel TAESD VAE for it, from ComfyUI's own classes, with random weights. Detection fixes the width (24 heads
of 128, so 3072) but reads the depth and the text widths: one double and one single block, reading CLIP-L's
768-wide tokens and pooled output (so the tiny SD1.5 checkpoint's CLIP can drive it). About 0.5 B parameters,
1 GB in fp16. Run with ComfyUI's folder as cwd and on sys.path:
    python build_tiny_flux.py MODEL.safetensors VAE.safetensors
Tests cache the result outside the repository; it is never committed."""
from __future__ import annotations

import sys

import torch


def build(model_out: str, vae_out: str) -> None:
    sys.argv = sys.argv[:1] + ["--cpu"]
    import comfy.cli_args

    comfy.cli_args.args.cpu = True
    import comfy.ops
    import comfy.taesd.taesd
    import safetensors.torch
    from build_tiny_checkpoint import random_weights  # beside this script
    from comfy.ldm.flux.model import Flux, FluxParams

    # ComfyUI 0.4 and newer ask which text-position axes the model uses (FLUX.1 uses none).
    newer = {"txt_ids_dims": []} if "txt_ids_dims" in getattr(FluxParams, "__dataclass_fields__", {}) else {}
    torch.manual_seed(0)
    with torch.device("meta"):  # shapes only: the weights are drawn below, one tensor at a time
        flux = Flux(image_model="flux", in_channels=16, out_channels=16, vec_in_dim=768, context_in_dim=768,
                    hidden_size=3072, mlp_ratio=4.0, num_heads=24, depth=1, depth_single_blocks=1, axes_dim=[16, 56, 56],
                    theta=10000, patch_size=2, qkv_bias=True, guidance_embed=True, dtype=torch.float16,
                    operations=comfy.ops.manual_cast, **newer)
    safetensors.torch.save_file(random_weights(flux), model_out)
    safetensors.torch.save_file(random_weights(comfy.taesd.taesd.TAESD(latent_channels=16)), vae_out)


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2])
