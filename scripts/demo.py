"""`make demo`: the offline PhotoAgent workflow on a real photo, through a real ComfyUI server.

Uses scikit-image's bundled photo of Chelsea the cat (a real, slightly flat photo; no
download), runs workflows/photoagent_offline.json through the API queue with the
`edit-agents` CLI, and leaves the input, the result, a side-by-side and trace.json in
output/demo/.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data

from edit_agents.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "output" / "demo"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    photo = OUT / "chelsea.png"
    Image.fromarray(data.chelsea()).save(photo)
    code = cli_main(["run", str(ROOT / "workflows" / "photoagent_offline.json"), "--image", str(photo), "--out", str(OUT)])
    if code != 0:
        return code
    results = sorted(OUT.glob("chelsea_*.png"))
    trace = json.loads((OUT / "trace.json").read_text())
    if not results:
        print("error: the workflow produced no image", file=sys.stderr)
        return 1
    before, after = np.asarray(Image.open(photo).convert("RGB")), np.asarray(Image.open(results[0]).convert("RGB"))
    Image.fromarray(np.concatenate([before, after], axis=1)).save(OUT / "before_after.png")
    s = trace["summary"]
    actions = ", ".join(f"{a['tool']}({', '.join(f'{k}={v}' for k, v in a['params'].items())})" for a in s["actions"])
    print(f"\ninput:   {photo}\nresult:  {results[0]}\ncompare: {OUT / 'before_after.png'}\ntrace:   {OUT / 'trace.json'}")
    print(f"PhotoAgent: {s['steps']} step(s) [{actions}], reward {s['score_before']:.3f} -> {s['score_after']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
