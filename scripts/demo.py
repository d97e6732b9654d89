"""`make demo`: the offline PhotoAgent workflow on real photos, through a real ComfyUI server.

Uses scikit-image's bundled photo of Chelsea the cat (no download) twice: once with a known defect
applied (saved as a JPEG at quality 10: its 8x8 blocks and ringing, a defect PhotoAgent could not fix before
issue 27), once as it is. Both go through
workflows/photoagent_offline.json on one local ComfyUI server with the `edit-agents batch` CLI. The
demo then scores each result against the clean original (SSIM and mean CIEDE2000, which the search
never sees) and leaves in output/demo/: the inputs, the results, `fixed.png` (degraded | fixed | clean),
`left_alone.png` (good photo | result) and a trace per photo.
"""
from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data
from skimage.color import deltaE_ciede2000, rgb2lab
from skimage.metrics import structural_similarity

from edit_agents.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "output" / "demo"
WORKFLOW = ROOT / "workflows" / "photoagent_offline.json"


def with_defect(photo: np.ndarray) -> np.ndarray:
    """The known defect: heavy JPEG compression (quality 10), decoded again; the demo hands it over as a PNG."""
    buf = io.BytesIO()
    Image.fromarray(photo).save(buf, "JPEG", quality=10)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def distance(img: np.ndarray, clean: np.ndarray) -> str:
    a, b = img.astype(np.float32) / 255, clean.astype(np.float32) / 255
    ssim = structural_similarity(a, b, channel_axis=2, data_range=1.0)
    de = float(deltaE_ciede2000(rgb2lab(a), rgb2lab(b)).mean())
    return f"SSIM {ssim:.3f}, ΔE {de:.2f}"


def actions_of(summary: dict) -> str:
    return ", ".join(f"{a['tool']}({', '.join(f'{k}={v}' for k, v in a['params'].items())})"
                     for a in summary["actions"]) or "no edit"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        if old.is_file():
            old.unlink()
    inputs = OUT / "inputs"
    inputs.mkdir(exist_ok=True)
    clean = data.chelsea()
    degraded = with_defect(clean)
    Image.fromarray(degraded).save(inputs / "chelsea_jpeg_q10.png")
    Image.fromarray(clean).save(inputs / "chelsea.png")
    code = cli_main(["batch", str(WORKFLOW), "--images", str(inputs), "--out", str(OUT)])
    if code != 0:
        return code
    results = {}
    for stem in ("chelsea_jpeg_q10", "chelsea"):
        found = sorted(p for p in OUT.glob(f"{stem}_*.png") if re.fullmatch(rf"{stem}_\d+_\d+\.png", p.name))
        if not found:
            print(f"error: the workflow produced no image for {stem}", file=sys.stderr)
            return 1
        summary = json.loads((OUT / f"{stem}.trace.json").read_text())["summary"]
        results[stem] = (np.asarray(Image.open(found[0]).convert("RGB")), summary, found[0])
    fixed, s_fixed, fixed_path = results["chelsea_jpeg_q10"]
    kept, s_kept, kept_path = results["chelsea"]
    Image.fromarray(np.concatenate([degraded, fixed, clean], axis=1)).save(OUT / "fixed.png")
    Image.fromarray(np.concatenate([clean, kept], axis=1)).save(OUT / "left_alone.png")
    print("\nA photo that needs help (a JPEG at quality 10), scored against the clean original:")
    print(f"  before: {distance(degraded, clean)}\n  after:  {distance(fixed, clean)}   "
          f"[{s_fixed['steps']} edit(s): {actions_of(s_fixed)}; reward {s_fixed['score_before']:.3f} -> "
          f"{s_fixed['score_after']:.3f}]")
    print(f"  degraded | fixed | clean: {OUT / 'fixed.png'}")
    print("A good photo:")
    print(f"  after:  {distance(kept, clean)}   [{s_kept['steps']} edit(s): {actions_of(s_kept)}; "
          f"scene: {s_kept.get('scene', '?')}]")
    print(f"  photo | result: {OUT / 'left_alone.png'}")
    print(f"results: {fixed_path}, {kept_path}\ntraces:  {OUT / 'chelsea_jpeg_q10.trace.json'}, "
          f"{OUT / 'chelsea.trace.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
