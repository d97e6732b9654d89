"""Impulse noise: pixels standing alone past all eight neighbours (salt and pepper, dead pixels, dust)."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, penalised

# Impulse noise (texture_statistics' impulses: the share of pixels past all eight neighbours by 0.2 where those span
# less than 0.2, at native resolution; tools/restore.impulse_share): 0-0.034% on the project's clean photos (the deep
# field's stars the most), up to 0.12% on over-sharpened ones. Never intent.
IMPULSE_LIMIT = 0.0015
PENALTY = Penalty("impulses", "impulses", 100.0, 100.0 * IMPULSE_LIMIT, "isolated specks, % of pixels")


def impulse_noise(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's verdict on the specks: remove_impulses."""
    why = (f"{seen.stats.get('impulses', 0.0):.2%} of pixels stand alone, past all eight neighbours (limit "
           f"{IMPULSE_LIMIT:.2%}: salt and pepper, dead pixels or dust)")
    return penalised(seen, PENALTY, "impulse noise", IMPULSE_LIMIT, why, "remove_impulses", "threshold", (0.2, 0.35))


# specks are sharpened into spots: a blur is not taken out over them (blur.py)
IMPULSE_NOISE = Defect("impulse noise", ("impulses",), impulse_noise, PENALTY, needs=("noise_sigma",),
                       raises="speckled")
