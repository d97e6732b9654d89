"""A colour cast: the light's colour on the whole photo, where grey surfaces are no longer grey."""
from __future__ import annotations

import math
from typing import Mapping

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at

CAST_LIMIT = {"cool": 0.06, "warm": 0.2, "tint": 0.12}  # confident cast beyond which grays are not gray
# ... and up to which it can be the camera's: a tungsten lamp photographed under a daylight balance, about the largest
# white-balance error there is, reads 0.64-0.74 on the project's photos (and the defect space's casts at most 0.37).
# A cast past this is the picture's own colour: a fire, a sunset, a red- or blue-lit scene, a monochrome tint.
SCENE_CAST = 1.0
# A cast is green where log(R/G) and log(B/G) are both negative, the smaller in size at least this share of the larger
GREEN_SECTOR = math.tan(math.radians(22.5))
# ... unless at least this share of the midtones is still neutral, and more of them than sit at the cast's colour
# (metrics: neutral_share, cast_share). A round figure, not fitted: on the project's clean photos 0-55%, on the defect
# space's colour casts at most 3.3%.
NEUTRAL_AREA = 0.05
# A cool cast or a tint is taken all the way to neutral only where at least this share of the midtones sits at the
# cast's colour: a photo grey under the light (every surface takes its colour), where neutral is the scene's own. A
# colourful scene may lean cool or warm by nature (the deep field's nebulae, a dusk sky), and full strength then
# overshoots it. On the defect space's tuned families the casts of photos grey under the light read 0.29-0.99, those
# of colourful photos 0-0.015; a round figure between them.
FULL_CAST_SHARE = 0.25


def cast_direction(stats: Mapping[str, float]) -> str:
    """"warm", "cool" or "tint" (green-magenta), from the illuminant's log(R/G) and log(B/G)."""
    red, blue = stats.get("cast_red", 0.0), stats.get("cast_blue", 0.0)
    if red < 0 and blue < 0 and max(red, blue) <= GREEN_SECTOR * min(red, blue):
        # red and blue both well below green: a green light, the nearest of eight hues (within 22.5 degrees of
        # red = blue). It was read as warm or cool by whichever of the two was lower before 2026-11-28, so a green
        # tint met the warm limit (0.2) or the cool one (0.06). A yellow light (red near green, blue below) stays warm,
        # as tungsten and sodium light are; no clean photo of the project reads green
        return "tint"
    if red > 0 > blue or (red > 0 and red > abs(blue)) or (blue < 0 and -blue > abs(red)):
        return "warm"
    if red < 0 < blue or (red < 0 and -red > abs(blue)) or (blue > 0 and blue > abs(red)):
        return "cool"
    return "tint"


def colour_cast(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """A confident cast past its direction's limit and short of a scene's own colour, with no grey kept grey:
    white balance, part of the way where it is warm or the scene colourful."""
    stats, scene = seen.stats, seen.scene
    direction = cast_direction(stats)
    limit = CAST_LIMIT[direction]
    cast = stats["colour_cast"]
    neutral, at_cast = stats.get("neutral_share", 0.0), stats.get("cast_share", 0.0)
    # under a cast of the light no grey surface stays grey: grey areas that did are the evidence that the estimate
    # was pulled by the colour of the things in the photo (orange fruit on a grey table)
    grey_kept = neutral >= NEUTRAL_AREA and neutral > at_cast
    found = limit < cast <= SCENE_CAST and not grey_kept
    why = (f"{direction} cast {cast:.3f} (estimators agree {stats['cast_confidence']:.0%}; limit {limit} for a "
           f"{direction} cast{', the scene is lit warm on purpose' if scene == 'warm light' and not found else ''})"
           + (f"; but {neutral:.0%} of the midtones are still neutral grey (against {at_cast:.0%} at the cast): the "
              f"light is not coloured, the things in the photo are" if cast > limit and grey_kept else "")
           + (f"; but past {SCENE_CAST}, more than any white balance gets wrong (a tungsten lamp under a daylight "
              "balance reads about 0.7): the picture's own colour" if cast > SCENE_CAST else ""))
    calls = []
    if found:
        # keep a trace of the cast when it is warm: light can be warm on purpose
        if direction == "warm":  # never all the way to neutral: the light may be warm on purpose
            keep = CAST_LIMIT[direction] * 0.5 / cast
            strengths = (round(1 - keep, 2), round(0.75 * (1 - keep), 2))
        elif at_cast >= FULL_CAST_SHARE:  # a photo grey under the light: all the way to neutral
            strengths = (0.6, 0.85, 1.0)
        else:
            strengths = (0.6, 0.85)
            why += (f"; not all the way to neutral: only {at_cast:.0%} of the midtones sit at the cast (under "
                    f"{FULL_CAST_SHARE:.0%}: a colourful scene, which may lean {direction} by nature)")
        calls = _at("white_balance", "strength", strengths, why)
    return Finding("colour cast", cast, limit, found, why), calls


COLOUR_CAST = Defect("colour cast", ("colour_cast", "cast_red", "cast_blue", "cast_confidence", "neutral_share",
                                     "cast_share"), colour_cast, colour_only=True)
