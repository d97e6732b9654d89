"""What the perceiver's texture readings and the reward's BRISQUE see once a photo is saved as a JPEG.

The defect space's rows saved at quality 85 are fixed far less often than the same rows lossless (noise 62%
against 93%, chroma noise 0 of 16 against 16 of 16; bench/results/photoagent_generalise_jpeg.txt), and a clean
photo saved as JPEG is edited (the clock; the retina is edited lossless too). This prints, for the clean photos
and for the noise families and the families that add colour or contrast by other means, lossless and at
qualities 95 and 85:
- the readings the perceiver's noise findings gate on (texture_statistics: ``noise_sigma``, ``chroma_noise``,
  ``chroma_blotches``), each family's least, median and greatest over its cases;
- the same colour blotches read only where the luminance is flattest (half of the 5x5-block windows), a variant
  that would leave content colour out (not in the pack: measured here only);
- BRISQUE of every clean photo (the reward's component falls from 1 at BRISQUE 33 to 0 at 52).
Nothing here is fitted; a limit that separates the columns would have to hold on every row.

    python bench/jpeg_readings.py   # about 1.5 minutes on 2 cores
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

from edit_agents.agents.metrics import (BLOTCH_LIMIT, BLOTCH_WINDOW, CHROMA_NOISE_LIMIT, colour_spread,  # noqa: E402
                                        raw_statistics, texture_crops)

CLEAN = CALIBRATION + EVALUATION + ("retina",)
NOISE = ("gaussian-noise", "poisson-gaussian", "chroma-noise", "correlated-noise", "coarse-chroma")
# families whose colour or contrast the blotch limit was set above (metrics.BLOTCH_LIMIT's comment)
CONTENT = ("over-saturated", "s-curve", "clipped-highlights", "chromatic-aberration", "temperature")
QUALITIES = (0, 95, 85)
READINGS = ("noise_sigma", "chroma_noise", "chroma_blotches", "flat_blotches")


def flat_blotches(crop: np.ndarray, share: float = 0.5) -> float:
    """metrics._chroma_blotches read only in the ``share`` of its windows whose luminance varies least."""
    spread = colour_spread(crop)
    if spread is None:
        return 0.0
    minor, lum = spread
    window = BLOTCH_WINDOW
    cut = (slice(window // 2, lum.shape[0] - window // 2), slice(window // 2, lum.shape[1] - window // 2))
    lum_var = (ndimage.uniform_filter(lum * lum, window) - ndimage.uniform_filter(lum, window) ** 2)[cut]
    flat = lum_var <= np.quantile(lum_var, share)
    return float(np.sqrt(max(float(np.median(minor[flat])), 0.0)))


def readings(img: np.ndarray, brisque: bool = False) -> dict[str, float]:
    raw = raw_statistics(img, iqa=("brisque",) if brisque else ())
    raw["flat_blotches"] = float(np.median([flat_blotches(c) for c in texture_crops(img)]))
    return raw


def saved(img: np.ndarray, quality: int) -> np.ndarray:
    return defects.save_as_jpeg(img, quality) if quality else img


def main() -> None:
    rows: dict[tuple[str, int], list[dict[str, float]]] = {}
    brisque: dict[str, list[float]] = {}
    for photo in CLEAN:
        clean = load(photo, 512)
        for q in QUALITIES:
            r = readings(saved(clean, q), brisque=True)
            rows.setdefault(("clean", q), []).append(r)
            brisque.setdefault(photo, []).append(r["brisque"])
            for family in NOISE + CONTENT:
                for index in (0, 1):
                    bad = np.asarray(defects.make(clean, photo, family, index)[0], np.float32)
                    rows.setdefault((family, q), []).append(readings(saved(bad, q)))
    print(f"{len(CLEAN)} clean photos at 512 px, 2 cases a photo and family; limits: chroma_noise "
          f"{CHROMA_NOISE_LIMIT}, chroma_blotches {BLOTCH_LIMIT}")
    print("family                 q    " + "  ".join(f"{k + ' (min med max)':>26s}" for k in READINGS))
    for family in ("clean",) + NOISE + CONTENT:
        for q in QUALITIES:
            cells = []
            for k in READINGS:
                v = np.array([r[k] for r in rows[(family, q)]])
                cells.append(f"{v.min():8.4f} {np.median(v):8.4f} {v.max():8.4f}")
            print(f"{family:22s} {q or 'raw':>3}   " + "  ".join(cells))
    print("\nBRISQUE of the clean photos (raw, q95, q85):")
    for photo, values in brisque.items():
        print(f"  {photo:22s} " + " ".join(f"{v:6.1f}" for v in values))


if __name__ == "__main__":
    main()
