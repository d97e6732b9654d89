"""Low contrast: lifted blacks over a compressed span (a wash, a fade, a flat profile); and the black points and full
range that this defect, under-exposure, over-exposure and the veil propose."""
from __future__ import annotations

from typing import Iterable

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at

LIFTED_BLACK = 0.15  # the darkest 0.5% are at least this bright ...
COMPRESSED_RANGE = 0.7  # ... and the tones span less than this: a washed-out, low-contrast photo
# ... and, in a colour photo, its darkest patches reach more than this share of the whites in their darkest channel
# (the veil's reading): a fade, a contrast cut, a lift or glare raises every channel (the defect space's low-contrast
# cases read 0.06 and up, but over-exposure's, whose own finding answers it); where one channel still reaches black,
# the darkest things are strong colours (a blue sky, a green lawn) and the picture's pale tones are its style
FADED_FLOOR = 0.02
# No proposal more than doubles the tonal span in one edit: some photos are flat by nature (fog, the
# moon's surface), and a flat photo made less flat is safe where one stretched to the full range is not.
MAX_STRETCH = 2.0


def full_range(span: float, clips: Iterable[float], why: str) -> list[ToolCall]:
    """Auto levels (the tonal span mapped to 0..1), only where that is at most MAX_STRETCH times the span."""
    return _at("auto_levels", "clip_percent", clips, why) if stretchable(span) else []


def stretchable(span: float) -> bool:
    """A tonal span that mapping to the full range at most doubles (MAX_STRETCH); a narrower one is a scene's own."""
    return span * MAX_STRETCH >= 1.0


def black_levels(level: float) -> list[float]:
    """Black points most of the way down to a floor the blacks were lifted to: 0.8 of it, and 0.02 under it."""
    return sorted({round(level * 0.8, 3), round(level - 0.02, 3)})


def black_point(span: float, black: float, why: str) -> list[ToolCall]:
    """The blacks taken down to black (levels), the whites left where they are: only where the tonal span is
    stretchable, as for auto levels (a span narrower than that is a scene's own: a clock face, a brick wall)."""
    return _at("levels", "black", black_levels(black), why) if stretchable(span) else []


def low_contrast(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """Lifted blacks over a short span, unless a colour photo's darkest patches still reach black in a channel."""
    stats = seen.stats
    white, black = stats["white_level"], stats["black_level"]
    span = white - black
    lifted = black > LIFTED_BLACK and (span < COMPRESSED_RANGE or white > 0.97)
    # both the photo as it came and this state: a dehaze the search tried takes the floor down, and a desaturation
    # tried on a fade whose colours were pushed to black brings the floor back up
    dark_floor = max(stats.get("photo_veil", 0.0), stats.get("veil", 1.0))
    full_colour = not stats.get("is_gray") and dark_floor <= FADED_FLOOR
    flat = lifted and not full_colour
    why = (f"tones span {black:.2f}..{white:.2f} (a defect when the blacks pass {LIFTED_BLACK} and the span is under "
           f"{COMPRESSED_RANGE} or the whites are at the top)"
           + (f"; but the darkest patches reach black in a channel ({dark_floor:.3f} of the whites, limit "
              f"{FADED_FLOOR}): strong colours, not a fade" if lifted and full_colour else ""))
    calls = []
    if flat:
        gain = min(MAX_STRETCH, 0.9 / max(span, 0.1)) - 1
        came = min(span, stats.get("photo_span", span))  # the photo as it came decides, not an edit the search tried
        calls = (black_point(came, black, why) + _at("contrast", "amount", sorted({round(gain * 0.5, 3), round(gain, 3)}), why)
                 + (_at("gamma", "gamma", (0.8,), why) if stats["mean_luma"] > 0.45 else []))
        if not stretchable(came):
            why += f"; no black point: the photo came with a span of {came:.2f}, under half the range (the scene's own)"
    return Finding("low contrast", black, LIFTED_BLACK, flat, why), calls


LOW_CONTRAST = Defect("low contrast", ("white_level", "black_level", "veil", "mean_luma"), low_contrast)
