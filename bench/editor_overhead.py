"""What the instruction-edit tool (comfy_edit) costs beside ComfyUI's own nodes on the same model (issue 30: at most
5% of the sampling time per call).

The same edit two ways, in one process with ComfyUI loaded on the CPU: (a) the agent tool, from a float image to a
float image (resizing to the working size, the reference latent, the sampler, the decode, resizing back); (b) the
nodes a user would wire by hand for it (VAE Encode, CLIP Text Encode, ReferenceLatent, FluxGuidance,
ConditioningZeroOut, KSampler, VAE Decode) on a tensor already at the working size. The model is the tests' tiny
FLUX (tests/support/build_tiny_flux.py, cached in ~/.cache/edit-agents): random weights, so only the time means anything.
Runs alternate, after a warm-up of each; the figure is the median.

Run: .venv/bin/python bench/editor_overhead.py [--runs 5] [--side 128] [--steps 2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))


def comfy_in_process():
    from edit_agents.cli.server import find_comfyui

    comfy_dir = str(find_comfyui())
    sys.argv = sys.argv[:1] + ["--cpu"]
    sys.path.insert(0, comfy_dir)
    import comfy.cli_args

    comfy.cli_args.args.cpu = True
    return comfy_dir


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--side", type=int, default=128, help="working side in pixels")
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    comfy_in_process()
    import comfy.sd
    import comfy.utils
    import torch
    from conftest import tiny_checkpoint, tiny_flux

    import nodes as comfy_nodes
    from comfy_extras.nodes_edit_model import ReferenceLatent
    from comfy_extras.nodes_flux import FluxGuidance
    from edit_agents.nodes.comfy_tools import EDIT_TOOLS, _first
    from edit_agents.tools import ToolRegistry
    from edit_agents.tools.models import ToolRuntime

    flux, flux_vae = tiny_flux()
    model = comfy.sd.load_diffusion_model(str(flux))
    clip = comfy.sd.load_checkpoint_guess_config(str(tiny_checkpoint("tiny-sd15.safetensors", 4)),
                                                 output_vae=False, output_clipvision=False)[1]
    vae = comfy.sd.VAE(sd=comfy.utils.load_torch_file(str(flux_vae)))
    runtime = ToolRuntime({}, extras={"model": model, "clip": clip, "vae": vae})
    tools = ToolRegistry(list(EDIT_TOOLS), runtime=runtime)
    photo = np.random.default_rng(0).random((args.side * 3 // 4, args.side, 3)).astype(np.float32)
    params = {"prompt": "add a red hat", "steps": args.steps, "work_side": args.side, "seed": 0}

    def tool() -> None:
        tools.call("comfy_edit", photo, params)

    w, h = args.side, args.side * 3 // 4
    pixels = comfy.utils.common_upscale(torch.from_numpy(photo)[None].movedim(-1, 1), w // 16 * 16, h // 16 * 16,
                                        "lanczos", "disabled").movedim(1, -1)

    @torch.inference_mode()
    def by_hand() -> None:
        latent = comfy_nodes.VAEEncode().encode(vae, pixels)[0]
        cond = comfy_nodes.CLIPTextEncode().encode(clip, "add a red hat")[0]
        positive = _first(FluxGuidance.execute(_first(ReferenceLatent.execute(cond, latent)), 2.5))
        negative = comfy_nodes.ConditioningZeroOut().zero_out(positive)[0]
        samples = comfy_nodes.common_ksampler(model, 0, args.steps, 1.0, "euler", "simple", positive, negative,
                                              latent, denoise=1.0)[0]
        comfy_nodes.VAEDecode().decode(vae, samples)

    tool(), by_hand()  # warm-up: loads, caches
    times = {"tool": [], "nodes": []}
    for _ in range(args.runs):
        for name, run in (("tool", tool), ("nodes", by_hand)):
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    tool_s, nodes_s = statistics.median(times["tool"]), statistics.median(times["nodes"])
    print(f"comfy_edit on the tiny FLUX, {w}x{h}, {args.steps} steps, CPU, median of {args.runs} alternating runs")
    print(f"  the agent tool          {tool_s * 1000:8.1f} ms")
    print(f"  ComfyUI's nodes by hand {nodes_s * 1000:8.1f} ms")
    print(f"  overhead                {(tool_s - nodes_s) * 1000:+8.1f} ms ({(tool_s / nodes_s - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
