"""The blur kernel of a photo, read on its native-resolution crops: the blur defect's reading (defects/blur.py), which
the perceiver makes only where deconvolve may take the blur out."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

BLUR_CONFIDENCE = 0.5  # a kernel estimated this surely (tools/restore.estimate_blur) is undone by deconvolution
SAME_LENGTH, SAME_ANGLE = 0.25, 15.0  # two crops read one shake: lines within a quarter of a length and 15 degrees
POOLED_AGREEING = 3  # a kernel read on the crops pooled counts where most of the four crops read it alone
# ... and is trusted from this confidence on: that agreement is most of the evidence. On fresh draws (cases 8-11 of every
# family, saved at 95 and 85, cases 8-9 as PNGs) every pooled reading the crops agreed with came from a blur family,
# but the moon's JPEG grid (8 px lines at 90 degrees, 0.50-0.68, which the grid check already keeps out); the pool's
# own floor sits at 0.25 (tools/restore.MIN_CONFIDENCE), and 9 of the shakes read right lay between it and
# BLUR_CONFIDENCE
POOLED_CONFIDENCE = 0.25


def estimate_kernel(crops: Sequence[np.ndarray] | None) -> dict | None:
    """The blur kernel of the photo from its native-resolution crops: the most confident crop's estimate; a
    Gaussian's widths, roundness and long axis are the crops' medians (one crop of flat sky or fine texture reads wider
    or narrower). Where no crop reads a kernel surely, the crops read as one (``pooled_kernel``). ``grid``: the length
    of a line some crop read and dropped as a grid's period, where no other line was trusted (the trace says so)."""
    from ...tools.imageops import luminance
    from ...tools.restore.blur import blur_of_spectrum, blur_spectrum, unless_grid

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
    from ...tools.restore.blur import gaussian_reading, repeats_at_one_phase

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
    from ...tools.restore.blur import blur_of_spectrum, pooled_spectrum

    pooled = blur_of_spectrum(pooled_spectrum(powers))
    if pooled["kind"] == "none" or pooled["confidence"] <= best["confidence"]:
        return best
    agreeing = sum(_same_kernel(blur_of_spectrum(p, pooled["kind"]), pooled) for p in powers)
    return {**pooled, "pooled": True} if agreeing >= POOLED_AGREEING else best


def needed_confidence(kernel: Mapping[str, Any]) -> float:
    """The confidence a kernel must reach to be undone: less for one read on the crops pooled, which most crops read
    alone as well (``pooled_kernel``)."""
    return POOLED_CONFIDENCE if kernel.get("pooled") else BLUR_CONFIDENCE
