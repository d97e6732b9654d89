"""Colour blotches: colour noise coarser than a pixel or two, which a phone's noise reduction or a smoothed raw leaves."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, penalised

# Colour blotches (texture_statistics' chroma_blotches: colour noise coarser than a pixel or two, which a phone's noise
# reduction or a smoothed raw leaves; metrics._chroma_blotches): read over every window until 2026-12-02, at most 0.0082
# on the project's clean photos and 0.0163 on every family of the defect space but the noise families (an S-curve on
# chelsea; clipped highlights, chromatic aberration and over-saturation 0.0155-0.0158), the limit set just above them
# from the clean and the other families, not from the blotched ones; the coarse-chroma family (colour noise of sigma
# 0.02-0.06 on a 3-8 px grid) read 0.0156-0.047. Read in the flattest half of the windows since, as a picture's own
# colours meet at its edges: at most 0.0063 on the clean photos and 0.0127 on the other families, coarse-chroma
# 0.0157-0.045; the limit kept. Never intent.
BLOTCH_LIMIT = 0.017
PENALTY = Penalty("blotches", "chroma_blotches", 1.0, BLOTCH_LIMIT, "colour blotches")


def colour_blotches(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's verdict on the blotches: chroma_denoise over a wider radius."""
    # colour noise coarser than a pixel or two hardly shows at the pixels: read on 4x4 blocks, and smoothed
    # over a wider radius
    why = (f"colour spread two ways at once over 4x4 blocks where the tones are flattest, sigma "
           f"{seen.stats.get('chroma_blotches', 0.0):.4f} (limit {BLOTCH_LIMIT}: colour blotches, which a photo's "
           "own colours, lying along one line in each small neighbourhood, do not make)")
    return penalised(seen, PENALTY, "colour blotches", BLOTCH_LIMIT, why, "chroma_denoise", "radius", (5.0, 8.0),
                     strength=1.0)


# a deconvolution or a sharpen would make blotches worse too (blur.py)
COLOUR_BLOTCHES = Defect("colour blotches", ("chroma_blotches",), colour_blotches, PENALTY,
                         needs=("noise_sigma", "chroma_noise"), colour_only=True, raises="speckled")
