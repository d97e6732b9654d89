"""A veil: a fade, haze or lifted blacks over the whole photo, read as the dark channel's floor over the whites."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, _at
from .tones import black_levels

# The dark channel prior (He, Sun and Tang, 2009): in a photo of a scene, almost every patch (15 px in their paper,
# here on the <=256 px copy) has some pixel near black in some channel. A veil laid over the whole photo (fading,
# haze, lifted blacks) lifts every patch's darkest value. The veil statistic is the 1st percentile of the dark
# channel as a fraction of the white level, so an exposure change (a gain) leaves it where it is and only an
# offset moves it. It is 0.00-0.078 on the project's clean scene photos (scikit-image's, tests/data/iqa; the flat
# close-up textures clock and brick and a page of text read 0.13-0.48): VEIL_LIMIT leaves a margin above them.
# In a black-and-white photo only shadows and dark objects keep the floor down (no colourful ones), and those
# pale close-ups are all black-and-white: there the veil is not used.
VEIL_LIMIT = 0.09
PENALTY = Penalty("veil", "veil", 1.0, VEIL_LIMIT, "veil", colour_only=True)


def veil(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's own verdict on the veil: dehaze, then a black point near the floor (and a gamma where the
    midtones were lifted with it)."""
    stats = seen.stats
    white = stats["white_level"]
    veil = stats.get("veil", 0.0)
    gray = bool(stats.get("is_gray"))
    veiled = PENALTY.excess(stats) > 0  # the reward's own verdict: never in a black-and-white photo
    floor = veil * white
    why = (f"the darkest patches reach only {floor:.3f} in their darkest channel, {veil:.3f} of the whites (the dark "
           f"channel's floor; limit {VEIL_LIMIT}: a fade, haze or lifted blacks over the whole photo)"
           + ("; not read in a black-and-white photo, whose floor may be pale by nature" if gray else ""))
    calls = []
    if veiled:
        # a clean scene's floor is 0-0.078 of its whites, so a floor this high hides a black point near it: pull
        # it most of the way. The white point stays: clean photos' whites sit anywhere from 0.6 to 1.
        # First the veil taken out in linear light, where haze, a lens's glare and a fade in the light lay it
        # (tools/restore.dehaze: it keeps the midtones in their place); then a black point in display values, where a
        # print's or an edit's fade lays it.
        points = black_levels(floor)
        calls = _at("dehaze", "strength", (1.0,), why) + _at("levels", "black", points, why)
        if stats["mean_luma"] > 0.5:  # midtones lifted with the blacks: darken them as well
            calls += _at("levels", "black", points[-1:], why, gamma=0.8)
        calls += _at("dehaze", "strength", (0.6,), why)
    return Finding("veil", veil, VEIL_LIMIT, veiled, why), calls


VEIL = Defect("veil", ("veil", "white_level", "mean_luma"), veil, PENALTY)
