"""Row banding: whole rows offset each on its own, a sensor's readout stripes."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, penalised

# Row banding (texture_statistics' banding: the standard deviation of offsets that whole rows show alike in two crops
# and each on its own; tools/restore.banding_sigma): at most 0.0013 on the project's clean
# photos and 0.0039 on every other family of the defect space (I06 over-contrasted by CLAHE). Never intent.
BANDING_LIMIT = 0.008
PENALTY = Penalty("banding", "banding", 1.0, BANDING_LIMIT, "row banding")


def banding(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's verdict on the banding: remove_banding."""
    why = (f"rows offset each on its own by {seen.stats.get('banding', 0.0):.4f}, alike in two places along them (limit "
           f"{BANDING_LIMIT}: a sensor's banding)")
    return penalised(seen, PENALTY, "banding", BANDING_LIMIT, why, "remove_banding", "strength", (1.0,))


# banding reads as noise too: the noise is not counted while the rows are banded (noise.py)
BANDING = Defect("banding", ("banding",), banding, PENALTY, needs=("noise_sigma",), raises="banded")
