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
# A cast shows on something that should be neutral: at least this share of the midtones sits at the light's colour
# (metrics: cast_share), surfaces that would be grey once balanced. Without them the photo's lean is the colour of its
# scene and its light (a sunset sky, golden-hour light, a blue sky: phones' photos of them read 0.1-1.9%, and are left
# as their photographer meant, as a photographer's auto-tone leaves white balance alone); photos with grey surfaces
# read 7-100% under a cast. The cost: a cast on a photo with nothing grey in it (a red-brown coffee table, the deep
# field) is not corrected either (docs/photoagent.md, "Colour").
GREYS_AT_CAST = 0.03
# ... for a lean a scene's light can leave in a phone's photo: its auto white balance keeps a low sun's warmth up to
# about 0.3 (the sunsets 0.28, the phone cases 0.15-0.27), while a tungsten lamp under a daylight balance reads
# 0.5-0.74. Past this a cast that strong pulls every colour toward the light's, so some surfaces sit at it even in a
# colourful photo (that lamp on the project's photos: 0.15-86%), and this share shows it; a flower filling the frame,
# whose estimate is its own colour, has none there (the phone cases' flowers: at most 0.07%)
SCENE_LIGHT, GREYS_PAST_LIGHT = 0.4, 0.005
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
    needed = GREYS_AT_CAST if cast <= SCENE_LIGHT else GREYS_PAST_LIGHT  # surfaces at the light's colour that show it
    shown = at_cast >= needed
    found = limit < cast <= SCENE_CAST and not grey_kept and shown
    why = (f"{direction} cast {cast:.3f} (estimators agree {stats['cast_confidence']:.0%}; limit {limit} for a "
           f"{direction} cast{', the scene is lit warm on purpose' if scene == 'warm light' and not found else ''})"
           + _held_back(cast, limit, neutral, at_cast, grey_kept, shown, needed))
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


def _held_back(cast: float, limit: float, neutral: float, at_cast: float, grey_kept: bool, shown: bool,
               needed: float) -> str:
    """Why a cast past its limit is not corrected: grey kept grey, past any white balance's error, or nothing that
    should be grey shows it (an empty string where none of these holds)."""
    parts = []
    if cast > limit and grey_kept:
        parts.append(f"; but {neutral:.0%} of the midtones are still neutral grey (against {at_cast:.0%} at the cast): "
                     "the light is not coloured, the things in the photo are")
    if cast > SCENE_CAST:
        parts.append(f"; but past {SCENE_CAST}, more than any white balance gets wrong (a tungsten lamp under a "
                     "daylight balance reads about 0.7): the picture's own colour")
    elif cast > limit and not grey_kept and not shown:
        parts.append(f"; but only {at_cast:.1%} of the midtones sit at the light's colour (under {needed:.1%}): "
                     "nothing that should be grey shows it, the colour is the scene's")
    return "".join(parts)


COLOUR_CAST = Defect("colour cast", ("colour_cast", "cast_red", "cast_blue", "cast_confidence", "neutral_share",
                                     "cast_share"), colour_cast, colour_only=True)
