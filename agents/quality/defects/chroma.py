"""Colour noise: red minus blue varying from pixel to pixel, at native resolution."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, _at

# Colour noise (texture_statistics' chroma_noise, red minus blue, the larger of two scales: metrics._chroma_noise): at
# most 0.0078 on the project's clean photos, 0.024 on over-processed ones, 0.03-0.11 under the defect space's noise.
# Never intent, unlike grain.
CHROMA_NOISE_LIMIT = 0.025
PENALTY = Penalty("chroma", "chroma_noise", 1.0, CHROMA_NOISE_LIMIT, "colour noise")


def colour_noise(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """Colour noise past CHROMA_NOISE_LIMIT: chroma_denoise over a small radius."""
    chroma = seen.stats["chroma_noise"]
    speckled = chroma > CHROMA_NOISE_LIMIT
    why = f"colour noise sigma {chroma:.4f} (red minus blue, at native resolution; limit {CHROMA_NOISE_LIMIT})"
    return (Finding("colour noise", chroma, CHROMA_NOISE_LIMIT, speckled, why),
            _at("chroma_denoise", "strength", (0.6, 1.0), why, radius=3.0) if speckled else [])


# NOTE (issue 68): sets "speckled" instead of adding to it, dropping impulse noise's flag (a known bug, kept as it was)
COLOUR_NOISE = Defect("colour noise", ("chroma_noise",), colour_noise, PENALTY, needs=("noise_sigma", "chroma_noise"),
                      colour_only=True, raises="speckled", overwrites=True)
