"""Build the smallest checkpoints ComfyUI detects as SD1.5 (and SD1.5 InstructPix2Pix), from ComfyUI's
own classes, with random weights: a one-level 320-channel UNet, a full-size CLIP-L (detection needs
it) and a TAESD VAE; about 290 MB in fp16. Run with ComfyUI's folder as cwd and on sys.path:
    python build_tiny_checkpoint.py OUT.safetensors [--in-channels 8]
Tests cache the result outside the repository; it is never committed."""
from __future__ import annotations

import argparse
import sys

import torch


def build(out: str, in_channels: int) -> None:
    sys.argv = sys.argv[:1] + ["--cpu"]
    import comfy.cli_args

    comfy.cli_args.args.cpu = True
    import comfy.ops
    import comfy.sd1_clip
    import comfy.taesd.taesd
    import safetensors.torch
    from comfy.ldm.modules.diffusionmodules.openaimodel import UNetModel

    torch.manual_seed(0)
    unet = UNetModel(image_size=32, in_channels=in_channels, model_channels=320, out_channels=4, num_res_blocks=[1],
                     dropout=0, channel_mult=[1], num_heads=8, transformer_depth=[1], transformer_depth_output=[1, 1],
                     transformer_depth_middle=1, context_dim=768, use_linear_in_transformer=False, adm_in_channels=None,
                     use_spatial_transformer=True, legacy=False, dtype=torch.float32, operations=comfy.ops.manual_cast)
    clip = comfy.sd1_clip.SDClipModel(device="cpu", dtype=torch.float32)
    vae = comfy.taesd.taesd.TAESD(latent_channels=4)
    sd = {}
    for prefix, module in (("model.diffusion_model.", unet), ("cond_stage_model.", clip), ("first_stage_model.", vae)):
        sd.update(random_weights(module, prefix))
    safetensors.torch.save_file(sd, out)


def random_weights(module: torch.nn.Module, prefix: str = "") -> dict[str, torch.Tensor]:
    """``module``'s state dict with random weights in fp16 (norm scales 1, biases 0); a module on the meta device
    (shapes only) works too, so a large one never holds two copies."""
    out = {}
    for key, value in module.state_dict().items():
        if value.is_floating_point():
            if value.ndim > 1:
                value = torch.randn(value.shape) * 0.02
            elif ("weight" in key or key.endswith(".scale")) and ("norm" in key or "ln" in key):  # RMSNorm: .scale
                value = torch.ones(value.shape)
            elif value.ndim == 0 and "scale" in key:  # a latent scale (TAESD's vae_scale) divides: never 0
                value = torch.ones(())
            else:
                value = torch.zeros(value.shape)
            value = value.half()
        out[prefix + key] = value.contiguous()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--in-channels", type=int, default=4)
    args = parser.parse_args()
    build(args.out, args.in_channels)
