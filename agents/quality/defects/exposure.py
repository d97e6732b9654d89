"""Under-exposure (nothing in the photo is bright) and over-exposure (highlights blown with lifted blacks or a
bright mean): findings on the raw tone statistics, sRGB values 0..1, deliberately wide of what good photos show."""
from __future__ import annotations

import math

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at
from .tones import full_range

UNDER_WHITE = 0.5  # the brightest 0.5% of pixels stay below this: nothing in the photo is bright
NIGHT_UNDER_WHITE = 0.45  # the same, for a night or low-key scene, whose highlights may be small
# ... while the brightest colours' brightest channel (channel_white) stays below this too: a saturated red at full red
# reads dim in luminance (0.21 of it) but is bright. Darkened photos of the defect space read at most 0.60 there.
UNDER_CHANNEL = 0.75
# ... and where an under-exposed photo's whites are taken: the middle of where clean photos' whites sit (0.62 to 1.0
# over the project's 18 clean photos, median 0.87; half of them at 0.80 or below: the moon, chelsea, the deep field).
# The top of that range (0.95, until 2026-11-28) overshot every photo whose whites are dim by nature, by up to half.
EXPOSED_WHITE = 0.85
OVER_CLIPPED = 0.03  # this share of pixels blown to white ...
OVER_BLACK = 0.08  # ... with the blacks lifted past this, or
# ... the mean above this: over-exposure. Clean photos blow at most 0.7% of their pixels, so the clipped share is
# the evidence; the mean keeps out a lamp or window blown in a dark scene and an S-curve's clipped whites
# (chosen on the clipped-highlights and s-curve families, measured on over-gain-linear: docs/notes/2026-11-generalisation/)
OVER_MEAN = 0.55


def under_exposure(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """Whites under the scene's limit, in this state and in the photo as it came, unless its brightest colours are
    bright in their own channel: an exposure up, full range and a gamma."""
    stats, scene = seen.stats, seen.scene
    white, black = stats["white_level"], stats["black_level"]
    dim_scene = scene in ("night", "low-key")
    limit = NIGHT_UNDER_WHITE if dim_scene else UNDER_WHITE
    # in the search, under-exposure is read on the photo as it came as well: an edit of the search's own that darkened
    # it (a gamma, an exposure down) must not make it under-exposed, or the search darkens to brighten
    came = stats.get("photo_white_level", white)
    brightest = max(stats.get("channel_white", 0.0), stats.get("photo_channel_white", 0.0))
    dim = max(white, came) < limit
    under = dim and brightest < UNDER_CHANNEL
    why = (f"brightest tones reach {white:.2f}{f' ({came:.2f} in the photo as it came)' if came > white else ''} (limit "
           f"{limit}{' for a ' + scene + ' scene' if dim_scene else ''})"
           + (f"; but its brightest colours reach {brightest:.2f} in a channel (limit {UNDER_CHANNEL}): bright in "
              "their own colour" if dim and not under else ""))
    calls = []
    span = white - black
    if under:
        stops = math.log2(EXPOSED_WHITE / max(white, 0.05))
        calls = (_at("exposure", "stops", (stops * 0.6, stops), why) + full_range(span, (0.3,), why)
                 + _at("gamma", "gamma", (1 + 0.5 * stops,), why))
    return Finding("under-exposure", white, limit, under, why), calls


def over_exposure(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """A share of pixels blown with lifted blacks or a bright mean (not a high-key scene's few): a gamma down, full
    range, the highlights recovered, an exposure down."""
    stats, scene = seen.stats, seen.scene
    white, black = stats["white_level"], stats["black_level"]
    span = white - black
    over = stats["clip_bright"] > OVER_CLIPPED and (black > OVER_BLACK or stats["mean_luma"] > OVER_MEAN) and not (scene == "high-key" and stats["clip_bright"] < 0.1)
    why = (f"{stats['clip_bright']:.1%} of pixels blown (limit {OVER_CLIPPED:.0%}), blacks at {black:.2f} (limit "
           f"{OVER_BLACK}), mean {stats['mean_luma']:.2f} (limit {OVER_MEAN})")
    calls = []
    if over:
        calls = (_at("gamma", "gamma", (0.8, 0.65), why) + full_range(span, (0.3,), why)
                 + _at("highlights_shadows", "highlights", (0.5,), why, shadows=0.0)
                 + _at("exposure", "stops", (-0.4,), why))
    return Finding("over-exposure", stats["clip_bright"], OVER_CLIPPED, over, why), calls


UNDER_EXPOSURE = Defect("under-exposure", ("white_level", "black_level", "channel_white"), under_exposure)
OVER_EXPOSURE = Defect("over-exposure", ("clip_bright", "black_level", "mean_luma", "white_level"), over_exposure)
