"""What the perceiver's texture readings and the reward's BRISQUE see once a photo is saved as a JPEG.

The defect space's rows saved at quality 85 are fixed far less often than the same rows lossless (noise 62%
against 93%, chroma noise 0 of 16 against 16 of 16; bench/results/photoagent_generalise_jpeg.txt), and two clean
photos saved as JPEG are edited (the clock, the retina). This prints, for the clean photos and for the noise
families and the families that add colour or contrast by other means, lossless and at qualities 95 and 85:
- the readings the perceiver's noise findings gate on (texture_statistics: ``noise_sigma``, ``chroma_noise``,
  ``chroma_blotches``), each family's least, median and greatest over its cases;
- the same colour blotches read only where the luminance is flattest (half of the 5x5-block windows), a variant
  that would leave content colour out (not in the pack: measured here only);
- BRISQUE of every clean photo (the reward's component falls from 1 at BRISQUE 33 to 0 at 52).
Nothing here is fitted; a limit that separates the columns would have to hold on every row.

    python bench/jpeg_readings.py   # about 4 minutes
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

from edit_agents.agents.metrics import BLOTCH_LIMIT, CHROMA_NOISE_LIMIT, raw_statistics, texture_crops  # noqa: E402

CLEAN = CALIBRATION + EVALUATION + ("retina",)
NOISE = ("gaussian-noise", "poisson-gaussian", "chroma-noise", "correlated-noise", "coarse-chroma")
# families whose colour or contrast the blotch limit was set above (metrics.BLOTCH_LIMIT's comment)
CONTENT = ("over-saturated", "s-curve", "clipped-highlights", "chromatic-aberration", "temperature")
QUALITIES = (0, 95, 85)
READINGS = ("noise_sigma", "chroma_noise", "chroma_blotches", "flat_blotches")


def flat_blotches(crop: np.ndarray, block: int = 4, window: int = 5, share: float = 0.5) -> float:
    """metrics._chroma_blotches read only in the ``share`` of 5x5-block windows whose luminance varies least."""
    h, w = crop.shape[0] // block, crop.shape[1] // block
    if crop.ndim < 3 or crop.shape[2] < 3 or min(h, w) < window:
        return 0.0
    blocks = crop[:h * block, :w * block, :3].reshape(h, block, w, block, 3).mean(axis=(1, 3)).astype(np.float64)
    lum = blocks @ np.array([0.2126, 0.7152, 0.0722])
    u, v = blocks[..., 0] - lum, blocks[..., 2] - lum
    planes = (u, v, u * u, v * v, u * v, lum, lum * lum)
    mu, mv, uu, vv, uv, ml, ll = (ndimage.uniform_filter(x, window) for x in planes)
    cut = (slice(window // 2, h - window // 2), slice(window // 2, w - window // 2))
    a, c, cross = (uu - mu * mu)[cut], (vv - mv * mv)[cut], (uv - mu * mv)[cut]
    minor = (a + c) / 2 - np.sqrt(((a - c) / 2) ** 2 + cross ** 2)
    spread = (ll - ml * ml)[cut]
    return float(np.sqrt(max(float(np.median(minor[spread <= np.quantile(spread, share)])), 0.0)))


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
