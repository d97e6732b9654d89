"""What the perceiver's texture readings and the reward's BRISQUE see once a photo is saved as a JPEG.

The defect space's rows saved at quality 85 are fixed far less often than the same rows lossless (noise 62%
against 93%, chroma noise 0 of 16 against 16 of 16; bench/results/photoagent_generalise_jpeg.txt), and a clean
photo saved as JPEG is edited (the clock; the retina is edited lossless too). This prints, for the clean photos
and for the noise families and the families that add colour or contrast by other means, lossless and at
qualities 95 and 85:
- the readings the perceiver's noise findings gate on (texture_statistics: ``noise_sigma``, ``chroma_noise``,
  ``chroma_blotches``), each family's least, median and greatest over its cases;
- the same colour blotches read over every 5x5-block window (``every_window_blotches``), as the pack read them until
  2026-12-02 (since then it reads them in the half of the windows whose luminance is flattest, which leaves the
  corners where a picture's own colours meet out);
- BRISQUE of every clean photo (the reward's component falls from 1 at BRISQUE 33 to 0 at 52).
Nothing here is fitted; a limit that separates the columns would have to hold on every row.

    python bench/jpeg_readings.py   # about 1.5 minutes on 2 cores
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

from edit_agents.agents.quality.defects.blotches import BLOTCH_LIMIT  # noqa: E402
from edit_agents.agents.quality.defects.chroma import CHROMA_NOISE_LIMIT  # noqa: E402
from edit_agents.agents.quality.metrics import _chroma_blotches, raw_statistics, texture_crops  # noqa: E402

CLEAN = CALIBRATION + EVALUATION + ("retina",)
NOISE = ("gaussian-noise", "poisson-gaussian", "chroma-noise", "correlated-noise", "coarse-chroma")
# families whose colour or contrast the blotch limit was set above (defects/blotches.BLOTCH_LIMIT's comment)
CONTENT = ("over-saturated", "s-curve", "clipped-highlights", "chromatic-aberration", "temperature")
QUALITIES = (0, 95, 85)
READINGS = ("noise_sigma", "chroma_noise", "chroma_blotches", "every_window_blotches")


def every_window_blotches(crop: np.ndarray) -> float:
    """metrics._chroma_blotches read over all its windows, the flat and the edged alike."""
    return _chroma_blotches(crop, flat_share=1.0)


def readings(img: np.ndarray, brisque: bool = False) -> dict[str, float]:
    raw = raw_statistics(img, iqa=("brisque",) if brisque else ())
    raw["every_window_blotches"] = float(np.median([every_window_blotches(c) for c in texture_crops(img)]))
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
