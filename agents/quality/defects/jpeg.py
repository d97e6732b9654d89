"""JPEG blocks: the 8x8 grid of a heavy compression, stepping across the block edges."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, _at

BLOCKY = 1.3  # typical step across the JPEG 8x8 grid over those inside it: 1.04-1.16 on clean photos, 1.8-3.5 at quality 6-25
GRID_STEP = 1.8  # ... and the grid steps this many levels of 255 more than inside the blocks: 0.2-0.8 on clean
# photos, 1.5 on scikit-image's moon (a JPEG whose flat surface shows faint blocks), 1.5-6.5 at quality 6-25
CLEAN_GRID_STEP = 1.0  # tools/restore.grid_step of clean photos, in levels of 255: 0.2-0.8 (1.5 on a JPEG moon)
PENALTY = Penalty("compression", "grid_step", 255.0, CLEAN_GRID_STEP, "JPEG grid step in levels")


def jpeg_blocks(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """A grid past BLOCKY that steps more than GRID_STEP levels beyond the blocks' insides: deblock."""
    stats = seen.stats
    blocks, step = stats.get("blockiness", 1.0), stats.get("grid_step", 0.0) * 255
    blocky = blocks > BLOCKY and step > GRID_STEP
    why = (f"JPEG grid {blocks:.2f} (steps across 8x8 block edges over steps inside; limit {BLOCKY}), "
           f"{step:.1f} levels of 255 beyond them (limit {GRID_STEP})")
    return (Finding("JPEG blocks", blocks, BLOCKY, blocky, why),
            _at("deblock", "strength", (0.5, 0.8, 1.0), why) if blocky else [])


# sharpening compression blocks makes them worse (blur.py)
JPEG_BLOCKS = Defect("JPEG blocks", ("blockiness", "grid_step"), jpeg_blocks, PENALTY, needs=("noise_sigma",),
                     raises="blocky")
