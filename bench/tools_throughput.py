"""Benchmark: classic tools at 0.25, 1 and 12 megapixels; model tools' first call (load) vs later calls.

Model tools use tiny random-weight models built here (nothing downloaded), so the figures
show the load-once behaviour and the pack's overhead, not real model speed.
Run: .venv/bin/python bench/tools_throughput.py
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from skimage import data  # noqa: E402

from edit_agents.tools import default_registry  # noqa: E402
from edit_agents.tools.imageops import as_image, resize  # noqa: E402
from edit_agents.tools.models import ToolRuntime  # noqa: E402

SIZES = {"0.25 MP": (408, 612), "1 MP": (816, 1224), "12 MP": (2828, 4243)}
NEEDS = {"crop": {"box": [0.1, 0.1, 0.9, 0.9]}}


def photo(h: int, w: int) -> np.ndarray:
    return np.clip(resize(as_image(data.coffee()), (w, h), "cubic"), 0, 1)


def classic() -> None:
    tools = default_registry()
    names = [s.name for s in tools.specs() if s.category == "classic"]
    print(f"{'tool':<20}" + "".join(f"{k:>12}" for k in SIZES) + "   (ms per call, median of 3)")
    imgs = {k: photo(*v) for k, v in SIZES.items()}
    totals = {k: 0.0 for k in SIZES}
    for name in names:
        row = f"{name:<20}"
        for label, img in imgs.items():
            runs = 3
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                tools.call(name, img, NEEDS.get(name, {}))
                times.append((time.perf_counter() - t0) * 1000)
            ms = statistics.median(times)
            totals[label] += ms
            row += f"{ms:>12.1f}"
        print(row)
    print(f"{'all ' + str(len(names)) + ' tools':<20}" + "".join(f"{totals[k]:>12.0f}" for k in SIZES))
    print("megapixels per second, all tools in turn: " + ", ".join(
        f"{k}: {len(names) * float(k.split()[0]) / (totals[k] / 1000):.1f}" for k in SIZES))


def model_tools() -> None:
    from tiny_models import build_grounding_dino, build_instruct_pix2pix, build_sam, build_sd_inpaint

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_grounding_dino(root / "grounding-dino" / "gd")
        build_sam(root / "sams" / "sam.pth")
        build_instruct_pix2pix(root / "diffusers" / "ip2p")
        build_sd_inpaint(root / "diffusers" / "inpaint")
        rt = ToolRuntime({f: [root / f] for f in ("grounding-dino", "sams", "diffusers")},
                         choices={"instruct-pix2pix": "ip2p", "inpaint": "inpaint"})
        tools = default_registry(rt)
        img = photo(400, 600)
        mask = tools.call("box_mask", img, {"box": [0.2, 0.2, 0.6, 0.6]})[0]
        calls = {
            "ground (GroundingDINO + SAM)": ("ground", {"text": "a cat", "box_threshold": 0.3}),
            "segment_box (SAM)": ("segment_box", {}),
            "instruct_pix2pix (2 steps, 64 px)": ("instruct_pix2pix", {"prompt": "winter", "steps": 2, "work_side": 64}),
            "inpaint (2 steps, 64 px)": ("inpaint", {"prompt": "a cat", "mask": "step:0", "steps": 2, "work_side": 64}),
        }
        print(f"\n{'model tool (tiny models)':<36}{'first call':>12}{'later calls':>13}   loads")
        for label, (name, params) in calls.items():
            times = []
            for _ in range(4):
                t0 = time.perf_counter()
                tools.call(name, img, params, refs=[mask])
                times.append((time.perf_counter() - t0) * 1000)
            print(f"{label:<36}{times[0]:>10.0f}ms{statistics.median(times[1:]):>11.0f}ms   "
                  f"{sum(rt.loads.values())} model load(s) so far")


if __name__ == "__main__":
    classic()
    model_tools()
