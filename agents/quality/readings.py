"""The raw readings the metrics compute, declared once: their names, where each is read (the small copy, the
native-resolution crops, or the crops side by side) and what it measures.

The defects' registry checks what each defect and penalty reads against it and takes from it where a penalty's
reading is made; docs/photoagent.md's table of readings is this table (a test keeps them equal).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...tools.restore import IMPULSE_MARGIN
from ...tools.restore.haze import DARK_PATCH
from .metrics import BLOTCH_BLOCK, BLOTCH_FLAT_SHARE, COARSE_CHROMA_WEIGHT, EDGE_CONTRAST, EDGE_SHARE, EDGE_WINDOW, \
    GAMUT_CHROMA

Where = Literal["copy", "crops", "mosaic"]


@dataclass(frozen=True)
class Reading:
    """Readings made together: their names, where (``copy``: global_statistics on a <=256 px copy; ``crops``:
    texture_statistics; ``mosaic``: the no-reference scores) and what they measure."""

    names: tuple[str, ...]
    where: Where
    measures: str
    group: str = ""  # how the docs' table names them, where not every name is shown ("`a`, `b`; `c`")

    def row(self) -> str:
        """The docs' table row."""
        names = self.group or ", ".join(f"`{n}`" for n in self.names)
        return f"| {names} | {self.measures} | {self.where} |"


READINGS: tuple[Reading, ...] = (
    Reading(("white_level", "black_level", "channel_white"), "copy", "99.5th and 0.5th percentile of luminance; "
            "99.5th of each pixel's brightest channel", "`white_level`, `black_level`; `channel_white`"),
    Reading(("mean_luma", "rms_contrast"), "copy", "mean and standard deviation of luminance"),
    # the signs as escapes: a source file a pack ships must encode in cp1252 (comfy-test's lint), which has neither
    Reading(("clip_bright", "clip_dark"), "copy", "share of pixels at luminance \u2265 0.99 and \u2264 0.01"),
    Reading(("veil",), "copy", f"the dark channel's 1st percentile ({DARK_PATCH} px patches, `DARK_PATCH`) over the "
            "white level"),
    Reading(("colourfulness",), "copy", "Hasler and Süsstrunk's spread term (no mean term: a cast is not colour)"),
    Reading(("gamut_clip",), "copy", f"share of colourful pixels (channels `GAMUT_CHROMA` = {GAMUT_CHROMA} apart) with "
            "their weakest channel at 0"),
    Reading(("colour_cast", "cast_red", "cast_blue", "cast_confidence", "neutral_share", "cast_share"), "copy",
            "the illuminant (median of white patch, shades of grey, grey edge) × how far the three agree; the shares "
            "of midtones still neutral and at the cast's colour", "`colour_cast`; `neutral_share`, `cast_share`"),
    Reading(("fringes",), "copy", "red's or blue's magnification apart from green, % of the half-diagonal (lateral "
            "aberration)"),
    Reading(("is_gray",), "copy", "the channels differ by less than 0.004 on average: a black-and-white photo"),
    Reading(("noise_sigma",), "crops", "Immerkær's estimate on the flattest half of each crop, median of the crops"),
    Reading(("chroma_noise",), "crops", "noise of red minus blue: the larger of the pixels' reading and "
            f"`COARSE_CHROMA_WEIGHT` = {COARSE_CHROMA_WEIGHT} × that of 2×2 blocks"),
    Reading(("chroma_blotches",), "crops", f"colour spread two ways at once over {BLOTCH_BLOCK}×{BLOTCH_BLOCK} blocks, "
            f"in the flattest half (`BLOTCH_FLAT_SHARE` = {BLOTCH_FLAT_SHARE})"),
    Reading(("level_step",), "crops", "the typical step, in 8-bit levels, between the values the green channel uses"),
    Reading(("impulses",), "crops", f"share of pixels past all eight neighbours by `IMPULSE_MARGIN` = {IMPULSE_MARGIN}"),
    Reading(("banding",), "crops", "standard deviation of the offsets whole rows show alike in two crops"),
    Reading(("sharpness",), "crops", "standard deviation of the Laplacian over that of luminance (+ 0.02)"),
    Reading(("edge_width",), "crops", f"px the strongest edges take to rise: the range over `EDGE_WINDOW` = "
            f"{EDGE_WINDOW} px over the gradient, median over the steepest {EDGE_SHARE:.0%} with a range of at least "
            f"{EDGE_CONTRAST} (read only under `EDGES_UNDER` sharpness)"),
    Reading(("blockiness", "grid_step"), "crops", "steps across the 8×8 grid over those inside it, and their excess"),
    Reading(("brisque", "niqe"), "mosaic", "no-reference quality (lower is better)"),
)
# each reading's place: where a penalty on it is read (defects.TEXTURE_PENALTIES) and what a defect may read
READ_WHERE: dict[str, Where] = {name: r.where for r in READINGS for name in r.names}
