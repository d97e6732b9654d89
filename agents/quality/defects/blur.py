"""Blur: fine detail short of its local contrast, or a shake's kernel read surely; a deconvolution where the kernel
was measured (quality/kernel.py reads it), else a sharpen. Softness is the reward's penalty on it."""
from __future__ import annotations

from typing import Any, Mapping

from ...records import ToolCall
from ..kernel import needed_confidence
from .base import Defect, Finding, Penalty, Seen, _at
from .jpeg import CLEAN_GRID_STEP

BLUR_SHARPNESS = 0.9  # fine detail relative to local contrast, at native resolution
# px: a photo short of fine detail is soft only where its strong edges rise over at least this (metrics.edge_width):
# the defect space's blurs read 3.8-9.3, phones' photos smoothed by their noise reduction and sharpened 2.6-3.7 (their
# fine detail 0.3-0.9 all the same: sharpening them again only adds halos)
SOFT_EDGE = 3.8
MIN_MOTION = 5.0  # px: a shorter line is not told apart from a small defocus or a Gaussian blur
# Softness (texture_statistics' sharpness: fine detail relative to local contrast): 1.24-5.4 on the project's clean
# photos but a clock face's smooth close-up (0.48) and the retina (0.85); at least 0.88 on every family of the defect
# space with no blur in it (a JPEG moon) but over-smoothing (0.41); 0.12-1.14 under the blur families. Read in log, as a
# blur's width is: halving the fine detail costs as much anywhere.
SOFT_LIMIT = 0.45
# under this, a picture with hardly any fine detail at all (a flat test card, a clear sky): no longer a blur's width,
# so the shortfall stops growing there (the defect space's heaviest blurs read 0.12, I03's 0.09)
SOFT_FLOOR = 0.05
PENALTY = Penalty("softness", "sharpness", 1.0, SOFT_LIMIT, "softness, the log of fine detail short of", floor=SOFT_FLOOR)


def blur(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """Soft or shaken, and not held back (noise, blocks or specks, which a sharpen makes worse): deconvolve with a
    trusted kernel, else sharpen."""
    stats = seen.stats
    sharp = stats["sharpness"]
    kernel = seen.kernel or {"kind": "none", "confidence": 0.0}
    # a line shorter than MIN_MOTION reads in the cepstrum like a small disc or a Gaussian, and a visible
    # JPEG grid puts peaks of its own on the axes at 8 px periods: neither estimate is trusted
    trusted = (kernel["kind"] != "none" and kernel["confidence"] >= needed_confidence(kernel)
               and (kernel["kind"] != "motion" or kernel.get("length", 0.0) >= MIN_MOTION)
               and stats.get("grid_step", 0.0) * 255 <= CLEAN_GRID_STEP)  # a grid the reward marks down
    # motion blur spares the detail along its line, so the fine detail measured over every direction can read
    # as sharp: a trusted motion kernel is the evidence by itself; so is an elongated Gaussian (the detail across
    # its narrow way is spared), which no clean photo's fall-off reads as (tools/restore: GAUSS_SIGMA)
    shaken = trusted and (kernel["kind"] == "motion" or kernel.get("sigma_minor", 0.0) > 0)
    width = stats.get("edge_width")  # read only on a photo short of fine detail (metrics.EDGES_UNDER)
    short = sharp < BLUR_SHARPNESS
    steep = short and width is not None and width < SOFT_EDGE  # a phone's sharpened photo, its fine detail smoothed
    # sharpening noise, compression blocks or specks makes them worse
    blurred = ((short and not steep) or shaken) and not seen.held
    why = f"fine detail {sharp:.2f} relative to local contrast at native resolution (limit {BLUR_SHARPNESS})"
    if width is not None:
        note = ": steep, as a phone's sharpened photo keeps them" if steep else ""
        why += f", strong edges rising over {width:.1f} px (soft from {SOFT_EDGE}{note})"
    calls = []
    if blurred and trusted:
        why, calls = _deconvolve(kernel, why)
    elif blurred:
        if seen.kernel is not None:  # why no deconvolution: the kernel read, and how surely (its shape counts too)
            why += _untrusted(kernel)
        calls = _at("sharpen", "amount", (0.6, 1.2, 2.0), why, radius=1.5)
    return Finding("blur", sharp, BLUR_SHARPNESS, blurred, why), calls


def _deconvolve(kernel: Mapping[str, Any], why: str) -> tuple[str, list[ToolCall]]:
    """The reason with the kernel's reading added, and the deconvolutions that undo it."""
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
    return why, _at("deconvolve", "strength", strengths, why, kind=kernel["kind"], **size)


def _untrusted(kernel: Mapping[str, Any]) -> str:
    """Why a kernel that was read is not deconvolved: too unsure, a grid's period, or a line too short."""
    unsure = kernel["kind"] == "none" or kernel["confidence"] < needed_confidence(kernel)
    grid = (f"; a line of {kernel['grid']:g} px along a row or column is a grid's period (a JPEG seen at "
            "another size), not a shake") if kernel.get("grid") else ""
    return (f"{grid}; no kernel measured surely ({kernel['kind']}, confidence {kernel['confidence']:.2f}, "
            f"needs {needed_confidence(kernel)})" if unsure
            else f"; the {kernel['kind']} kernel read is not trusted (a line under {MIN_MOTION} px, or "
                 "a JPEG grid in the photo)") + ": sharpen"


BLUR = Defect("blur", ("sharpness", "edge_width", "grid_step"), blur, PENALTY, needs=("noise_sigma",),
              held_back_by=("noisy", "blocky", "speckled"))
