"""Noise: the luminance's noise at native resolution."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at

NOISE_SIGMA = 0.012  # noise standard deviation at native resolution


def noise(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """Noise past NOISE_SIGMA, not counted while the rows are banded (``seen.held``): denoise, as strong as the
    noise."""
    sigma = seen.stats["noise_sigma"]
    banded = seen.held
    # banding reads as noise too: it is taken out first, and the noise read again on the photo without it
    noisy = sigma > NOISE_SIGMA and not banded
    why = (f"noise sigma {sigma:.4f} at native resolution (limit {NOISE_SIGMA})"
           + ("; not counted while the rows are banded, which it includes" if banded and sigma > NOISE_SIGMA else ""))
    strength = min(1.0, sigma / 0.04)
    calls = _at("denoise", "strength", sorted({round(max(0.2, strength * 0.6), 2), round(strength, 2), 1.0}), why) if noisy else []
    return Finding("noise", sigma, NOISE_SIGMA, noisy, why), calls


# a sharpen or a deconvolution makes noise worse: no blur is taken out of a noisy photo (blur.py)
NOISE = Defect("noise", ("noise_sigma",), noise, needs=("noise_sigma",), held_back_by=("banded",), raises="noisy")
