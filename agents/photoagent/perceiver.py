"""PhotoAgent's perceivers: what a photo needs, and the atomic actions that would give it.

The rule perceiver (offline) reads the same statistics as the reward, guesses the scene
(black-and-white, night, low-key, high-key, warm light, general) and proposes actions only for
clear defects, each at a few strengths computed from the measurement. Intent is not a defect:
a dark night scene with its lights intact, or an indoor photo in warm light, gets no proposal.
Every check it made, with its value, threshold and verdict, goes in ``Perception.findings`` so
the trace says why an edit was or was not proposed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...tools.spec import ToolCallError, ToolRegistry
from .. import schemas
from ..brain import Brain, BrainError, BrainRequest, close_brains, run_blocking
from ..records import ToolCall
from ..quality.reward import excess
from ..quality.metrics import (BANDING_LIMIT, BLOTCH_LIMIT, CHROMA_NOISE_LIMIT, CLEAN_GRID_STEP, FRINGE_LIMIT, IMPULSE_LIMIT,
                       STEP_LIMIT, VEIL_LIMIT, image_statistics)
from ..roles import Where, ask, prompt
from ..trace import Trace

# Clear defects, on raw statistics (sRGB values 0..1): deliberately wide of what good photos show.
UNDER_WHITE = 0.5  # the brightest 0.5% of pixels stay below this: nothing in the photo is bright
NIGHT_UNDER_WHITE = 0.45  # the same, for a night or low-key scene, whose highlights may be small
# ... while the brightest colours' brightest channel (channel_white) stays below this too: a saturated red at full red
# reads dim in luminance (0.21 of it) but is bright. Darkened photos of the defect space read at most 0.60 there.
UNDER_CHANNEL = 0.75
# ... and where an under-exposed photo's whites are taken: the middle of where clean photos' whites sit (0.62 to 1.0
# over the project's 18 clean photos, median 0.87; half of them at 0.80 or below: the moon, chelsea, the deep field).
# The top of that range (0.95, until 2026-11-28) overshot every photo whose whites are dim by nature, by up to half.
EXPOSED_WHITE = 0.85
LIFTED_BLACK = 0.15  # the darkest 0.5% are at least this bright ...
COMPRESSED_RANGE = 0.7  # ... and the tones span less than this: a washed-out, low-contrast photo
# ... and, in a colour photo, its darkest patches reach more than this share of the whites in their darkest channel
# (the veil's reading): a fade, a contrast cut, a lift or glare raises every channel (the defect space's low-contrast
# cases read 0.06 and up, but over-exposure's, whose own finding answers it); where one channel still reaches black,
# the darkest things are strong colours (a blue sky, a green lawn) and the picture's pale tones are its style
FADED_FLOOR = 0.02
OVER_CLIPPED = 0.03  # this share of pixels blown to white ...
OVER_BLACK = 0.08  # ... with the blacks lifted past this, or
# ... the mean above this: over-exposure. Clean photos blow at most 0.7% of their pixels, so the clipped share is
# the evidence; the mean keeps out a lamp or window blown in a dark scene and an S-curve's clipped whites
# (chosen on the clipped-highlights and s-curve families, measured on over-gain-linear: docs/notes/2026-11-generalisation.md)
OVER_MEAN = 0.55
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
NOISE_SIGMA = 0.012  # noise standard deviation at native resolution
BLUR_SHARPNESS = 0.9  # fine detail relative to local contrast, at native resolution
BLOCKY = 1.3  # typical step across the JPEG 8x8 grid over those inside it: 1.04-1.16 on clean photos, 1.8-3.5 at quality 6-25
GRID_STEP = 1.8  # ... and the grid steps this many levels of 255 more than inside the blocks: 0.2-0.8 on clean
# photos, 1.5 on scikit-image's moon (a JPEG whose flat surface shows faint blocks), 1.5-6.5 at quality 6-25
BLUR_CONFIDENCE = 0.5  # a kernel estimated this surely (tools/restore.estimate_blur) is undone by deconvolution
MIN_MOTION = 5.0  # px: a shorter line is not told apart from a small defocus or a Gaussian blur
SAME_LENGTH, SAME_ANGLE = 0.25, 15.0  # two crops read one shake: lines within a quarter of a length and 15 degrees
POOLED_AGREEING = 3  # a kernel read on the crops pooled counts where most of the four crops read it alone
# ... and is trusted from this confidence on: that agreement is most of the evidence. On fresh draws (cases 8-11 of every
# family, saved at 95 and 85, cases 8-9 as PNGs) every pooled reading the crops agreed with came from a blur family,
# but the moon's JPEG grid (8 px lines at 90 degrees, 0.50-0.68, which the grid check already keeps out); the pool's
# own floor sits at 0.25 (tools/restore.MIN_CONFIDENCE), and 9 of the shakes read right lay between it and
# BLUR_CONFIDENCE
POOLED_CONFIDENCE = 0.25
# No proposal more than doubles the tonal span in one edit: some photos are flat by nature (fog, the
# moon's surface), and a flat photo made less flat is safe where one stretched to the full range is not.
MAX_STRETCH = 2.0
# Colour spread (Hasler and Suesstrunk's, without the mean term) above which colours are garish: the most colourful
# clean photos here reach 0.25 (scikit-image's retina, I03), and their scale calls 0.23-0.32 "quite" to "highly"
# colourful. A photo past this is brought back into COLOURFUL_TARGETS, the upper range of clean photos.
OVER_COLOURFUL = 0.3
COLOURFUL_TARGETS = (0.24, 0.2)
# ... and only where the colours were pushed past the file's range: the share of colourful pixels with a channel at
# 0 or 1 (metrics.gamut_clipped). Clean photos and generated pictures read at most 0.25 (0.19 among those past the
# spread limit), saturation raised in display values 0.72-0.85 past it: a vivid scene is the photographer's.
OVER_GAMUT = 0.4


@dataclass(frozen=True)
class Finding:
    """One check of the photo: what was measured, against what, and what it means."""

    check: str
    value: float
    threshold: float
    defect: bool
    reason: str

    def line(self) -> str:
        return f"{self.check}: {'DEFECT' if self.defect else 'fine'} - {self.reason}"


@dataclass(frozen=True)
class Perception:
    scene: str
    findings: tuple[Finding, ...] = ()
    actions: tuple[ToolCall, ...] = ()
    source: str = "rules"

    def as_dict(self) -> dict[str, Any]:
        return {"scene": self.scene, "source": self.source, "findings": [f.line() for f in self.findings],
                "actions": [a.as_dict() for a in self.actions]}


@dataclass(frozen=True)
class Memory:
    """One executed action and what came of it, fed back to the perceiver."""

    action: ToolCall
    gain: float  # reward change at full resolution
    kept: bool

    def line(self) -> str:
        return f"{self.action.label()}: {'kept' if self.kept else 'reverted'} ({self.gain:+.3f})"


def guess_scene(stats: Mapping[str, float]) -> str:
    """The scene's kind from its statistics (the VLM perceiver names it from the picture instead)."""
    if stats.get("is_gray"):
        return "black-and-white"
    if stats["mean_luma"] < 0.15 and stats["white_level"] > 0.5:
        return "night"
    if stats["mean_luma"] < 0.3 and stats["white_level"] > 0.6:
        return "low-key"
    if stats["mean_luma"] > 0.65 and stats["black_level"] < LIFTED_BLACK:
        return "high-key"
    if cast_direction(stats) == "warm" and stats["colour_cast"] > 0.08:
        return "warm light"
    return "general"


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


def _at(tool: str, param: str, values: Iterable[float], why: str, **fixed) -> list[ToolCall]:
    return [ToolCall(tool, {**fixed, param: round(float(v), 3)}, why) for v in values]


def _penalised(stats: Mapping[str, float], penalty: str, check: str, limit: float, why: str, tool: str, param: str,
               values: Iterable[float], statistic: str = "", **fixed) -> tuple[Finding, list[ToolCall]]:
    """A finding on a defect that the reward penalises past a clean limit (reward.PENALTIES; ``statistic``: its raw
    statistic, when not named as the penalty): the reward's own verdict, and the tool that takes the defect out."""
    found = excess(stats, penalty) > 0
    return (Finding(check, stats.get(statistic or penalty, 0.0), limit, found, why),
            _at(tool, param, values, why, **fixed) if found else [])


def _full_range(span: float, clips: Iterable[float], why: str) -> list[ToolCall]:
    """Auto levels (the tonal span mapped to 0..1), only where that is at most MAX_STRETCH times the span."""
    return _at("auto_levels", "clip_percent", clips, why) if _stretchable(span) else []


def _stretchable(span: float) -> bool:
    """A tonal span that mapping to the full range at most doubles (MAX_STRETCH); a narrower one is a scene's own."""
    return span * MAX_STRETCH >= 1.0


def _black_levels(level: float) -> list[float]:
    """Black points most of the way down to a floor the blacks were lifted to: 0.8 of it, and 0.02 under it."""
    return sorted({round(level * 0.8, 3), round(level - 0.02, 3)})


def _black_point(span: float, black: float, why: str) -> list[ToolCall]:
    """The blacks taken down to black (levels), the whites left where they are: only where the tonal span is
    stretchable, as for auto levels (a span narrower than that is a scene's own: a clock face, a brick wall)."""
    return _at("levels", "black", _black_levels(black), why) if _stretchable(span) else []


def _diagnose(stats: Mapping[str, float], scene: str, blur: Mapping[str, Any] | None = None
              ) -> list[tuple[Finding, list[ToolCall]]]:
    out: list[tuple[Finding, list[ToolCall]]] = []
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
        calls = (_at("exposure", "stops", (stops * 0.6, stops), why) + _full_range(span, (0.3,), why)
                 + _at("gamma", "gamma", (1 + 0.5 * stops,), why))
    out.append((Finding("under-exposure", white, limit, under, why), calls))

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
        calls = (_black_point(came, black, why) + _at("contrast", "amount", sorted({round(gain * 0.5, 3), round(gain, 3)}), why)
                 + (_at("gamma", "gamma", (0.8,), why) if stats["mean_luma"] > 0.45 else []))
        if not _stretchable(came):
            why += f"; no black point: the photo came with a span of {came:.2f}, under half the range (the scene's own)"
    out.append((Finding("low contrast", black, LIFTED_BLACK, flat, why), calls))

    veil = stats.get("veil", 0.0)
    gray = bool(stats.get("is_gray"))
    veiled = excess(stats, "veil") > 0  # the reward's own verdict: never in a black-and-white photo
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
        points = _black_levels(floor)
        calls = _at("dehaze", "strength", (1.0,), why) + _at("levels", "black", points, why)
        if stats["mean_luma"] > 0.5:  # midtones lifted with the blacks: darken them as well
            calls += _at("levels", "black", points[-1:], why, gamma=0.8)
        calls += _at("dehaze", "strength", (0.6,), why)
    out.append((Finding("veil", veil, VEIL_LIMIT, veiled, why), calls))

    over = stats["clip_bright"] > OVER_CLIPPED and (black > OVER_BLACK or stats["mean_luma"] > OVER_MEAN) and not (scene == "high-key" and stats["clip_bright"] < 0.1)
    why = (f"{stats['clip_bright']:.1%} of pixels blown (limit {OVER_CLIPPED:.0%}), blacks at {black:.2f} (limit "
           f"{OVER_BLACK}), mean {stats['mean_luma']:.2f} (limit {OVER_MEAN})")
    calls = []
    if over:
        calls = (_at("gamma", "gamma", (0.8, 0.65), why) + _full_range(span, (0.3,), why)
                 + _at("highlights_shadows", "highlights", (0.5,), why, shadows=0.0)
                 + _at("exposure", "stops", (-0.4,), why))
    out.append((Finding("over-exposure", stats["clip_bright"], OVER_CLIPPED, over, why), calls))

    if scene != "black-and-white":
        spread = stats["colourfulness"]
        clipped = stats.get("gamut_clip", 1.0)
        garish = spread > OVER_COLOURFUL and clipped > OVER_GAMUT
        why = (f"colour spread {spread:.3f} (limit {OVER_COLOURFUL}; the most colourful clean photos reach 0.25), "
               f"{clipped:.0%} of the colourful pixels clipped in a channel (limit {OVER_GAMUT:.0%}: colours pushed "
               "past the file's range; a scene's own vivid colours stay inside it)")
        # saturation scales the colour differences, so the spread, by 1 + amount
        amounts = [round(target / max(spread, 1e-6) - 1.0, 2) for target in COLOURFUL_TARGETS]
        out.append((Finding("over-saturation", spread, OVER_COLOURFUL, garish, why),
                    _at("saturation", "amount", amounts, why) if garish else []))

        why = (f"red and blue magnified apart from green by {stats.get('fringes', 0.0):.2f}% of the half-diagonal, alike "
               f"in all four quarters (limit {FRINGE_LIMIT}%: colour fringes from the lens, widening toward the corners)")
        out.append(_penalised(stats, "fringes", "colour fringes", FRINGE_LIMIT, why, "fix_fringes", "strength", (1.0,)))

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
        out.append((Finding("colour cast", cast, limit, found, why), calls))

    if "noise_sigma" in stats:
        why = (f"{stats.get('impulses', 0.0):.2%} of pixels stand alone, past all eight neighbours (limit "
               f"{IMPULSE_LIMIT:.2%}: salt and pepper, dead pixels or dust)")
        out.append(_penalised(stats, "impulses", "impulse noise", IMPULSE_LIMIT, why, "remove_impulses", "threshold",
                              (0.2, 0.35)))
        speckled = out[-1][0].defect
        why = (f"rows offset each on its own by {stats.get('banding', 0.0):.4f}, alike in two places along them (limit "
               f"{BANDING_LIMIT}: a sensor's banding)")
        out.append(_penalised(stats, "banding", "banding", BANDING_LIMIT, why, "remove_banding", "strength", (1.0,)))
        banded = out[-1][0].defect
        sigma = stats["noise_sigma"]
        # banding reads as noise too: it is taken out first, and the noise read again on the photo without it
        noisy = sigma > NOISE_SIGMA and not banded
        why = (f"noise sigma {sigma:.4f} at native resolution (limit {NOISE_SIGMA})"
               + ("; not counted while the rows are banded, which it includes" if banded and sigma > NOISE_SIGMA else ""))
        strength = min(1.0, sigma / 0.04)
        calls = _at("denoise", "strength", sorted({round(max(0.2, strength * 0.6), 2), round(strength, 2), 1.0}), why) if noisy else []
        out.append((Finding("noise", sigma, NOISE_SIGMA, noisy, why), calls))
        if "chroma_noise" in stats and scene != "black-and-white":
            chroma = stats["chroma_noise"]
            speckled = chroma > CHROMA_NOISE_LIMIT
            why = f"colour noise sigma {chroma:.4f} (red minus blue, at native resolution; limit {CHROMA_NOISE_LIMIT})"
            out.append((Finding("colour noise", chroma, CHROMA_NOISE_LIMIT, speckled, why),
                        _at("chroma_denoise", "strength", (0.6, 1.0), why, radius=3.0) if speckled else []))
            # colour noise coarser than a pixel or two hardly shows at the pixels: read on 4x4 blocks, and smoothed
            # over a wider radius
            why = (f"colour spread two ways at once over 4x4 blocks where the tones are flattest, sigma "
                   f"{stats.get('chroma_blotches', 0.0):.4f} (limit {BLOTCH_LIMIT}: colour blotches, which a photo's "
                   "own colours, lying along one line in each small neighbourhood, do not make)")
            out.append(_penalised(stats, "blotches", "colour blotches", BLOTCH_LIMIT, why, "chroma_denoise", "radius",
                                  (5.0, 8.0), statistic="chroma_blotches", strength=1.0))
            speckled = speckled or out[-1][0].defect  # a deconvolution or a sharpen would make blotches worse too
        why = (f"the photo steps {stats.get('level_step', 0.0):.1f} levels of 255 from one value it uses to the next "
               f"(limit {STEP_LIMIT}: posterisation, too few levels, as banded skies show)")
        out.append(_penalised(stats, "posterisation", "posterisation", STEP_LIMIT, why, "deband", "radius", (2.0, 5.0),
                              statistic="level_step", strength=1.0))
        speckled = speckled or out[-1][0].defect  # sharpening steepens the steps
        blocks, step = stats.get("blockiness", 1.0), stats.get("grid_step", 0.0) * 255
        blocky = blocks > BLOCKY and step > GRID_STEP
        why = (f"JPEG grid {blocks:.2f} (steps across 8x8 block edges over steps inside; limit {BLOCKY}), "
               f"{step:.1f} levels of 255 beyond them (limit {GRID_STEP})")
        out.append((Finding("JPEG blocks", blocks, BLOCKY, blocky, why),
                    _at("deblock", "strength", (0.5, 0.8, 1.0), why) if blocky else []))
        sharp = stats["sharpness"]
        kernel = blur or {"kind": "none", "confidence": 0.0}
        # a line shorter than MIN_MOTION reads in the cepstrum like a small disc or a Gaussian, and a visible
        # JPEG grid puts peaks of its own on the axes at 8 px periods: neither estimate is trusted
        trusted = (kernel["kind"] != "none" and kernel["confidence"] >= _needed(kernel)
                   and (kernel["kind"] != "motion" or kernel.get("length", 0.0) >= MIN_MOTION)
                   and stats.get("grid_step", 0.0) * 255 <= CLEAN_GRID_STEP)  # a grid the reward marks down
        # motion blur spares the detail along its line, so the fine detail measured over every direction can read
        # as sharp: a trusted motion kernel is the evidence by itself; so is an elongated Gaussian (the detail across
        # its narrow way is spared), which no clean photo's fall-off reads as (tools/restore: GAUSS_SIGMA)
        shaken = trusted and (kernel["kind"] == "motion" or kernel.get("sigma_minor", 0.0) > 0)
        # sharpening noise, compression blocks or specks makes them worse
        blurred = (sharp < BLUR_SHARPNESS or shaken) and not noisy and not blocky and not speckled
        why = f"fine detail {sharp:.2f} relative to local contrast at native resolution (limit {BLUR_SHARPNESS})"
        calls = []
        if blurred and trusted:
            # a measured kernel is undone by deconvolution; an unsharp mask only steepens what the kernel smeared
            # (along a motion line it adds edges across it), so it is left for softness with no kernel to measure
            size = ({"radius": round(kernel["radius"], 2)} if kernel["kind"] == "defocus" else
                    {"sigma": round(kernel["sigma"], 2)} if kernel["kind"] == "gaussian" else
                    {"length": round(kernel["length"], 2), "angle": round(kernel["angle"] % 180, 1)})
            if kernel["kind"] == "gaussian" and kernel.get("sigma_minor", 0.0) > 0:  # elongated: across, and its axis
                size.update(sigma_minor=round(kernel["sigma_minor"], 2), angle=round(kernel["angle"] % 180, 1))
            why += (f"; {kernel['kind']} kernel estimated ({', '.join(f'{k} {v:g}' for k, v in size.items())}, "
                    f"confidence {kernel['confidence']:.2f}{', the crops read as one' if kernel.get('pooled') else ''})"
                    ": deconvolve")
            # a kernel read only on the crops pooled stands near the file's rounding, which a full inverse raises with
            # the detail (the moon's shakes saved at 95: SSIM 0.93 -> 0.89 at full strength, 0.95 at 0.6)
            strengths = (0.6,) if kernel.get("pooled") else (0.6, 1.0)
            calls = _at("deconvolve", "strength", strengths, why, kind=kernel["kind"], **size)
        elif blurred:
            if blur is not None:  # why no deconvolution: the kernel read, and how surely (its shape counts too)
                unsure = kernel["kind"] == "none" or kernel["confidence"] < _needed(kernel)
                grid = (f"; a line of {kernel['grid']:g} px along a row or column is a grid's period (a JPEG seen at "
                        "another size), not a shake") if kernel.get("grid") else ""
                why += (f"{grid}; no kernel measured surely ({kernel['kind']}, confidence {kernel['confidence']:.2f}, "
                        f"needs {_needed(kernel)})" if unsure
                        else f"; the {kernel['kind']} kernel read is not trusted (a line under {MIN_MOTION} px, or "
                             "a JPEG grid in the photo)") + ": sharpen"
            calls = _at("sharpen", "amount", (0.6, 1.2, 2.0), why, radius=1.5)
        out.append((Finding("blur", sharp, BLUR_SHARPNESS, blurred, why), calls))
    return out


def estimate_kernel(crops: Sequence[np.ndarray] | None) -> dict | None:
    """The blur kernel of the photo from its native-resolution crops: the most confident crop's estimate; a
    Gaussian's widths, roundness and long axis are the crops' medians (one crop of flat sky or fine texture reads wider
    or narrower). Where no crop reads a kernel surely, the crops read as one (``pooled_kernel``). ``grid``: the length
    of a line some crop read and dropped as a grid's period, where no other line was trusted (the trace says so)."""
    from ...tools.imageops import luminance
    from ...tools.restore import blur_of_spectrum, blur_spectrum, unless_grid

    # each crop's spectrum once: its own reading, the pool's and the agreement with the pool read it
    lums = [luminance(c) for c in crops or () if min(c.shape[:2]) >= 64]
    powers = [blur_spectrum(x) for x in lums]
    # a line that is a grid's period (an upscaled JPEG's blocks) is no shake: that crop reads no kernel
    found = [unless_grid(blur_of_spectrum(p), x) for p, x in zip(powers, lums)]
    if not found:
        return None
    kernel = _kernel_of_readings(found, powers, lums)
    grids = [k["grid"] for k in found if "grid" in k]
    return {**kernel, "grid": grids[0]} if grids and kernel["kind"] != "motion" else kernel


def _kernel_of_readings(found: list[dict], powers: list, lums: list) -> dict:
    """estimate_kernel's choice among the crops' readings (``found``), their spectra and luminances."""
    from ...tools.restore import gaussian_reading, repeats_at_one_phase

    # a shake moves the whole frame: a line read on one crop alone, with no other crop reading one of about its length
    # and angle, is no shake (a JPEG's 8 px grid, read as an 8 px line by one crop of a dusk sky, was deconvolved)
    seconded = [k for k in found if k["kind"] != "motion" or any(
        other is not k and other["kind"] == "motion" and _same_kernel(other, k) for other in found)]
    if not seconded:  # every crop read a line the others did not
        best = {**max(found, key=lambda k: k["confidence"]), "kind": "none", "confidence": 0.0}
    else:
        best = max(seconded, key=lambda k: k["confidence"])
    if best["kind"] == "gaussian":
        median = {key: float(np.median([k[key] for k in found])) for key in ("sigma", "wide", "narrow", "isotropy")}
        # a direction is the same 180 degrees on: the mean of the doubled angles
        doubled = np.radians([2 * k["long_axis"] for k in found])
        axis = math.degrees(math.atan2(np.sin(doubled).sum(), np.cos(doubled).sum())) / 2 % 180.0
        best = {**best, **gaussian_reading(round(median["sigma"], 2), median["wide"], median["narrow"], axis,
                                           median["isotropy"])}
    if best["kind"] == "none" or best["confidence"] < BLUR_CONFIDENCE:
        pooled = pooled_kernel(powers, best)
        # the pool's line too, where most crops read it as a grid's period
        if pooled is not best and pooled["kind"] == "motion" and sum(
                repeats_at_one_phase(x, pooled["length"], pooled["angle"]) for x in lums) >= POOLED_AGREEING:
            return best
        return pooled
    return best


def _needed(kernel: Mapping[str, Any]) -> float:
    """The confidence a kernel must reach to be undone: less for one read on the crops pooled, which most crops read
    alone as well (``pooled_kernel``)."""
    return POOLED_CONFIDENCE if kernel.get("pooled") else BLUR_CONFIDENCE


def _same_kernel(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two readings of one kernel: sizes within SAME_LENGTH of ``b``'s, and a line's direction within SAME_ANGLE."""
    if b["kind"] == "motion":
        return (abs(a["length"] - b["length"]) <= SAME_LENGTH * b["length"]
                and abs((a["angle"] - b["angle"] + 90.0) % 180.0 - 90.0) <= SAME_ANGLE)
    size = "radius" if b["kind"] == "defocus" else "sigma"
    return abs(a[size] - b[size]) <= SAME_LENGTH * b[size]


def pooled_kernel(powers: Sequence[np.ndarray | None], best: dict) -> dict:
    """The crops' spectra (tools/restore.blur_spectrum) pooled (restore.pooled_spectrum), where no crop alone read a kernel surely: in a
    photo saved in 8 bits or as a JPEG, the rounding fills a shake's zeros, and one crop's four tiles leave them under
    the fluctuation of its floor (the defect space's shaken photos saved at 85: 19 of 64 read surely crop by crop,
    30 of 64 pooled). The pool reads the photo's content too (the dusk rocket's gantry: a vertical 17 px line, which
    two crops of a brightened or washed-out copy read alone as well), so its kernel counts only where most crops
    (POOLED_AGREEING of the four) read one of that kind at about its size and angle on their own; else ``best``,
    the crops' own reading, stands."""
    from ...tools.restore import blur_of_spectrum, pooled_spectrum

    pooled = blur_of_spectrum(pooled_spectrum(powers))
    if pooled["kind"] == "none" or pooled["confidence"] <= best["confidence"]:
        return best
    agreeing = sum(_same_kernel(blur_of_spectrum(p, pooled["kind"]), pooled) for p in powers)
    return {**pooled, "pooled": True} if agreeing >= POOLED_AGREEING else best


class _Perceiver:
    """What the perceivers share: ``perceive`` returns a Perception, ``propose`` just its actions."""

    expensive = False  # True: each call costs a model request, so the search asks within perceiver_calls per step

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None) -> Perception:
        raise NotImplementedError

    def propose(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                crops: Sequence[np.ndarray] | None = None) -> list[ToolCall]:
        return list(self.perceive(stats, k, allowed, tried, image=image, memory=memory, crops=crops).actions)


class RulePerceiver(_Perceiver):
    """Deterministic: the same statistics give the same proposals in the same order.

    Cheap, so the search asks it at every state it expands. Actions that were executed and reverted
    (memory) are not proposed again. A photo with no clear defect gets no proposal at all.
    """

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None,
                 kernel: Callable[[], Mapping[str, Any] | None] | None = None) -> Perception:
        """``kernel``: how to get the photo's blur kernel where the caller keeps it (the search estimates it once per
        step); without it the kernel is estimated here, from ``crops``."""
        allowed = set(allowed)
        tried = set(tried) | {m.action.key() for m in memory if not m.kept}
        scene = guess_scene(stats)
        findings, per_defect = [], []
        # the kernel is estimated only for a photo that is not noisy (noise hides it), and only when deconvolve may be
        # used; whatever its fine detail reads, since a motion blur can leave that looking sharp
        # (nor blotchy or posterised: smooth colour blotches and the steps between too few levels put lines of their
        # own in the cepstrum)
        measure = ("deconvolve" in allowed and stats.get("noise_sigma", 0.0) <= NOISE_SIGMA
                   and excess(stats, "blotches") == 0 and excess(stats, "posterisation") == 0)
        blur = (kernel() if kernel is not None else estimate_kernel(crops)) if measure else None
        for finding, calls in _diagnose(stats, scene, blur):
            findings.append(finding)
            usable = [c for c in calls if c.tool in allowed and c.key() not in tried]
            if usable:
                per_defect.append(usable)
        # interleave the defects' proposals, so K actions cover every defect before a second strength of one
        out, seen = [], set()
        for rank in range(max((len(c) for c in per_defect), default=0)):
            for calls in per_defect:
                if rank < len(calls) and calls[rank].key() not in seen and len(out) < k:
                    seen.add(calls[rank].key())
                    out.append(calls[rank])
        return Perception(scene, tuple(findings), tuple(out))


class BrainPerceiver(_Perceiver):
    """PhotoAgent's VLM perceiver: a vision brain looks at the photo, names the scene and proposes K actions.

    Autonomous ("make it better") or mood-guided (``mood``). It sees the memory of executed actions and
    their outcomes. The search asks it at each newly expanded state, up to the MCTS Planner's
    ``perceiver_calls`` per step (the user's budget: each call is a VLM request); past the budget a state reuses the proposals of
    its nearest asked ancestor. Proposals are validated against the tool specs; invalid ones are dropped
    and noted in the trace. When the brain fails (unreachable, or no valid answer within its retries), the
    rule perceiver proposes for the rest of the run, and the trace says so: the search goes on.
    """

    expensive = True

    def __init__(self, brain: Any, tools: Any, mood: str = "", trace: Trace | None = None, agent: str = "photoagent"):
        self.brain, self.tools, self.mood = brain, tools, mood
        self.trace = trace or Trace()
        self.agent = agent
        self.calls = 0
        self.fallback: RulePerceiver | None = None  # once the brain has failed

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None) -> Perception:
        if image is None:
            raise ValueError("the VLM perceiver needs the image")
        if self.fallback is None:
            try:
                return self._ask(stats, k, allowed, tried, image, memory)
            except BrainError as err:
                self.fallback = RulePerceiver()
                self.trace.add("perceiver", self.agent, f"the vision brain failed ({err}); the rule perceiver "
                               "proposes from here on", outputs={"fallback": "rules", "error": str(err)})
        seen = self.fallback.perceive(stats, k, allowed, tried, image=image, memory=memory, crops=crops)
        return replace(seen, source="rules (the vision brain failed)")

    def _ask(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str],
             image: np.ndarray, memory: Sequence[Memory]) -> Perception:
        """One call to the brain: its scene and validated actions."""
        allowed = set(allowed)
        tools = self.tools.subset([n for n in self.tools.names() if n in allowed])

        async def go():
            try:
                return await brain_perceive(self.brain, image, tools, k, Where(self.trace, self.agent), mood=self.mood,
                                      tried=tuple(tried), memory=tuple(m.line() for m in memory))
            finally:
                await close_brains(self.brain)

        self.calls += 1
        scene, calls = run_blocking(go)
        return Perception(scene or guess_scene(stats), (), tuple(calls), source="vision brain")


# -- the vision perceiver's request ------------------------------------------------------------

def _actions_problem(tools: ToolRegistry) -> Callable[[dict[str, Any]], str | None]:
    def problem(data: dict[str, Any]) -> str | None:
        for i, action in enumerate(data["actions"]):
            try:
                tools.get(action["tool"]).validate(action.get("params"))
            except ToolCallError as err:
                return f"action {i}: {err}"
        return None
    return problem


async def brain_perceive(brain: Brain, image: np.ndarray, tools: ToolRegistry, k: int, where: Where, mood: str = "",
                   tried: tuple[str, ...] = (), memory: tuple[str, ...] = ()) -> tuple[str, list[ToolCall]]:
    """The scene the brain names and its validated actions (possibly none: a good photo needs nothing)."""
    # an action edits the photo by itself: a tool that returns a mask is a helper of another tool, and one that
    # needs a mask (inpaint) is left to the loops that chain ground -> mask -> edit
    tools = tools.subset([n for n in tools.names() if tools.get(n).stands_alone])
    text = "Propose actions for this photo."
    if memory:  # PhotoAgent's memory: what was executed and what came of it
        text += "\nAlready executed (do not repeat what was reverted):\n" + "\n".join(f"- {m}" for m in memory)
    req = BrainRequest(role="perceiver",
                       system=prompt("perceiver", k=k, tools=tools.brief_catalogue(),
                                     mood_text=f" toward the mood '{mood}'" if mood else ""),
                       text=text, schema=schemas.perceive_schema(tools.specs(), k), check=_actions_problem(tools),
                       images=[image], context={"stats": image_statistics(image), "tools": tools.specs(), "k": k,
                                                "mood": mood, "tried": tried, "memory": memory})
    data = (await ask(brain, req, where, "propose actions")).data
    calls = []
    for action in data["actions"]:
        try:
            clean, _ = tools.get(action["tool"]).validate(action.get("params"))
        except ToolCallError as err:
            where.trace.add("perceiver", where.agent, f"dropped an invalid action: {err}", round=where.round)
            continue
        calls.append(ToolCall(action["tool"], clean, action.get("rationale", "")))
    return str(data.get("scene", "")).strip(), calls
