"""Benchmark (issue 27): which blur kernels the crops read as one (perceiver.pooled_kernel) on every family.

For every family of the defect space and of the held-out set (tests/support/defects.py), on the evaluation photos, and for
every clean photo the project has, the photo (saved as a JPEG or a PNG, or left a float array) goes through
``perceiver.estimate_kernel`` as the search reads it (its four native texture crops). Printed: every kernel read on the
crops pooled that most crops agree on, its confidence, size and angle, and for a shake whether that is its true length
and angle; then how many such readings fall outside the blur families, and how many lie between the pool's floor and
BLUR_CONFIDENCE. The cases' strengths are drawn per index: pick indices no change was looked at on.
Run: .venv/bin/python bench/kernel_readings.py --saved-as-jpeg 95 --first-case 8 --cases 4
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import defects  # noqa: E402
from photoagent_generalise import OTHER_CLEAN, _photo  # noqa: E402
from photoset import EVALUATION  # noqa: E402

from edit_agents.agents.quality.metrics import texture_crops  # noqa: E402
from edit_agents.agents.quality.kernel import BLUR_CONFIDENCE, POOLED_CONFIDENCE, estimate_kernel  # noqa: E402

BLUR = {name for name, f in {**defects.FAMILIES, **defects.HELD_OUT}.items() if f.group == "blur"}


def true_line(label: str) -> tuple[float, float] | None:
    m = re.search(r"motion\(length=([\d.]+), angle=([\d.]+)\)", label)
    return (float(m.group(1)), float(m.group(2))) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--saved-as-jpeg", type=int, default=0, help="quality (0: not saved)")
    ap.add_argument("--saved-as-png", action="store_true")
    ap.add_argument("--first-case", type=int, default=8)
    ap.add_argument("--cases", type=int, default=4)
    a = ap.parse_args()
    fmt = f"JPEG {a.saved_as_jpeg}" if a.saved_as_jpeg else "PNG" if a.saved_as_png else "float arrays"
    print(f"pooled kernels most crops agree on, {fmt}, cases {a.first_case}-{a.first_case + a.cases - 1} of every "
          f"family on {len(EVALUATION)} photos, and {len(EVALUATION) + len(OTHER_CLEAN)} clean photos")
    outside, faint, n = 0, 0, 0
    families = list(defects.FAMILIES) + list(defects.HELD_OUT) + ["clean"]
    for family in families:
        photos = list(EVALUATION) + (list(OTHER_CLEAN) if family == "clean" else [])
        for photo in photos:
            clean = _photo(photo, 512)
            for i in (0,) if family == "clean" else range(a.first_case, a.first_case + a.cases):
                bad, case = defects.make(clean, photo, family, i)
                x = np.array(bad, np.float32)
                x = (defects.save_as_jpeg(x, a.saved_as_jpeg) if a.saved_as_jpeg
                     else defects.save_as_png(x) if a.saved_as_png else x)
                k = estimate_kernel(texture_crops(x))
                n += 1
                if not (k and k.get("pooled")):
                    continue
                outside += family not in BLUR
                faint += family in BLUR and POOLED_CONFIDENCE <= k["confidence"] < BLUR_CONFIDENCE
                line, verdict = true_line(case.label()), ""
                if line and k["kind"] == "motion":
                    right = (abs(k["length"] - line[0]) <= 0.15 * line[0]
                             and abs((k["angle"] - line[1] + 90) % 180 - 90) <= 8)
                    verdict = "  (its true length and angle)" if right else "  (not its length and angle)"
                size = (f"{k['length']:.1f} px at {k['angle']:.0f}" if k["kind"] == "motion"
                        else f"radius {k['radius']:.1f}" if k["kind"] == "defocus" else f"sigma {k['sigma']:.2f}")
                print(f"  {family:<22} {photo:<18} {i:>2} {k['kind']:<8} {k['confidence']:.2f} {size}{verdict}  "
                      f"[{case.label()}]")
    print(f"{n} photos read; pooled readings outside the blur families: {outside}; blur families' between "
          f"{POOLED_CONFIDENCE} and {BLUR_CONFIDENCE}: {faint}")


if __name__ == "__main__":
    main()
