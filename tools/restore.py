"""Restoration tools: undo what a camera or a codec did (JPEG blocks, defocus and motion blur, impulse noise, colour
fringes from a lens, a sensor's row banding).

Each measures the defect on the photo itself (the JPEG grid, the blur kernel), so the perceiver can read the
same measures (``blockiness``, ``estimate_blur``) and the reward can check an edit for halos (``overshoot``).
numpy and scipy only; the filters come from tools/imageops.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

from .imageops import (bilateral_filter, channel_min, luminance, maximum_filter, minimum_filter, on_color,
                       resize_longest, sampled_gaussian, split_alpha, to_rgb)
from .photo_io import srgb_decode, srgb_encode
from .spec import Param, ToolOutput, ToolSpec

BLOCK = 8  # the JPEG DCT block
RING_PER_RADIUS = 1.86  # a disc of radius R puts its cepstral ring at 1.86 R (measured, R = 1.5 to 6 px)
MIN_CONFIDENCE = 0.25  # below this estimate_blur says "none" and deconvolve leaves the photo alone
# A disc is round, so its cepstral ring is as deep all round: the ring's mean over its deepest point (_ring_evenness)
# reads 0.31-0.71 per crop on the calibration photos' defocus discs (0.25 on the few JPEG'd ones still read as discs),
# while a kernel whose zeros lie on lines (a square's, a resampling's) puts four deep points on it and reads about 0.1.
# A disc's confidence scales down below this: deconvolved as a disc, such a blur comes back covered in a fine mesh
# (each frequency where the two kernels differ in sign is restored inverted). Rounding to 8 bits or a JPEG fills the
# zeros and lifts squares to 0.16-0.42, among the discs: there a square still reads as a disc (docs/notes/2026-11-generalisation.md)
RING_EVENNESS = 0.3
# A motion line smears detail along itself only: past 1/length cycles per px the photo's power along the line falls
# far below its power across it. Log ratios (along over across): -1.8 to -4.4 on the motion blurs of the defect
# space (6-15 px); -0.9 to +1.0 on the clean photos and the Gaussian and over-smoothing blurs whose cepstrum shows a
# line (the moon's JPEG texture reads as a 4-10 px horizontal line at +0.9 to +1.7). Full trust at or below the first
# figure, none at or above the second.
MOTION_ANISOTROPY = (-1.5, -0.75)
# A line's kernel has its cepstral points at its two ends only; the cepstrum a quarter turn away, at the same distance,
# over the line's end reads -0.2 to 0.16 per crop on the calibration photos' motion blurs (0.51 at most on one JPEG'd at
# quality 85). A kernel with zeros on two crossing lines (a square's) is about as deep there: 0.52-0.99 on the held-out
# box blurs' crops, median about 0.9. Full trust at or below the first figure, none at or above the second.
MOTION_CROSS = (0.5, 1.0)
# A line along a row or a column (within GRID_AXIS degrees) may be a grid's period instead: a JPEG saved at one size
# and shown at another steps every 8 / scale px (an upscaled chat-app copy of the dusk rocket read as a 12.8 px vertical
# shake, and its deconvolution took SSIM from 0.855 to 0.576). A grid's steps fall at one phase of the period all across
# the photo; a shake's streaks start and end wherever the scene's features are. So the steps across the line, folded at
# its length, are read in GRID_STRIPS strips side by side: where every strip peaks at the same phase (within a pixel)
# at least GRID_REPEAT times the mean of the other phases, the line is a grid's (``repeats_at_one_phase``). Read on the
# crops that read a line near an axis (written 2026-12-01 for the probe's screen-copy family; docs/notes/2026-11-generalisation.md):
# the grids read as lines had their strips at one phase, 1.1-3.2 times the rest (the chat-app copy 1.6 and 2.4, the
# moon's JPEG saved twice 1.7-3.2, JPEG grids at quality 85 read as 8 px lines 1.1-2.0); the axis-aligned shakes of the
# defect space split their strips' peaks, or, where all four agreed (the dusk rocket's gantry, a structure repeating
# along its shake), reached 1.16. The figure sits above that, below the copy's.
GRID_AXIS = 5.0
GRID_STRIPS = 4
GRID_REPEAT = 1.4
# A Gaussian blur is read from how fast the spectrum falls (_gaussian_sigma), between these frequencies (cycles per px:
# above the photo's own layout, below where noise and 8-bit steps flatten it). On the native-resolution crops of the
# project's clean photos it reads -0.6 to 0.6 px (the median of four; 0.79 on one crop at most); on the defect space's
# Gaussian blurs (sigma 1.0-2.5) within 0.1 of their sigma up to 2 px (2.49 reads 2.13); on its motion blurs,
# over-smoothing, over-sharpening, JPEG, quantisation and noise 0.89 at most (a crop); on its defocus discs -0.8 to
# 0.6, except the smallest (radius 1.8: 1.23-1.30), which the cepstrum reads as discs.
GAUSS_BAND = (0.03, 0.33)
GAUSS_SIGMA = (0.9, 1.2)  # no trust at or below the first, full trust at or above the second
# A Gaussian kernel is round: the fall-off's narrowest width over its widest (_gaussian_widths) is 0.72-0.99 on the
# defect space's Gaussian blurs (a photo's own texture leans one way); below this the blur is not round, and a round
# kernel would sharpen the narrow way too much (found on the held-out anisotropic blurs; the limit set on the tuned
# family: docs/notes/2026-11-generalisation.md)
GAUSS_ISOTROPY = 0.6
# ... and a blur that is not round is read as an elongated Gaussian: its two widths and the direction of the wider, from
# the same fit (since 2026-11-28). Across its long axis it is given at least this width (px): narrower, it undoes
# nothing that way.
MIN_SIGMA_MINOR = 0.3
# A motion line of length L falls off over the Gaussian fit's band like a Gaussian at most 0.17 L wide (per crop, on
# the defect space's tuned motion blurs of 6-15 px, the calibration photos' included). A fall-off wider than this share
# of the line the cepstrum reads is a Gaussian's, as one wider than a disc's radius is.
GAUSS_PER_LINE = 0.25
# How deep a kernel's zeros read in the cepstrum, in robust standard deviations of it: no trust at or below the first,
# full trust at or above the second (a motion line's deepest point; a disc's ring)
MOTION_DEPTH = (10.0, 25.0)
RING_DEPTH = (2.0, 8.0)
NOISE_BAND = 0.42  # cycles per px: beyond this a blurred photo's spectrum is its noise floor
FLOOR_MARGIN = 3.0  # the fit reads frequencies whose power stands this many floors above the floor


# --- measures -------------------------------------------------------------------------

def _grid_profile(lum: np.ndarray, axis: int) -> np.ndarray:
    """Typical absolute step between neighbours along ``axis`` at each of the 8 positions in a block (position 7:
    across a boundary of the grid that starts at 0). Steps are capped so real edges do not outweigh the grid, and
    the median over the blocks is taken, so a few straight edges that happen to lie on the grid (a picture
    pasted at a multiple of 8 px) do not read as compression: JPEG raises every boundary."""
    d = np.minimum(np.abs(np.diff(lum, axis=axis)), 0.1)
    d = d.mean(axis=1 - axis)
    n = len(d) // BLOCK * BLOCK
    return np.median(d[:n].reshape(-1, BLOCK), axis=0)


def _grid_axes(lum: np.ndarray) -> list[tuple[float, int, float]]:
    """Per axis (columns, then rows) that is long enough: (step ratio, phase, step excess). The phase is where
    boundaries of the 8x8 grid fall (between pixel ``phase + 8k`` and the next), found rather than assumed, as a
    crop moves the grid; the ratio and the excess compare the step there with the mean step at the other 7."""
    out = []
    for axis in (1, 0):
        if lum.shape[axis] < 2 * BLOCK + 1 or lum.shape[1 - axis] < 2:
            out.append(None)
            continue
        prof = _grid_profile(lum, axis)
        phase = int(np.argmax(prof))
        rest = (prof.sum() - prof[phase]) / (BLOCK - 1)
        out.append((float(prof[phase] / (rest + 1e-4)), phase, float(prof[phase] - rest)))
    return out


def _grid(lum: np.ndarray) -> tuple[float, int, int]:
    """(blockiness, column phase, row phase) of a 2-D luminance."""
    axes = [a or (1.0, BLOCK - 1, 0.0) for a in _grid_axes(lum)]
    return float(math.sqrt(axes[0][0] * axes[1][0])), axes[0][1], axes[1][1]


def _plane(lum: np.ndarray) -> np.ndarray:
    lum = np.asarray(lum, np.float32)
    return lum[:, :, 0] if lum.ndim == 3 else lum


def grid_measures(lum: np.ndarray) -> tuple[float, float]:
    """(``blockiness``, ``grid_step``) from one pass over the grid's profiles."""
    axes = _grid_axes(_plane(lum))
    ratios = [a[0] if a else 1.0 for a in axes]
    steps = [a[2] for a in axes if a]
    return float(math.sqrt(ratios[0] * ratios[1])), float(np.mean(steps)) if steps else 0.0


def grid_step(lum: np.ndarray) -> float:
    """How much the JPEG grid's boundaries step beyond the steps inside its blocks, in the image's units (mean
    of columns and rows): what a viewer sees. Clean photos 0.2-0.8 levels of 255, JPEG at quality 6-25 1.5-6.5;
    unlike ``blockiness`` (a ratio) it stays small where a flat area's tiny steps make the ratio large."""
    return grid_measures(lum)[1]


def blockiness(lum: np.ndarray) -> float:
    """How visible a JPEG 8x8 grid is: the mean step across the grid's boundaries over the mean step inside its
    blocks (geometric mean of columns and rows). About 1 for a natural photo, 1.5 to 4 for heavy JPEG."""
    return grid_measures(lum)[0]


def _local_range(x: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    return minimum_filter(x, size), maximum_filter(x, size)


def _tone_map(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``before`` through the monotone curve that best maps it to ``after``: a global tone edit (gamma, levels,
    curves) moves every local extreme with it, so it then creates none."""
    bins = 64
    idx = np.clip((before * bins).astype(np.int64), 0, bins - 1).ravel()
    count = np.bincount(idx, minlength=bins)
    mean = np.bincount(idx, after.ravel().astype(np.float64), minlength=bins) / np.maximum(count, 1)
    centres = (np.bincount(idx, before.ravel().astype(np.float64), minlength=bins) / np.maximum(count, 1))[count > 0]
    mean = mean[count > 0]
    if len(mean) < 2:
        return np.full_like(before, float(after.mean()))
    rising = np.corrcoef(before.ravel(), after.ravel())[0, 1] >= 0 if before.std() > 0 and after.std() > 0 else True
    curve = np.maximum.accumulate(mean) if rising else np.minimum.accumulate(mean)
    return np.interp(before, centres, curve).astype(np.float32)


def overshoot(before: np.ndarray, after: np.ndarray, window: int = 5, tolerance: float = 0.02) -> float:
    """The share of pixels (0..1) where an edit made new extremes: ``after``'s luminance leaves the range that
    ``before`` (through the edit's global tone curve) spans in a ``window`` x ``window`` neighbourhood by more
    than ``tolerance``. Halos and ringing of a sharpen or deconvolution raise it; tone edits leave it near 0."""
    b = luminance(before) if np.ndim(before) == 3 else np.asarray(before, np.float32)
    a = luminance(after) if np.ndim(after) == 3 else np.asarray(after, np.float32)
    if a.shape != b.shape:
        raise ValueError(f"overshoot compares images of one size, got {b.shape} and {a.shape}")
    lo, hi = _local_range(_tone_map(b, a), window)
    return float(((a > hi + tolerance) | (a < lo - tolerance)).mean())


# --- the JPEG's own rounding -----------------------------------------------------------------

# ITU-T T.81 Annex K, table K.1: the luminance table that libjpeg (and so Pillow, most cameras' and editors' encoders)
# scales by the quality setting
JPEG_LUMA_TABLE = np.array([16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69,
                            56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104,
                            113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], np.float64)
JPEG_QUALITIES = np.arange(1, 101)
# the lowest frequencies in zigzag order after the mean: most blocks keep them, so their steps show. Not the mean
# (DC) itself: a flat area's blocks share one mean, which can sit near a coarse step's multiple by chance (a hazed moon
# read as quality 8)
JPEG_LOW = np.array([1, 8, 16, 9, 2, 3, 10, 17, 24, 32])
JPEG_FIT = 0.25  # mean distance of kept coefficients to the nearest step, over half a step: 0 on the steps, 0.5 at random
JPEG_WINDOW = 1024  # px: the side of the photo's centre that the JPEG's rounding is read on
JPEG_CHROMA_SIGMA = 1.0  # px: about the resolution of colour a 4:2:0 JPEG keeps (every other pixel each way)
# a colour's finest detail (under a 1 px Gaussian) over its next octave (1 to 2 px), as a share of the luma's: a fringed
# photo whose colour is at full resolution reads 3.4-4.9 (the lens puts colour edges at the pixels), the same photos
# saved as 4:2:0 JPEGs at quality 85 or 95 0.8-2.0 (the colour rebuilt from every other pixel; 11 colour photos)
HALF_COLOUR_DETAIL = 2.6
JPEG_BLOCKS = 2048  # blocks read at most: the quality and the error are shares, so a sample gives them at any size


def _jpeg_tables() -> np.ndarray:
    scale = np.where(JPEG_QUALITIES < 50, 5000.0 / JPEG_QUALITIES, 200.0 - 2 * JPEG_QUALITIES)[:, None]
    return np.clip(np.floor((JPEG_LUMA_TABLE[None] * scale + 50) / 100), 1, 255)


JPEG_TABLES = _jpeg_tables()  # one row per quality, 1..100


def _jpeg_luma(img: np.ndarray) -> np.ndarray:
    """The JPEG (JFIF) luma of an image, 0..255: BT.601 weights, which the codec quantises (not Rec. 709's)."""
    color, _ = split_alpha(np.asarray(img, np.float32))
    if color.shape[2] == 1:
        return color[:, :, 0].astype(np.float64) * 255
    return (0.299 * color[:, :, 0] + 0.587 * color[:, :, 1] + 0.114 * color[:, :, 2]).astype(np.float64) * 255


def _block_dct(y: np.ndarray, top: int, left: int) -> np.ndarray:
    """The 8x8 DCT (JPEG's, orthonormal) of blocks starting at (top, left), every few blocks at most JPEG_BLOCKS: n x 64."""
    rows, cols = (y.shape[0] - top) // BLOCK, (y.shape[1] - left) // BLOCK
    step = max(1, math.ceil(math.sqrt(rows * cols / JPEG_BLOCKS)))
    b = y[top:top + rows * BLOCK, left:left + cols * BLOCK].reshape(rows, BLOCK, cols, BLOCK)[::step, :, ::step]
    b = b.transpose(0, 2, 1, 3).reshape(-1, BLOCK, BLOCK) - 128.0
    return sfft.dct(sfft.dct(b, axis=1, norm="ortho"), axis=2, norm="ortho").reshape(-1, BLOCK * BLOCK)


def _jpeg_quality(coef: np.ndarray) -> int:
    """The coarsest libjpeg quality whose luma steps the blocks' low frequencies sit on; 0 where none does (a photo
    never saved as a JPEG, or edited since: its coefficients sit anywhere)."""
    c = coef[:, JPEG_LOW]
    steps = JPEG_TABLES[:, JPEG_LOW][:, None]  # quality x 1 x 10
    ratio = c[None] / steps
    off = np.abs(ratio - np.round(ratio)) * 2
    # the coefficients a step of at least 4 kept: smaller steps fit anything within the decoder's rounding
    kept = (np.abs(c)[None] >= steps / 2) & (steps >= 4)
    counted = kept.sum(axis=(1, 2))
    fit = np.where(counted >= 50, (off * kept).sum(axis=(1, 2)) / np.maximum(counted, 1), 1.0)
    good = np.nonzero(fit < JPEG_FIT)[0]
    return int(JPEG_QUALITIES[good[0]]) if len(good) else 0


def jpeg_error(img: np.ndarray) -> tuple[float, int]:
    """How far a JPEG's rounding moved the photo: the standard deviation of its luma error (0..1), and the libjpeg
    quality it was saved at; (0, 0) where the photo shows no JPEG's steps (at quality 95 and above they are too fine
    to read, and the error is small). Read from the photo alone: the 8x8 grid where its steps are (a crop moves it),
    the quality whose table the low-frequency coefficients sit on, and then, per frequency, the error of a kept
    coefficient (uniform over its step) and of a dropped one (the coefficient itself: under half a step, from the
    Laplacian its dropped share implies, the usual model of DCT coefficients). On the project's 18 clean photos saved
    at qualities 30, 60 and 85, whole and as 192 px crops off the grid, it reads 100 of 108, the quality within 3 and
    the error at 0.66-1.87x the true one (median 1.16x); on the defect space's other families it reads nothing
    (bench/results/photoagent_generalise_jpeg.txt)."""
    h, w = np.shape(img)[:2]
    # a window of the photo (the error is a share over blocks): a 12-megapixel photo costs what 1 megapixel does
    top, left = max(0, (h - JPEG_WINDOW) // 2), max(0, (w - JPEG_WINDOW) // 2)
    y = _jpeg_luma(img[top:top + JPEG_WINDOW, left:left + JPEG_WINDOW])
    if min(y.shape) < 4 * BLOCK:
        return 0.0, 0
    # the grid where each axis steps most across 8 px, then the next most likely (a textured or lettered photo can
    # hide a fine JPEG's steps): the boundaries fall between pixel phase + 8k and the next, so blocks start one after
    starts = [(np.argsort(-_grid_profile(y / 255.0, axis))[:2] + 1) % BLOCK if y.shape[axis] > 2 * BLOCK else [0]
              for axis in (0, 1)]
    quality, coef = 0, None
    for top, left in sorted(((int(t), int(l)) for t in starts[0] for l in starts[1]),
                            key=lambda tl: (tl[0] != starts[0][0]) + (tl[1] != starts[1][0])):
        coef = _block_dct(y, top, left)
        quality = _jpeg_quality(coef) if len(coef) >= 16 else 0
        if quality:
            break
    if not quality:
        return 0.0, 0
    step = JPEG_TABLES[quality - 1]
    kept = (np.abs(coef) >= step / 2).mean(axis=0)
    half = step / 2
    # a frequency no block kept has a size the photo does not tell: counted as none
    dropped_share = np.where(kept > 0, 1 - kept, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = np.where(dropped_share > 0, -half / np.log1p(-dropped_share), 1.0)  # a share under 1: some block kept it
        tail = np.exp(-half / scale)
        # E[x^2 | |x| < half] of a Laplacian of this scale
        dropped = np.where(dropped_share > 0, (2 * scale * scale - tail * (half * half + 2 * half * scale + 2 * scale * scale))
                           / np.maximum(1 - tail, 1e-12), 0.0)
    variance = float((kept * step * step / 12 + dropped_share * dropped).sum()) / (BLOCK * BLOCK)
    return math.sqrt(max(variance, 0.0)) / 255.0, quality


# --- deblock --------------------------------------------------------------------------

def _deblock_columns(x: np.ndarray, phase: int, limit: float, strength: float) -> np.ndarray:
    """Smooth the steps across the grid's vertical boundaries (between columns ``phase + 8k`` and the next).

    A step ``delta`` (what the boundary adds to the slope inside the blocks either side) is spread into a ramp
    over four pixels each side where it is below ``limit`` (a quantisation step, not an edge) and the blocks
    either side are smooth (texture hides the grid and the ramp would blur it); soft weights, so no new seam
    appears where the decision flips."""
    w = x.shape[1]
    bounds = np.arange(phase, w - 1, BLOCK)
    bounds = bounds[(bounds >= 3) & (bounds + 4 <= w - 1)]
    if len(bounds) == 0 or limit <= 0:
        return x
    taps = np.arange(4)
    p = x[:, bounds[:, None] - taps]  # H x nb x 4 x C: p0 (at the boundary) .. p3
    q = x[:, bounds[:, None] + 1 + taps]
    delta = (q[:, :, 0] - p[:, :, 0]) - 0.5 * ((p[:, :, 0] - p[:, :, 1]) + (q[:, :, 1] - q[:, :, 0]))
    activity = (np.abs(np.diff(p, axis=2)).mean(axis=2) + np.abs(np.diff(q, axis=2)).mean(axis=2)) / 2
    weight = strength * np.clip(1.5 - np.abs(delta) / limit, 0, 1) * np.clip(1.5 - activity / (0.5 * limit), 0, 1)
    ramp = (0.5 * (1 - taps / 4)).astype(np.float32)  # 1/2 at the boundary to 1/8: a ramp over 8 pixels
    change = (weight * delta)[:, :, None, :] * ramp[None, None, :, None]
    out = x.copy()
    out[:, bounds[:, None] - taps] += change  # boundaries 8 apart: no pixel is written twice
    out[:, bounds[:, None] + 1 + taps] -= change
    return out


def _deblock_plane(x: np.ndarray, phases: tuple[int, int], limit: float, strength: float) -> np.ndarray:
    x = _deblock_columns(x, phases[0], limit, strength)
    return _deblock_columns(x.transpose(1, 0, 2), phases[1], limit, strength).transpose(1, 0, 2)


def deblock(img, strength=0.7):
    """Remove JPEG blocking and ringing. The grid and how heavy it is are measured on the image itself, not
    pinned to the whole photo's: a crop has the grid at its own offset, and a reduced copy has none to remove."""
    def f(c):
        lum = luminance(c)
        if strength <= 0 or min(lum.shape) < 2:
            return c
        blocky, px, py = _grid(lum)
        lvl = float(np.clip((blocky - 1.05) / 1.0, 0.0, 1.0))  # 0: no grid .. 1: a heavy JPEG's
        # a heavy JPEG's quantisation steps reach a few hundredths; larger steps are edges
        limit = (0.005 + 0.03 * lvl) * (0.5 + strength)
        if c.shape[2] == 1:
            planes = c.astype(np.float32)
        else:  # luma and two colour differences: JPEG quantises chroma harder, so those get more smoothing
            y = lum[:, :, None]
            planes = np.concatenate([y, c[:, :, [0, 2]] - y], axis=2).astype(np.float32)
        planes = _deblock_plane(planes, (px, py), limit, min(1.0, strength * 1.2))
        # mosquito noise: a mild edge-preserving filter, as strong as the grid says the compression was
        sigma = (0.01 + 0.08 * lvl) * strength
        if sigma > 0.004:
            smooth = bilateral_filter(planes[:, :, :1] if c.shape[2] > 1 else planes, 5, sigma, 1.5)
            if c.shape[2] == 1:
                planes = smooth
            else:  # each colour difference on its own (OpenCV's filter takes 1 or 3 channels)
                planes = np.stack([smooth[:, :, 0]] + [bilateral_filter(np.ascontiguousarray(planes[:, :, i]), 7,
                                                                         sigma * 3, 3.0) for i in (1, 2)], axis=2)
        if c.shape[2] == 1:
            return planes
        y, cr, cb = planes[:, :, 0], planes[:, :, 1], planes[:, :, 2]
        r, b = y + cr, y + cb
        g = (y - 0.2126 * r - 0.0722 * b) / 0.7152
        return np.stack([r, g, b], axis=2)
    return on_color(f)(img)


# --- impulse noise --------------------------------------------------------------------------

IMPULSE_MARGIN = 0.2  # how far past all eight neighbours a pixel must stand to count as an impulse


def _neighbour_range(plane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least and the greatest of each pixel's eight neighbours, the border mirrored (scipy's "reflect"): shifted
    views of the padded plane, several times faster than a footprint filter on the search's small crops."""
    padded = np.pad(plane, 1, mode="symmetric")
    h, w = plane.shape
    views = [padded[dy:dy + h, dx:dx + w] for dy, dx in RING]
    low, high = views[0].copy(), views[0].copy()
    for view in views[1:]:
        np.minimum(low, view, out=low)
        np.maximum(high, view, out=high)
    return low, high


def impulse_share(lum: np.ndarray, margin: float = IMPULSE_MARGIN) -> float:
    """The share of pixels that stand alone in a smooth surround: brighter than all eight neighbours by more than
    ``margin``, or darker than all of them by as much, where those neighbours themselves span less than ``margin``.
    Salt-and-pepper noise, dead or hot pixels and dust make them anywhere. A photo's own detail hardly ever does:
    optics spread even a star over several pixels (clean photos here: 0-0.034%, the deep field's stars the most), and
    the lone extremes an over-sharpened or over-contrasted photo has sit beside edges, not in smooth surrounds (up to
    0.4% counted without the surround's test, 0.12% with it)."""
    plane = _plane(lum)
    if min(plane.shape) < 3:
        return 0.0
    low, high = _neighbour_range(plane)
    alone = (plane > high + margin) | (plane < low - margin)
    return float((alone & (high - low < margin)).mean())


RING = tuple((dy, dx) for dy in (0, 1, 2) for dx in (0, 1, 2) if (dy, dx) != (1, 1))  # a pixel's 8 neighbours, padded


def _around(padded: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """The eight neighbours of pixels (ys, xs), read from the array padded by one: shape (8, n, ...)."""
    return np.stack([padded[ys + dy, xs + dx] for dy, dx in RING])


def _specks(plane: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Where ``plane`` has pixels that stand alone: more than ``threshold`` from the median of their eight
    neighbours, and alike (within ``threshold``) to no neighbour, or to one that is alike to no other (a pair of
    specks). A line, even at its ends, has pixels alike to two or more. The median is taken only at the candidates,
    which are few in a photo, so a 12-megapixel photo costs the comparisons and little more."""
    padded = np.pad(plane, 1, mode="reflect")
    h, w = plane.shape
    alike = [np.abs(padded[dy:dy + h, dx:dx + w] - plane) <= threshold for dy, dx in RING]
    count = np.sum(alike, axis=0, dtype=np.int8)
    counted = np.pad(count, 1, mode="reflect")
    paired = np.zeros(plane.shape, bool)
    for (dy, dx), same in zip(RING, alike):
        paired |= same & (counted[dy:dy + h, dx:dx + w] <= 1)
    ys, xs = np.nonzero((count == 0) | ((count == 1) & paired))
    far = np.abs(plane[ys, xs] - np.median(_around(padded, ys, xs), axis=0)) > threshold
    return ys[far], xs[far]


def remove_impulses(img, threshold=0.2):
    """Replace each pixel that stands alone (``_specks``, in any channel) by the median of its eight neighbours, in
    every channel; every other pixel is kept exactly. Two passes: a speck beside a third one is found once that one
    is gone."""
    def f(c):
        out = np.array(c, np.float32)
        for _ in range(2):
            hit = np.zeros(out.shape[:2], bool)
            for k in range(out.shape[2]):
                hit[_specks(out[:, :, k], threshold)] = True
            if not hit.any():
                break
            ys, xs = np.nonzero(hit)
            out[ys, xs] = np.median(_around(np.pad(out, ((1, 1), (1, 1), (0, 0)), mode="reflect"), ys, xs), axis=0)
        return out
    return on_color(f)(img)


# --- blur estimation --------------------------------------------------------------------

def _welch_power(lum: np.ndarray) -> np.ndarray | None:
    """The power spectrum of ``lum`` (uncentred) averaged over overlapping Hann-windowed tiles (Welch), so the photo's
    own content averages out while what every tile shares (a blur kernel's zeros, a noise floor) stays; None where the
    photo is under 64 px."""
    h, w = lum.shape
    n = 128 if min(h, w) >= 128 else 64 if min(h, w) >= 64 else 0
    if n == 0:
        return None
    step = n // 2
    ys, xs = np.arange(0, h - n + 1, step), np.arange(0, w - n + 1, step)
    ys, xs = ys[np.linspace(0, len(ys) - 1, min(len(ys), 10)).astype(int)], xs[
        np.linspace(0, len(xs) - 1, min(len(xs), 10)).astype(int)]  # at most 100 tiles on a large photo
    tiles = np.stack([lum[y:y + n, x:x + n] for y in ys for x in xs]).astype(np.float64)
    tiles -= tiles.mean(axis=(1, 2), keepdims=True)
    window = np.hanning(n)
    return (np.abs(sfft.fft2(tiles * np.outer(window, window), workers=2)) ** 2).mean(axis=0)


def _floor(power: np.ndarray) -> float:
    """The noise floor of a centred Welch power spectrum (``_cepstrum``'s): its median beyond NOISE_BAND, where a
    blurred photo keeps nothing but its noise, its 8-bit steps and its codec's rounding."""
    return float(np.median(power[_radii(power.shape[0]) / power.shape[0] > NOISE_BAND]))


def floor_sigma(lum: np.ndarray) -> float:
    """The standard deviation of the white noise whose spectrum would lie at the photo's noise floor (``_floor``): the
    rounding of 8 bits or of a JPEG too fine for ``jpeg_error`` to read counts, where the finest diagonal detail
    (``_noise_sigma``) misses what a codec dropped. A sharp photo's own fine detail counts as well, so it reads high
    there; a deconvolution only asks it of a blurred photo."""
    lum = np.asarray(lum, np.float32)
    power = _welch_power(lum[:, :, 0] if lum.ndim == 3 else lum)
    if power is None:
        return 0.0
    window = np.hanning(power.shape[0])
    # white noise of standard deviation s lies at s^2 (sum of w^2)^2 in a Welch spectrum of window w
    return math.sqrt(_floor(np.fft.fftshift(power))) / float((window ** 2).sum())


def _cepstrum(power: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The power cepstrum of a Welch power spectrum (``_welch_power``'s, uncentred): the inverse transform of its log,
    centred, and the spectrum centred: a disc gives a negative ring at about twice its radius, a linear motion two
    negative points at its length along its direction."""
    cepstrum = np.fft.fftshift(sfft.ifft2(np.log(power + 1e-12 * power.mean() + 1e-20), workers=2).real)
    return cepstrum, np.fft.fftshift(power)


def _along_over_across(power: np.ndarray, length: float, angle: float) -> float:
    """Log of the mean power within 15 degrees of the line's direction over that within 15 degrees across it, at
    frequencies from 1/length (where a line that long has smeared detail away; 0.2 at most) to 0.45 cycles per px."""
    n = power.shape[0]
    c = n // 2
    yy, xx = np.mgrid[-c:n - c, -c:n - c] / n
    radius = np.hypot(yy, xx)
    off = np.abs((np.degrees(np.arctan2(-yy, xx)) - angle + 90.0) % 180.0 - 90.0)  # 0 along the line, 90 across
    band = (radius > min(1.0 / max(length, 1.0), 0.2)) & (radius < 0.45)
    along, across = power[band & (off < 15.0)], power[band & (off > 75.0)]
    return float(np.log((along.mean() + 1e-20) / (across.mean() + 1e-20)))


FallOff = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None  # _fall_off's reading: fy, fx, f, log power


def _fall_off(power: np.ndarray) -> FallOff:
    """What the Gaussian fits read of a power spectrum (centred, ``_cepstrum``'s): each sample's frequency (fy, fx and
    f, cycles per px) and its log power, within GAUSS_BAND. Noise and 8-bit steps lay a flat floor under the spectrum,
    which a blur cannot push below: it is taken off, and only what stands FLOOR_MARGIN floors above it is read.
    None where too little is left to fit."""
    n = power.shape[0]
    c = n // 2
    yy, xx = np.mgrid[-c:n - c, -c:n - c] / n
    f = (_radii(n) / n).ravel()
    p = power.ravel()
    floor = _floor(power)
    above = p - floor
    band = (f > GAUSS_BAND[0]) & (f < GAUSS_BAND[1]) & (above > FLOOR_MARGIN * floor)
    if band.sum() < 50:
        return None
    return yy.ravel()[band], xx.ravel()[band], f[band], np.log(above[band] + 1e-20)


def _width(curvature: float) -> float:
    """A Gaussian's width (px) from the curvature c of the log power in f^2: sigma = sqrt(c) / (2 pi), negative where
    the fall-off bends the other way."""
    return float(np.sign(curvature) * math.sqrt(abs(curvature)) / (2 * math.pi))


def _gaussian_sigma(read: FallOff) -> float:
    """The width (px) of a Gaussian blur that the photo's power spectrum falls off by (``read``: ``_fall_off``'s reading
    of it). A photo's spectrum falls as a power of the frequency, a Gaussian blur of sigma multiplies it by
    exp(-4 pi^2 sigma^2 f^2): a least-squares fit of the log power by a + b log f - c f^2 gives sigma. A Gaussian's
    spectrum has no zeros, so the cepstrum, which looks for them, cannot measure one."""
    if read is None or read[2].max() < 2 * GAUSS_BAND[0]:
        return 0.0
    _, _, f, log_power = read
    design = np.stack([np.ones(len(f)), np.log(f), f ** 2], axis=1)
    return _width(-np.linalg.lstsq(design, log_power, rcond=None)[0][2])


def _gaussian_widths(read: FallOff) -> tuple[float, float, float]:
    """The widest and narrowest fall-off of the spectrum over directions (px, as ``_gaussian_sigma``, from the same
    ``read``), and the
    direction the blur is widest in the photo (degrees counter-clockwise from horizontal, as a motion line's): the same
    fit with a quadratic form in (fy, fx) in place of f^2. A Gaussian of covariance S multiplies the power spectrum by
    exp(-4 pi^2 f'Sf), so the form is S's: its eigenvalues give the two widths, its eigenvectors their directions."""
    if read is None:
        return 0.0, 0.0, 0.0
    fy, fx, f, log_power = read
    design = np.stack([np.ones(len(f)), np.log(f), fy * fy, 2 * fy * fx, fx * fx], axis=1)
    coef = np.linalg.lstsq(design, log_power, rcond=None)[0]
    values, vectors = np.linalg.eigh(-np.array([[coef[2], coef[3]], [coef[3], coef[4]]]))
    down, across = vectors[:, 1]  # the wider's direction, as (row, column): rows run down
    return _width(values[1]), _width(values[0]), math.degrees(math.atan2(-down, across)) % 180.0


def _radii(n: int) -> np.ndarray:
    c = n // 2
    yy, xx = np.mgrid[-c:n - c, -c:n - c]
    return np.hypot(yy, xx)


def gaussian_confidence(width: float) -> float:
    """How surely a fall-off read as a Gaussian ``width`` px wide (a round one's sigma, an elongated one's along its
    long axis) is a blur (GAUSS_SIGMA)."""
    lo, hi = GAUSS_SIGMA
    return round(float(np.clip((width - lo) / (hi - lo), 0.0, 1.0)), 3)


def gaussian_reading(sigma: float, wide: float, narrow: float, long_axis: float,
                     isotropy: float | None = None) -> dict:
    """The Gaussian kernel a fall-off reads as (``_gaussian_sigma``'s ``sigma``; ``_gaussian_widths``' widths and long
    axis), with its confidence: round where the narrowest width is at least GAUSS_ISOTROPY of the widest (or
    ``isotropy``, that ratio read otherwise: several crops' median), else elongated (``sigma`` along ``angle``,
    ``sigma_minor`` across it)."""
    if isotropy is None:
        isotropy = narrow / wide if wide > 0 else 0.0
    if isotropy >= GAUSS_ISOTROPY:
        return {"kind": "gaussian", "sigma": sigma, "sigma_minor": 0.0, "angle": 0.0,
                "confidence": gaussian_confidence(sigma)}
    return {"kind": "gaussian", "sigma": round(wide, 2), "sigma_minor": round(max(narrow, MIN_SIGMA_MINOR), 2),
            "angle": round(long_axis, 1) % 180.0, "confidence": gaussian_confidence(wide)}


def _ring_evenness(cep: np.ndarray, radius: float) -> float:
    """How evenly deep a centred cepstrum is on the circle of ``radius`` px: its mean over 36 points of the half
    circle (a real photo's cepstrum is symmetric) over the deepest of them; 0 where none is below 0. A disc's ring is
    about as deep all round; a kernel with zeros on lines puts a few deep points on it."""
    c = cep.shape[0] // 2
    turn = np.linspace(0.0, np.pi, 36, endpoint=False)
    values = ndimage.map_coordinates(cep, [c - radius * np.sin(turn), c + radius * np.cos(turn)], order=1)
    deepest = float(values.min())
    return float(values.mean()) / deepest if deepest < 0 else 0.0


def repeats_at_one_phase(lum: np.ndarray, period: float, angle: float) -> bool:
    """Whether a line of ``period`` px at ``angle`` degrees (a motion reading) is a grid's period: the steps across
    it, folded at the period, peak at one phase in every strip (GRID_STRIPS, GRID_REPEAT). Only for a line within
    GRID_AXIS degrees of a row or a column, where a codec's or a resampling's grid lies; False elsewhere."""
    lum = _plane(lum)
    turn = angle % 180.0
    if period < 2.0 or min(abs(turn - 90.0), turn, 180.0 - turn) > GRID_AXIS:
        return False
    vertical = abs(turn - 90.0) <= GRID_AXIS  # a vertical line repeats down the rows
    steps = np.abs(np.diff(lum, axis=0 if vertical else 1))
    steps = steps if vertical else steps.T  # rows: the boundaries along the repeat; columns: across it
    bins = int(round(period))
    if steps.shape[0] < 2 * period or steps.shape[1] < GRID_STRIPS:
        return False
    phase = np.minimum((np.arange(steps.shape[0]) % period) / period * bins, bins - 1).astype(np.int64)
    count = np.maximum(np.bincount(phase, minlength=bins), 1)
    peaks = []
    for strip in np.array_split(steps, GRID_STRIPS, axis=1):
        profile = np.bincount(phase, strip.mean(axis=1), bins) / count
        top = int(np.argmax(profile))
        rest = (profile.sum() - profile[top]) / (bins - 1)
        if profile[top] < GRID_REPEAT * rest:
            return False
        peaks.append(top)
    return all(min((p - peaks[0]) % bins, (peaks[0] - p) % bins) <= 1 for p in peaks)


def unless_grid(reading: dict, lum: np.ndarray) -> dict:
    """A blur reading of ``lum``, or no kernel where it is a line that is a grid's period (``repeats_at_one_phase``);
    ``grid`` then says the line's length."""
    if reading["kind"] == "motion" and repeats_at_one_phase(lum, reading["length"], reading["angle"]):
        return {**reading, "kind": "none", "confidence": 0.0, "grid": reading["length"]}
    return reading


def estimate_blur(lum: np.ndarray, kind: str = "auto") -> dict:
    """The blur of a photo: ``{"kind": "none" | "defocus" | "motion" | "gaussian", "radius": px (defocus),
    "length": px and "angle": degrees counter-clockwise from horizontal (motion; a Gaussian's long axis), "sigma": px
    (the Gaussian the spectrum falls off by; an elongated one's along its long axis), "sigma_minor": px (an elongated
    Gaussian's across it; 0: round), "confidence": 0..1}``, with the fall-off's raw readings (``sigma`` a round fit's,
    ``isotropy``, ``wide``, ``narrow`` and ``long_axis``) whatever the kind, and the kernel's shape as read (a disc's
    ``evenness``, a line's ``crossed``: RING_EVENNESS, MOTION_CROSS). Defocus and motion from the cepstrum
    (their kernels' zeros), a Gaussian from the spectrum's fall-off (it has no zeros). ``kind`` "defocus", "motion"
    or "gaussian" reports the best kernel of that family even where the photo looks sharp."""
    return blur_of_spectrum(blur_spectrum(lum), kind)


def blur_spectrum(lum: np.ndarray) -> np.ndarray | None:
    """What ``estimate_blur`` reads a kernel from: the luminance's Welch power spectrum (None under 64 px). Computed
    once, it serves a crop's own reading and the crops' pooled one (``pooled_spectrum``)."""
    lum = np.asarray(lum, np.float32)
    return _welch_power(lum[:, :, 0] if lum.ndim == 3 else lum)


def pooled_spectrum(powers: Sequence[np.ndarray | None]) -> np.ndarray | None:
    """Several crops of one photo read as one: their Welch spectra averaged. A shake or a lens blurs the whole frame
    alike, while each crop's content and noise differ, so a kernel's zeros stand out of the pool where a crop's four
    tiles leave them under the fluctuation of its noise floor (a JPEG's or 8 bits' rounding fills the zeros a float
    array keeps). Spectra of another size than the first are left out."""
    powers = [p for p in powers if p is not None]
    powers = [p for p in powers if p.shape == powers[0].shape]
    return np.mean(powers, axis=0) if powers else None


def estimate_blur_pooled(lums: Sequence[np.ndarray], kind: str = "auto") -> dict:
    """``estimate_blur`` of several crops of one photo read as one (``pooled_spectrum``)."""
    return blur_of_spectrum(pooled_spectrum([blur_spectrum(x) for x in lums]), kind)


def blur_of_spectrum(power: np.ndarray | None, kind: str = "auto") -> dict:
    """estimate_blur's reading of a Welch power spectrum (``blur_spectrum``'s; None: too small a photo to read)."""
    none = {"kind": "none", "radius": 0.0, "length": 0.0, "angle": 0.0, "sigma": 0.0, "sigma_minor": 0.0,
            "isotropy": 0.0, "wide": 0.0, "narrow": 0.0, "long_axis": 0.0, "confidence": 0.0}
    if power is None:
        return none
    cep, power = _cepstrum(power)
    read = _fall_off(power)  # once, for both fits
    sigma = round(_gaussian_sigma(read), 2)
    wide, narrow, long_axis = _gaussian_widths(read)
    none.update(sigma=sigma, isotropy=round(narrow / wide, 3) if wide > 0 else 0.0, wide=round(wide, 3),
                narrow=round(narrow, 3), long_axis=round(long_axis, 1))
    n = cep.shape[0]
    c = n // 2
    rr = _radii(n)
    ring = (rr > 2.5) & (rr < n / 3)
    spread = 1.4826 * float(np.median(np.abs(cep[ring] - np.median(cep[ring])))) + 1e-6
    # motion: the deepest point; its twin is the point mirrored through the centre
    at = np.unravel_index(np.argmin(np.where(ring, cep, np.inf)), cep.shape)
    near = cep[at[0] - 1:at[0] + 2, at[1] - 1:at[1] + 2]
    weight = np.clip(-near, 0, None)
    dy = at[0] - c + float((weight.sum(axis=1) * np.arange(-1, 2)).sum() / (weight.sum() + 1e-12))
    dx = at[1] - c + float((weight.sum(axis=0) * np.arange(-1, 2)).sum() / (weight.sum() + 1e-12))
    length = math.hypot(dx, dy)
    angle = math.degrees(math.atan2(-dy, dx)) % 180.0
    # the same distance a quarter turn away: about as deep where the kernel is a square's, not a line's
    side = float(ndimage.map_coordinates(cep, [[c + dx], [c - dy]], order=1)[0])
    crossed = side / float(cep[at]) if cep[at] < 0 else 0.0
    # defocus: the deepest ring of the profile by radius (in half-pixel bins)
    bins = np.round(rr * 2).astype(int)
    counts = np.bincount(bins.ravel())
    profile = np.bincount(bins.ravel(), cep.ravel()) / np.maximum(counts, 1)
    lo, hi = 5, int(n / 3 * 2)
    k = lo + int(np.argmin(profile[lo:hi]))
    a, b, e = profile[k - 1], profile[k], profile[k + 1]
    ring_at = (k + 0.5 * (a - e) / (a - 2 * b + e + 1e-12)) / 2  # parabola through the three bins
    # depths in robust standard deviations of the cepstrum: a sharp photo reaches about 8 at its deepest point
    # and 1 on its deepest ring; blur from the families here gives 10 to 100
    depth_point, depth_ring = -float(cep[at]) / spread, -float(b) / spread
    at_length = profile[min(round(length * 2), len(profile) - 1)]
    isotropy = float(at_length / cep[at]) if cep[at] < 0 else 0.0  # a ring is as deep all round; a point is not
    evenness = _ring_evenness(cep, ring_at)
    defocus = {**none, "kind": "defocus", "radius": round(ring_at / RING_PER_RADIUS, 2), "evenness": round(evenness, 3),
               "confidence": round(float(np.clip((depth_ring - RING_DEPTH[0]) / (RING_DEPTH[1] - RING_DEPTH[0]), 0, 1)
                                         * np.clip(isotropy / 0.3, 0, 1)
                                         * np.clip(evenness / RING_EVENNESS, 0, 1)), 3)}
    full, none_at = MOTION_ANISOTROPY
    alone, crossing = MOTION_CROSS
    smeared = float(np.clip((none_at - _along_over_across(power, length, angle)) / (none_at - full), 0, 1))
    motion = {**none, "kind": "motion", "length": round(length, 2), "angle": round(angle, 1) % 180.0,
              "crossed": round(crossed, 3),
              "confidence": round(float(np.clip((depth_point - MOTION_DEPTH[0]) / (MOTION_DEPTH[1] - MOTION_DEPTH[0]),
                                                0, 1)
                                        * np.clip((0.4 - isotropy) / 0.2, 0, 1) * smeared
                                        * np.clip((crossing - crossed) / (crossing - alone), 0, 1)), 3)}
    gaussian = {**none, **gaussian_reading(sigma, wide, narrow, long_axis)}
    if kind in ("defocus", "motion", "gaussian"):
        return {"defocus": defocus, "motion": motion, "gaussian": gaussian}[kind]
    best = max(defocus, motion, key=lambda e: e["confidence"])
    # a disc of radius r falls off like a Gaussian of about r / 2 up to its first zero (read here at most 0.75 r), a
    # line of length L like one at most 0.17 L wide (GAUSS_PER_LINE): a fall-off wider than the disc's own radius, or
    # than a quarter of the line, is a Gaussian's, whatever ring or point the cepstrum shows
    width = gaussian["sigma"]
    if gaussian["confidence"] >= MIN_CONFIDENCE and (best["confidence"] < MIN_CONFIDENCE or (
            best["kind"] == "defocus" and width > best["radius"]) or (
            best["kind"] == "motion" and width > GAUSS_PER_LINE * best["length"])):
        return gaussian
    return best if best["confidence"] >= MIN_CONFIDENCE else {**none, "confidence": best["confidence"]}


# --- deconvolution ----------------------------------------------------------------------

def blur_kernel(kind: str, radius: float = 0.0, length: float = 0.0, angle: float = 0.0,
                sigma: float = 0.0, sigma_minor: float = 0.0) -> np.ndarray:
    """The point spread function: a disc of ``radius`` px (defocus), a line ``length`` px long at ``angle``
    degrees counter-clockwise (motion), antialiased by supersampling, or a Gaussian of ``sigma`` px (out to 3
    sigma; elongated where ``sigma_minor`` is narrower: ``sigma`` along ``angle``, ``sigma_minor`` across it,
    supersampled); summing to 1."""
    sub = 8

    def fine(half: int) -> np.ndarray:  # sample positions, sub to a pixel, across 2 half + 1 pixels about the centre
        return (np.arange((2 * half + 1) * sub) + 0.5) / sub - half - 0.5

    if kind == "gaussian" and 0 < sigma_minor < sigma:
        half = max(1, math.ceil(3 * sigma))
        g = fine(half)
        a = math.radians(angle)
        x, y = g[None, :], -g[:, None]  # image rows run down
        along, across = x * math.cos(a) + y * math.sin(a), y * math.cos(a) - x * math.sin(a)
        k = np.exp(-0.5 * ((along / sigma) ** 2 + (across / sigma_minor) ** 2))
        k = k.reshape(2 * half + 1, sub, 2 * half + 1, sub).sum(axis=(1, 3))
    elif kind == "gaussian":
        half = max(1, math.ceil(3 * sigma))
        g = np.exp(-0.5 * (np.arange(-half, half + 1) / max(sigma, 1e-3)) ** 2)
        k = np.outer(g, g)
    elif kind == "defocus":
        half = math.ceil(radius) + 1
        g = fine(half)
        inside = (g[:, None] ** 2 + g[None, :] ** 2 <= radius * radius).astype(np.float64)
        k = inside.reshape(2 * half + 1, sub, 2 * half + 1, sub).sum(axis=(1, 3))
    else:
        half = math.ceil(length / 2) + 1
        t = np.linspace(-length / 2, length / 2, max(2, int(length * sub * 2)))
        a = math.radians(angle)
        x, y = t * math.cos(a) + half, -t * math.sin(a) + half  # image rows run down
        k = np.zeros((2 * half + 1, 2 * half + 1))
        x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
        fx, fy = x - x0, y - y0
        for dy, dx, wt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
            np.add.at(k, (y0 + dy, x0 + dx), wt)  # bilinear splats of points along the line
    if k.sum() <= 0:
        k = np.ones((1, 1))
    return (k / k.sum()).astype(np.float64)


def _otf(psf: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The kernel's transform on a ``shape`` grid, centred on the origin (so the result is not shifted)."""
    pad = np.zeros(shape)
    kh, kw = psf.shape
    pad[:kh, :kw] = psf
    pad = np.roll(pad, (-(kh // 2), -(kw // 2)), axis=(0, 1))
    return sfft.rfft2(pad, workers=2)


def _noise_sigma(lum: np.ndarray) -> float:
    """The noise's standard deviation from the finest diagonal detail (median absolute deviation)."""
    h, w = lum.shape[0] // 2 * 2, lum.shape[1] // 2 * 2
    x = lum[:h, :w].astype(np.float64)
    hh = (x[0::2, 0::2] - x[0::2, 1::2] - x[1::2, 0::2] + x[1::2, 1::2]) / 2
    return float(np.median(np.abs(hh)) / 0.6745) if hh.size else 0.0


def _wiener(planes: np.ndarray, psf: np.ndarray, balance: float) -> np.ndarray:
    """Wiener-Tikhonov deconvolution of each plane of an H x W x C stack with a gradient penalty (``balance``):
    the photo is mirrored out by the kernel's size and its outer margin faded into its own blurred copy, so it
    wraps round smoothly for the FFT and the borders do not ring. One plane at a time in single precision, so a
    12-megapixel photo needs a few hundred MiB, not gigabytes."""
    h, w = planes.shape[:2]
    m = max(psf.shape) + 8
    ph, pw = sfft.next_fast_len(h + 2 * m, real=True), sfft.next_fast_len(w + 2 * m, real=True)
    rows = _mirror(np.arange(-m, ph - m), h)
    cols = _mirror(np.arange(-m, pw - m), w)
    otf = _otf(psf, (ph, pw)).astype(np.complex64)

    def taper(n, size):  # 1 on the photo, falling smoothly to 0 halfway round the wrapped margin
        j = np.arange(n)
        after, before = j - (m + size - 1), m - j  # pixels past the photo's far and near edge
        d = np.where(j >= m + size, np.minimum(after, n - j + m), np.where(j < m, np.minimum(before, j + 1 + n - m - size), 0))
        return (0.5 + 0.5 * np.cos(np.pi * np.clip(d / ((n - size) / 2), 0, 1))).astype(np.float32)

    wgt = taper(ph, h)[:, None] * taper(pw, w)[None, :]
    fy = np.fft.fftfreq(ph)[:, None]
    fx = np.fft.rfftfreq(pw)[None, :]
    grad = (2 * np.sin(np.pi * fy)) ** 2 + (2 * np.sin(np.pi * fx)) ** 2  # |forward difference|^2, both axes
    inverse = (np.conj(otf) / (np.abs(otf) ** 2 + balance * grad)).astype(np.complex64)
    del grad
    out = np.empty((h, w, planes.shape[2]), np.float32)
    for k in range(planes.shape[2]):
        padded = planes[:, :, k][np.ix_(rows, cols)].astype(np.float32)
        blurred = sfft.irfft2(sfft.rfft2(padded, workers=2) * otf, s=(ph, pw), workers=2)
        padded = wgt * padded + (1 - wgt) * blurred
        del blurred
        out[:, :, k] = sfft.irfft2(sfft.rfft2(padded, workers=2) * inverse, s=(ph, pw), workers=2)[m:m + h, m:m + w]
    return out


def _mirror(i: np.ndarray, n: int) -> np.ndarray:
    """Indices reflected at both ends (..cba|abc..|..cba), wrapping as often as needed."""
    if n == 1:
        return np.zeros_like(i)
    period = 2 * n
    i = np.mod(i, period)
    return np.where(i >= n, period - 1 - i, i)


def _given(kind: str, radius: float, length: float, angle: float, sigma: float = 0.0,
           sigma_minor: float = 0.0) -> dict | None:
    """The kernel the sizes fix by themselves (a defocus radius > 0; a motion length > 0 and angle >= 0; a Gaussian
    sigma > 0, round, or elongated with sigma_minor > 0 and angle >= 0), else None."""
    if kind == "defocus" and radius > 0:
        return {"kind": "defocus", "radius": radius, "length": 0.0, "angle": 0.0, "sigma": 0.0, "confidence": 1.0}
    if kind == "motion" and length > 0 and angle >= 0:
        return {"kind": "motion", "radius": 0.0, "length": length, "angle": angle, "sigma": 0.0, "confidence": 1.0}
    if kind == "gaussian" and sigma > 0 and (sigma_minor <= 0 or angle >= 0):
        sigma, sigma_minor, angle = _long_axis_first(sigma, sigma_minor, angle)
        return {"kind": "gaussian", "radius": 0.0, "length": 0.0, "angle": angle if sigma_minor > 0 else 0.0,
                "sigma": sigma, "sigma_minor": sigma_minor, "confidence": 1.0}
    return None


def _long_axis_first(sigma: float, sigma_minor: float, angle: float) -> tuple[float, float, float]:
    """An elongated Gaussian given its widths the other way round (``sigma_minor`` the wider): the same kernel with
    ``sigma`` the wider and the angle turned a quarter (an angle still to estimate stays so)."""
    if sigma_minor > sigma > 0:
        return sigma_minor, sigma, (angle + 90.0) % 180.0 if angle >= 0 else angle
    return sigma, sigma_minor, angle


def _resolve(lum: np.ndarray, kind: str, radius: float, length: float, angle: float, sigma: float = 0.0,
             sigma_minor: float = 0.0) -> dict:
    """The kernel to undo: the given sizes where set (radius/length/sigma/sigma_minor > 0, angle >= 0), the rest
    estimated."""
    sigma, sigma_minor, angle = _long_axis_first(sigma, sigma_minor, angle)
    given = _given(kind, radius, length, angle, sigma, sigma_minor)
    if given is not None:
        return given
    sizes = {"defocus": radius > 0, "motion": length > 0, "gaussian": sigma > 0}
    if kind == "auto" and sum(sizes.values()) == 1:  # one size given: that family
        kind = next(k for k, v in sizes.items() if v)
    found = estimate_blur(lum, kind)
    if length <= 0:  # a line read, not given: a grid's period is no shake to undo
        found = unless_grid(found, lum)
    if found["kind"] == "motion":
        found = {**found, "length": length if length > 0 else found["length"],
                 "angle": angle if angle >= 0 else found["angle"]}
    elif found["kind"] == "defocus" and radius > 0:
        found = {**found, "radius": radius}
    elif found["kind"] == "gaussian" and sigma > 0:  # an elongated one's angle still to read (sigma_minor given)
        found = {**found, "sigma": sigma, "sigma_minor": sigma_minor,
                 "angle": angle if angle >= 0 else found["long_axis"]}
    return found


def _kernel_of(blur: dict) -> np.ndarray:
    return blur_kernel(blur["kind"], blur["radius"], blur["length"], blur["angle"], blur.get("sigma", 0.0),
                       blur.get("sigma_minor", 0.0))


def deconvolve(img, kind="auto", strength=0.7, radius=0.0, length=0.0, angle=-1.0, sigma=0.0, sigma_minor=0.0):
    """Undo defocus, motion or Gaussian blur with the kernel estimated from the photo (or given), by Wiener
    deconvolution of the luminance with a gradient penalty that grows with the noise, its change added to every
    channel (the colour differences stay as they came), then a guard against ringing: each channel may leave the
    blurred photo's local range (within the kernel's reach) only a little."""
    lum = luminance(img)
    if kind == "none":  # pinned: the whole photo showed no blur
        return ToolOutput(img, ["no blur to undo was found in the photo"])
    blur = _resolve(lum, kind, float(radius), float(length), float(angle), float(sigma), float(sigma_minor))
    if blur["kind"] == "none" or strength <= 0 or min(lum.shape) < 3:
        return ToolOutput(on_color(lambda c: c)(img), [
            f"no defocus, motion or Gaussian blur found (confidence {blur['confidence']:.2f}); the photo is unchanged"])
    psf = _kernel_of(blur)
    # a JPEG's rounding is noise to a deconvolution too, and its own noise reading misses it (the codec drops the finest
    # detail it reads): without it, heavy ringing on a photo saved at quality 85 (docs/notes/2026-11-generalisation.md)
    noise = math.hypot(_noise_sigma(lum), jpeg_error(img)[0])
    # and so is the rounding of 8 bits or of a JPEG too fine for jpeg_error to read (quality 95), which lies at the
    # spectrum's floor, where the finest diagonal detail misses what the codec dropped
    noise = max(noise, floor_sigma(lum))
    # the penalty: enough to keep noise and 8-bit steps from being amplified; lower strength = more penalty
    balance = (1000 * noise * noise + 3e-3) * 10 ** (1.5 * (0.7 - strength))

    # only the luminance is deconvolved, and its change added to every channel: a JPEG keeps colour at half the
    # resolution and rounds it coarser than the luma, and deconvolving each channel raised those colour errors, so a
    # right kernel took the photo further from its sharp original in colour as it came closer in structure
    # (docs/notes/2026-11-generalisation.md, "The colour left as it came")
    change = _wiener(lum[:, :, None].astype(np.float32), psf, balance) - lum[:, :, None]
    reach = max(3, (max(psf.shape) // 2) * 2 + 1)

    def f(c):
        sharp = c + change
        # ringing guard: true edges restored from a blur stay within the blurred range over the kernel's reach, in
        # each channel (a plane at a time, and in place, to keep a 12-megapixel photo's temporaries small): the
        # luminance's detail added to a channel flat where the luminance has an edge stays within that channel's range
        for k in range(c.shape[2]):
            plane = np.ascontiguousarray(c[:, :, k])  # one copy for both filters (OpenCV reads contiguous planes)
            lo, hi = minimum_filter(plane, reach), maximum_filter(plane, reach)
            slack = 0.02 + 0.1 * (hi - lo)
            np.clip(sharp[:, :, k], lo - slack, hi + slack, out=sharp[:, :, k])
        sharp -= c
        sharp *= min(1.0, strength / 0.7)
        sharp += c
        return sharp
    what = {"defocus": f"a defocus blur of radius {blur['radius']:.1f} px",
            "motion": f"a motion blur of {blur['length']:.1f} px at {blur['angle']:.0f} degrees",
            "gaussian": f"a Gaussian blur of sigma {blur.get('sigma', 0.0):.1f} px" + (
                f" by {blur['sigma_minor']:.1f} px, the wider at {blur['angle']:.0f} degrees"
                if blur.get("sigma_minor", 0.0) > 0 else "")}[blur["kind"]]
    return ToolOutput(on_color(f)(img), [f"deconvolved {what} (confidence {blur['confidence']:.2f}), in the luminance"])


def _deconvolve_forward(img, params):
    """The blur the deconvolution undid, applied again to its result: the photo it says it was given. Only for a
    kernel the params fix (the rule perceiver's calls give its size); an estimated one is not known here."""
    blur = _given(params["kind"], float(params["radius"]), float(params["length"]), float(params["angle"]),
                  float(params.get("sigma", 0.0)), float(params.get("sigma_minor", 0.0)))
    if blur is None:
        return None
    psf = _kernel_of(blur).astype(np.float32)
    return on_color(lambda c: np.stack([ndimage.convolve(c[:, :, k], psf, mode="nearest")
                                        for k in range(c.shape[2])], axis=2))(img)


def _deconvolve_pins(img, params):
    """The kernel measured on the whole photo (or its reduced copy), for its crops; sizes given stay given."""
    lum = luminance(img)
    blur = _resolve(lum, params["kind"], float(params["radius"]), float(params["length"]), float(params["angle"]),
                    float(params.get("sigma", 0.0)), float(params.get("sigma_minor", 0.0)))
    if blur["kind"] == "none":
        return {"kind": "none"}
    pins = {"kind": blur["kind"]}
    if blur["kind"] == "gaussian":
        elongated = blur.get("sigma_minor", 0.0) > 0
        if params.get("sigma", 0.0) <= 0:
            pins["sigma"] = blur["sigma"]
            if elongated:
                pins["sigma_minor"] = blur["sigma_minor"]
        if elongated and params["angle"] < 0:
            pins["angle"] = blur["angle"]
    if blur["kind"] == "defocus" and params["radius"] <= 0:
        pins["radius"] = blur["radius"]
    if blur["kind"] == "motion":
        if params["length"] <= 0:
            pins["length"] = blur["length"]
        if params["angle"] < 0:
            pins["angle"] = blur["angle"]
    return pins


# --- colour fringes (lateral chromatic aberration) -------------------------------------------
# A lens that bends red and blue light by different amounts magnifies the red and blue images slightly apart from the
# green one, about the optical centre: edges grow red and blue fringes that widen toward the corners. The measure is
# that magnification, a relative scale (the fringe at the corner is the scale times the half-diagonal), so it reads
# the same on a reduced copy as on the photo.
FRINGE_SIDE = 256  # read on a copy at most this long
FRINGE_STEP = 0.01  # a Gauss-Newton step moves the scale at most this much ...
FRINGE_MAX = 0.03  # ... and the estimate stays within this (3% of the half-diagonal: 55 px at the corner of 12 MP)
FRINGE_CLIP = (0.02, 0.98)  # a channel this near black or white may be clipped
FRINGE_POINTS = 4000  # edge points read (evenly thinned)
FRINGE_QUARTER_POINTS = 100  # fewest in each quarter of the photo
FRINGE_SPREAD, FRINGE_SLACK = 2.5, 0.001  # how far the quarters' scales may differ and still be one lens's
FRINGE_AGREEMENT = 0.2  # a channel whose detail follows green's less than this gives no estimate (nothing shared)


def _detail(rgb: np.ndarray) -> np.ndarray:
    """Edges without the flat tones (a band-pass), per channel: channels of different brightness then differ by a
    gain."""
    return sampled_gaussian(rgb, 0.7) - sampled_gaussian(rgb, 2.0)


def _bilinear(planes: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``planes`` (H x W x C) read at the points (ys, xs), bilinearly, edges repeated: N x C."""
    h, w, c = planes.shape
    ys = np.clip(ys, 0.0, h - 1.0).astype(np.float32)
    xs = np.clip(xs, 0.0, w - 1.0).astype(np.float32)
    y0 = np.minimum(ys.astype(np.int32), h - 2)
    x0 = np.minimum(xs.astype(np.int32), w - 2)
    fy, fx = (ys - y0)[:, None], (xs - x0)[:, None]
    flat = planes.reshape(h * w, c)
    at = y0 * w + x0
    top = flat.take(at, axis=0)
    top += (flat.take(at + 1, axis=0) - top) * fx
    bottom = flat.take(at + w, axis=0)
    bottom += (flat.take(at + w + 1, axis=0) - bottom) * fx
    top += (bottom - top) * fy
    return top


def _lens_scale(ref: np.ndarray, moving: np.ndarray, ys: np.ndarray, xs: np.ndarray, cy: float, cx: float) -> float:
    """The scale k about (cy, cx) at which ``moving`` (a detail plane) read at c + (p - c)(1 + k) matches ``ref``
    (the green detail at the points p = (ys, xs)) up to a gain, by least squares in a few Gauss-Newton steps: read in
    each quarter of the photo on its own. A lens magnifies about its centre, so every quarter shows the same scale; a
    coloured object's edges or noise give each quarter its own. The median of four that agree (one sign, the largest
    within FRINGE_SPREAD times the smallest plus FRINGE_SLACK), else 0; 0 as well when a quarter's detail does not
    follow green's, or has too few edges to tell."""
    planes = np.stack([moving, *np.gradient(moving)], axis=2)  # the detail and its y and x gradients, read together
    dy, dx = ys - cy, xs - cx
    quarter = (ys > cy).astype(np.int64) * 2 + (xs > cx)
    count = np.bincount(quarter, minlength=4).astype(np.float64)
    if count.min() < FRINGE_QUARTER_POINTS:
        return 0.0  # a quarter with no edges cannot confirm the others
    member = np.zeros((4, len(quarter)), np.float64)  # sums over each quarter, several at once, as one product
    member[quarter, np.arange(len(quarter))] = 1.0
    ref64 = ref.astype(np.float64)
    s_rr, s_r = (member @ np.stack([ref64 * ref64, ref64], axis=1)).T
    k = np.zeros(4)
    for _ in range(5):
        grow = 1.0 + k[quarter]
        read = _bilinear(planes, cy + dy * grow, cx + dx * grow).astype(np.float64)
        seen = read[:, 0]
        slope = read[:, 2] * dx + read[:, 1] * dy
        # per quarter, seen + slope * step ~ gain * ref: the 2x2 normal equations of (gain, step)
        s_ss, s_rs, s_rb, s_sb, s_bb, s_b = (member @ np.stack(
            [slope * slope, ref64 * slope, ref64 * seen, slope * seen, seen * seen, seen], axis=1)).T
        det = s_rr * s_ss - s_rs * s_rs
        if np.any(np.abs(det) < 1e-18):
            return 0.0
        gain = (s_ss * s_rb - s_rs * s_sb) / det
        step = (s_rs * s_rb - s_rr * s_sb) / det
        spread_ref = np.sqrt(np.maximum(s_rr / count - (s_r / count) ** 2, 0.0))
        spread_seen = np.sqrt(np.maximum(s_bb / count - (s_b / count) ** 2, 1e-18))
        if not (np.all(np.isfinite(step)) and np.all(gain * spread_ref / spread_seen >= FRINGE_AGREEMENT)):
            return 0.0  # some quarter's detail does not follow green's
        step = np.clip(step, -FRINGE_STEP, FRINGE_STEP)
        k = np.clip(k + step, -FRINGE_MAX, FRINGE_MAX)
        if np.abs(step).max() < 5e-5:  # 0.005% of the half-diagonal: a hundredth of a pixel at 256 px
            break
    size = np.abs(k)
    if (np.all(k > 0) or np.all(k < 0)) and size.max() <= FRINGE_SPREAD * size.min() + FRINGE_SLACK:
        return float(np.median(k))
    return 0.0


def fringe_scales(img: np.ndarray) -> tuple[float, float]:
    """How much the red and the blue image are magnified about the centre relative to the green one (0: aligned;
    0.01: the red edges sit 1% of the half-diagonal further out at the corners). Read on a copy at most FRINGE_SIDE
    long, at the strongest green edges away from the centre, where a scale shows, in each quarter (_lens_scale).
    (0, 0) for a grey image."""
    rgb = to_rgb(img)  # a grey image comes back with three equal channels, and reads (0, 0) below
    if min(rgb.shape[:2]) < 32:
        return 0.0, 0.0
    small = np.asarray(resize_longest(rgb, FRINGE_SIDE), np.float32)
    if float(np.abs(small[..., 0] - small[..., 1]).max()) + float(np.abs(small[..., 2] - small[..., 1]).max()) < 1e-6:
        return 0.0, 0.0
    h, w = small.shape[:2]
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    detail = _detail(small)
    ref = detail[..., 1]
    yy, xx = np.mgrid[0:h, 0:w]
    outer = np.hypot(yy - cy, xx - cx) > 0.2 * 0.5 * math.hypot(h, w)  # near the centre a scale moves nothing
    inner = (yy >= 4) & (yy < h - 4) & (xx >= 4) & (xx < w - 4)
    # a channel clipped at black or white moves its edges by itself (a blown highlight, a pushed saturation): those
    # edges say nothing of the lens
    r, g, b = small[..., 0], small[..., 1], small[..., 2]
    clipped = ((np.maximum(np.maximum(r, g), b) >= FRINGE_CLIP[1])
               | (np.minimum(np.minimum(r, g), b) <= FRINGE_CLIP[0])).view(np.uint8)
    clipped = ndimage.maximum_filter1d(ndimage.maximum_filter1d(clipped, 7, 0), 7, 1).view(bool)
    strength = np.abs(ref)
    pick = outer & inner & ~clipped & (strength >= np.percentile(strength, 80)) & (strength > 1e-4)
    ys, xs = np.nonzero(pick)
    every = max(1, len(ys) // FRINGE_POINTS)  # evenly thinned: a few thousand edges fix one scale
    ys, xs = ys[::every], xs[::every]
    values = ref[ys, xs]
    ys, xs = ys.astype(np.float32), xs.astype(np.float32)
    return (_lens_scale(values, np.ascontiguousarray(detail[..., 0]), ys, xs, cy, cx),
            _lens_scale(values, np.ascontiguousarray(detail[..., 2]), ys, xs, cy, cx))


def _catmull_rom(t: np.ndarray) -> tuple[np.ndarray, ...]:
    t2, t3 = t * t, t * t * t
    return (-0.5 * t3 + t2 - 0.5 * t, 1.5 * t3 - 2.5 * t2 + 1.0, -1.5 * t3 + 2.0 * t2 + 0.5 * t, 0.5 * t3 - 0.5 * t2)


def _zoom_axis(plane: np.ndarray, axis: int, factor: float, centre: float) -> np.ndarray:
    """``plane`` read at centre + (i - centre) * factor along ``axis`` (cubic, edges repeated)."""
    n = plane.shape[axis]
    at = centre + (np.arange(n, dtype=np.float64) - centre) * factor
    first = np.floor(at).astype(np.int64)
    weights = _catmull_rom((at - first).astype(np.float32))
    out = np.zeros_like(plane)
    for tap, weight in zip(range(-1, 3), weights):
        index = np.clip(first + tap, 0, n - 1)
        if axis == 0:
            out += plane[index, :] * weight[:, None]
        else:
            out += plane[:, index] * weight[None, :]
    return out


def colour_detail(img: np.ndarray) -> float:
    """How fine a photo's colour is, against its luma: the colour differences' (blue and red minus the luma, as a
    JPEG keeps colour, here with the pack's Rec. 709 luma) energy under a 1 px Gaussian over their energy between 1
    and 2 px, divided by the same ratio of the luma. A 4:2:0 JPEG keeps colour at every other pixel and rebuilds it
    smoothly, so its colour's finest octave is nearly empty; a JPEG at quality 95 shows it as plainly as one at 30,
    where its rounding is too fine to read."""
    rgb = np.asarray(img[:, :, :3], np.float32)
    luma = luminance(rgb)

    def fine_over_coarse(plane: np.ndarray) -> float:
        plane = plane[:, :, None]
        one, two = sampled_gaussian(plane, 1.0), sampled_gaussian(plane, 2.0)
        return float(((plane - one) ** 2).mean()) / (float(((one - two) ** 2).mean()) + 1e-12)

    colour = fine_over_coarse(rgb[:, :, 2] - luma) + fine_over_coarse(rgb[:, :, 0] - luma)
    return colour / (fine_over_coarse(luma) + 1e-12)


def fix_fringes(img, strength=1.0, *, red=None, blue=None, centre_x=None, centre_y=None):
    """Lateral chromatic aberration: the red and blue images scaled back onto the green one about the optical
    centre (the photo's centre), by the scales measured on the photo (``fringe_scales``) unless given. ``red``,
    ``blue``, ``centre_x``, ``centre_y``: what was measured on the whole photo, so a crop of it is treated as part of
    it (the centre in the crop's pixels)."""
    if img.shape[2] < 3:
        return ToolOutput(img.copy(), ["a grey photo has no colour fringes; unchanged"])
    if red is None or blue is None:
        red, blue = fringe_scales(img)
    h, w = img.shape[:2]
    cx = (w - 1) / 2.0 if centre_x is None else float(centre_x)
    cy = (h - 1) / 2.0 if centre_y is None else float(centre_y)
    scales = (float(red) * strength, float(blue) * strength)
    if max(abs(v) for v in scales) < 1e-5:
        return ToolOutput(img.copy(), ["no colour fringes measured; the photo is unchanged"])
    # a JPEG keeps colour at half the resolution (4:2:0, as libjpeg, Pillow and most cameras save it) and rebuilds each
    # channel's fine detail from the luma, which is aligned: only the colour's coarse part carries the fringes, and
    # moving the fine detail too would misalign it (docs/notes/2026-11-generalisation.md)
    coarse_colour = jpeg_error(img)[1] > 0 or colour_detail(img) < HALF_COLOUR_DETAIL

    def f(c):
        out = np.array(c, np.float32)
        for channel, k in zip((0, 2), scales):
            if abs(k) < 1e-5:
                continue
            plane = out[:, :, channel]
            moved = _zoom_axis(_zoom_axis(plane, 1, 1 + k, cx), 0, 1 + k, cy)
            if coarse_colour:  # the move at the colour's resolution: about a pixel's Gaussian
                moved = plane + sampled_gaussian(moved - plane, JPEG_CHROMA_SIGMA)
            # the cubic's overshoot at a step is not detail: the channel keeps its own range
            out[:, :, channel] = np.clip(moved, float(plane.min()), float(plane.max()))
        return out
    half = 0.5 * math.hypot(h, w)
    return ToolOutput(on_color(f)(img), [f"red scaled by {-scales[0]:+.2%} and blue by {-scales[1]:+.2%} about the "
                                         f"centre (fringes of {abs(scales[0]) * half:.1f} and {abs(scales[1]) * half:.1f}"
                                         f" px at the corners)" + ("; at the colour's resolution, the photo's colour being"
                                                                   " at half resolution (a JPEG)" if coarse_colour else "")])


def _fringe_pins(img, params):
    """The scales measured on the whole photo (or its reduced copy) and its centre, for its crops."""
    red, blue = fringe_scales(img)
    h, w = img.shape[:2]
    return {"red": red, "blue": blue, "centre_x": (w - 1) / 2.0, "centre_y": (h - 1) / 2.0}


# --- row banding ------------------------------------------------------------------------------------
# A sensor read out row by row can offset whole rows by their own small amounts: fine horizontal stripes. What sets
# them apart from the photo's own horizontal lines (a horizon, text, brickwork) is that each row's offset is its own,
# unlike its neighbours', and the same all along the row. Columns are not read: a periodic texture (brickwork's
# staggered joints) lines its columns up in two places as banding would (brick: 0.009, over the limit).
BAND_REACH = 4  # a row is compared with this many rows on each side


def row_offsets(plane: np.ndarray) -> np.ndarray:
    """Each row's offset from the rows around it (itself left out), the median along it: a photo's content mostly
    cancels, a banding offset does not."""
    around = np.ones(2 * BAND_REACH + 1, np.float32)
    around[BAND_REACH] = 0.0
    around /= around.sum()
    plane = np.asarray(plane, np.float32)  # or a stack of planes, rows on the second-to-last axis
    return row_median(plane - ndimage.correlate1d(plane, around, axis=-2, mode="reflect"))


def row_median(x: np.ndarray) -> np.ndarray:
    """``np.median(x, axis=-1)``, the same values, by sorting: numpy sorts short rows with vector instructions,
    about ten times as fast as its selection runs row by row (the search reads four crops' rows on every state)."""
    ordered = np.sort(x, axis=-1)
    n = x.shape[-1]
    middle = ordered[..., n // 2] if n % 2 else np.mean(ordered[..., n // 2 - 1:n // 2 + 1], axis=-1)
    # as np.median, a row with a NaN has a NaN median (sorting puts NaN last)
    return np.where(np.isnan(ordered[..., -1]), np.float32(np.nan), middle) if n else middle


def banding_sigma(pieces: list[np.ndarray]) -> float:
    """The row banding's standard deviation (0..1 scale) in a photo's luminance, from pieces of it in pairs that share
    their rows ((0, 1) and (2, 3), as metrics.texture_crops cuts them): the part of the row-to-row change of the
    offsets (row_offsets) that both pieces of a pair show, in most rows. Content differs between two places in the same rows and
    changes little from one row to the next; banding is the same along a row and its own in each."""
    if len(pieces) < 4 or min(min(p.shape[:2]) for p in pieces) < 2 * BAND_REACH + 3:
        return 0.0
    same = len({p.shape for p in pieces}) == 1  # as texture_crops cuts them: one call for all (the same values)
    steps = list(np.diff(row_offsets(np.stack(pieces)), axis=-1)) if same else [np.diff(row_offsets(p)) for p in pieces]
    # the median over the rows, not the mean: banding is in every row, a horizon or a pasted edge in a few (a sea's
    # horizon of 0.5 would lift the mean past the limit by itself)
    shared = [float(np.median(steps[a] * steps[b])) for a, b in ((0, 1), (2, 3)) if len(steps[a]) == len(steps[b])]
    # independent offsets of sigma s change by sqrt(2) s from one row to the next, and the median of the square of a
    # normal is 0.455 of its variance
    return math.sqrt(max(0.0, float(np.mean(shared)) / (2.0 * 0.455))) if shared else 0.0


def remove_banding(img, strength=1.0):
    """Each row's own offset (row_offsets) in the luminance, taken out of every channel alike (a readout offset
    brightens a whole row; the colours stay), in three passes: an offset read against its neighbours carries a share
    of theirs. What changes slowly from row to row, like the light across a scene, is the photo's and stays."""
    def f(c):
        out = np.array(c, np.float32)
        lum = luminance(out).astype(np.float32)
        if lum.shape[0] < 2 * BAND_REACH + 3:
            return out
        total = np.zeros(lum.shape[0], np.float32)
        for _ in range(3):
            total += row_offsets(lum - total[:, None]) * strength
        return out - total[:, None, None]
    return ToolOutput(on_color(f)(img), [f"row offsets removed (strength {strength:g})"])


# --- a veil over the whole photo: haze, veiling glare, a fade in linear light -----------------------------------------
# He, Sun and Tang's haze model (2009), I = J t + A (1 - t), with one transmission t for the whole photo: light from
# the airlight A (haze, a lens's stray light, a scan's flare) laid evenly over the scene J. In a scene nearly every
# patch has a pixel near black in some channel (the dark channel prior), so the floor of the dark channel of I / A is
# the veil's share 1 - t. Removing it in linear light, where the veil was added, keeps the scene's own tones; a black
# point in display values (levels) takes the same floor out of every tone alike and darkens the midtones with it.
DARK_PATCH = 15  # px on a <=256 px copy: the dark channel's patch (metrics' veil statistic reads it too)
HAZE_SIDE = 256
MAX_VEIL = 0.9  # never read more than this share of the light as veil (a photo of fog itself)
MAX_STRETCH = 2.0  # nor take out so much that the tonal span more than doubles: a flat scene may be flat by nature


def patch_minimum(planes: np.ndarray, patch: int = DARK_PATCH) -> np.ndarray:
    """Each channel's minimum over every patch x patch square (``imageops.minimum_filter``). Their minimum over the
    channels is the dark channel (He et al.)."""
    return minimum_filter(planes, patch)


def _decode(x: np.ndarray) -> np.ndarray:
    return srgb_decode(np.clip(x, 0.0, 1.0))


def _encode(x: np.ndarray) -> np.ndarray:
    return srgb_encode(np.clip(x, 0.0, 1.0))


def _luma(values: np.ndarray) -> float:
    """The luminance of one colour (a value per channel)."""
    return float(luminance(np.asarray(values, np.float32).reshape(1, 1, -1))[0, 0])


def haze_estimate(img: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(airlight, veil) of a photo (colour channels, display values), per channel in linear light. The airlight: the
    mean of the pixels brightest in the dark channel (He et al.: where the veil is thickest, or the scene's whites). The
    veil: each channel's floor (the 1st percentile of its minimum over 15 px patches, as metrics' veil statistic reads
    the dark channel's) over the airlight, the share of that channel's light the veil holds. Read per channel, the
    veil's own colour comes out of the shadows; read through the airlight's colour, which is the whites' as often as
    the veil's, the shadows were left tinted (a warm airlight read on the astronaut's suit left her helmet brown).
    The airlight is never read dimmer than the photo's mean luminance. Never so much that the tonal span more than
    doubles (_within_stretch)."""
    lin = _decode(resize_longest(img, HAZE_SIDE))
    minima = patch_minimum(lin)
    dark = channel_min(minima)
    air = np.maximum(lin[dark >= np.percentile(dark, 99.9)].mean(axis=0), 1e-3)
    # taking a veil out never brightens a photo on the whole: with one transmission, the result's mean stays at most
    # the photo's exactly when the airlight is no dimmer than that mean. Where the dark channel is about as flat as
    # its floor (a uniform veil over a dark scene, the deep field), its brightest patches are veil over dark ground,
    # not the airlight, and read as one the transmission came out near 0: a gain of 3-5 that raised a JPEG's rounding
    mean = float(luminance(lin).mean())
    if _luma(air) < mean:
        air = air * (mean / _luma(air))
    veil = np.clip(np.percentile(minima, 1.0, axis=(0, 1)) / air, 0.0, MAX_VEIL)
    return tuple(float(a) for a in air), tuple(float(v) for v in veil * _within_stretch(lin, air, veil))


def _within_stretch(lin: np.ndarray, air: np.ndarray, veil: np.ndarray) -> float:
    """The share of ``veil`` (1, or less) whose removal leaves the tonal span (0.5th to 99.5th percentile of the
    luminance, in display values, as metrics reads it) at most MAX_STRETCH times what it was."""
    black, white = np.percentile(_encode(luminance(lin)), [0.5, 99.5])
    ends = _decode(np.array([black, white], np.float32))
    a, veil_light = _luma(air), _luma(air * veil)  # luminance of the airlight and of the veil

    def span(k: float) -> float:
        lo, hi = _encode((ends - k * veil_light) / (1.0 - k * veil_light / a))
        return float(hi - lo)

    allowed = MAX_STRETCH * float(white - black)
    if span(1.0) <= allowed:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(20):  # the span grows with the share taken out
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if span(mid) <= allowed else (lo, mid)
    return lo


def dehaze(img, strength=1.0, *, airlight=None, veil=None):
    """The veil (haze_estimate, or the ``airlight`` and ``veil`` measured on the whole photo) taken out in linear light:
    J = (I - A v) / t, the offset A v each channel's own (the veil's colour), t one transmission for all of them (the
    share of the airlight's luminance the veil leaves), so the scene's colours are not stretched channel by channel (a
    bluish haze over the grey moon, with a gain per channel, came out blue). A scene with no veil (every channel
    reaching black somewhere) is unchanged."""
    def f(c):
        air, share = haze_estimate(c) if airlight is None or veil is None else (airlight, veil)
        v = np.clip(strength * np.asarray(share, np.float32)[:c.shape[2]], 0.0, MAX_VEIL)
        if not (v > 0).any():
            return c
        a = np.asarray(air, np.float32)[:c.shape[2]]
        # one transmission for every channel, as in He et al.'s model (the veil's colour is all in the offset):
        # the share of the airlight's luminance the veil holds
        t = 1.0 - _luma(a * v) / _luma(a)
        return _encode((_decode(c) - a * v) / max(t, 1.0 - MAX_VEIL))
    return ToolOutput(on_color(f)(img), [f"veil taken out in linear light (strength {strength:g})"])


def _haze_pins(img, params):
    """The airlight and veil measured on the whole photo (or its reduced copy), for its crops."""
    air, veil = haze_estimate(split_alpha(img)[0])
    return {"airlight": air, "veil": veil}


# --- too few levels: posterisation ------------------------------------------------------------------------------

LEVEL_GRID = 4095  # values are read on a grid 16 times finer than 8 bits: a step of one 8-bit level spans 16 of it


def _levels(plane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A plane's values on LEVEL_GRID and how many pixels sit at each grid point (a count, not a sort: fast)."""
    grid = np.clip(np.rint(np.asarray(plane, np.float32) * LEVEL_GRID), 0, LEVEL_GRID).astype(np.int32)
    return grid, np.bincount(grid.ravel(), minlength=LEVEL_GRID + 1)


def level_step(plane: np.ndarray) -> float:
    """The typical step between the levels a plane uses, in 8-bit levels: the median gap between neighbouring levels
    in its middle 98%. A camera photo uses every level of its range (1 in an 8-bit file, less in a float one); a
    posterised one jumps from level to level."""
    grid, counts = _levels(plane)
    cumulative = np.cumsum(counts)
    lo, hi = np.searchsorted(cumulative, [0.01 * grid.size, 0.99 * grid.size])  # the 1st and 99th percentiles
    used = np.flatnonzero(counts[lo:hi + 1])
    return float(np.median(np.diff(used))) * 255.0 / LEVEL_GRID if len(used) >= 3 else 0.0


def deband(img, strength=1.0, radius=3.0):
    """Posterisation's steps smoothed back into gradients: each channel is smoothed over ``radius`` px and then held
    within its level's own cell (halfway to the levels on either side), four times over, where a neighbourhood spans
    no more than two neighbouring levels. So the result is a photo that the same posterisation would give again
    (consistent dequantisation, where the photo uses every level of its range): an edge of more than a step stays
    where it is, and a photo that uses every level is left as it was."""
    def f(c):
        out = np.array(c, np.float32)
        for k in range(out.shape[2]):
            grid, counts = _levels(out[:, :, k])
            used = np.flatnonzero(counts)  # the levels the channel uses, in order
            if len(used) < 2:
                continue
            at = np.searchsorted(used, grid)
            below = grid - used[np.maximum(at - 1, 0)]
            above = used[np.minimum(at + 1, len(used) - 1)] - grid
            # the lowest and highest levels have one neighbour: their cell reaches out as far as the step beyond
            # that neighbour (a top level far above the rest is an edge, and smoothing would pull it over)
            steps = np.diff(used)
            first, last = (min(steps[0], steps[1]), min(steps[-1], steps[-2])) if len(steps) > 1 else (steps[0],) * 2
            below = np.where(at == 0, first, below)
            above = np.where(at == len(used) - 1, last, above)
            # a level's cell reaches halfway to each neighbour (a hair less, so a value smoothed to its edge still rounds
            # to its own level): steps may widen from level to level, as in a posterisation in linear light
            lo, hi = (grid - 0.49 * below) / LEVEL_GRID, (grid + 0.49 * above) / LEVEL_GRID
            plane = out[:, :, k]
            smooth = plane
            for _ in range(4):
                smooth = np.clip(sampled_gaussian(smooth, radius), lo, hi).astype(np.float32)
            # only where a 5x5 neighbourhood spans at most two neighbouring levels (a plateau, or a step between two):
            # wider spans are texture or an edge, which the levels kept
            flat = ndimage.maximum_filter(at, 5) - ndimage.minimum_filter(at, 5) <= 1
            out[:, :, k] = plane + strength * flat * (smooth - plane)
        return out
    return ToolOutput(on_color(f)(img), [f"steps between levels smoothed (strength {strength:g}, radius {radius:g} px)"])


def _F(name, desc, default, lo, hi, effect="", neutral=0.0, pixels=False):
    return Param(name, "float", desc, default=default, minimum=lo, maximum=hi, effect=effect, neutral=neutral,
                 pixels=pixels)


RESTORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("remove_impulses", "Remove salt-and-pepper specks, dead or hot pixels and dust spots.",
             "Use for isolated pixels far brighter or darker than everything around them. Each is replaced by the "
             "median of its neighbours; every other pixel is kept exactly, so unlike denoise it softens nothing. A "
             "photo with no such pixels is returned unchanged.",
             (_F("threshold", "how far from its neighbours a pixel must stand", 0.2, 0.05, 0.8,
                 "Lower removes fainter specks, and may take small highlights such as stars.", neutral=None),),
             remove_impulses, keywords=("salt and pepper", "specks", "speckles", "dead pixels", "hot pixels",
                                        "stuck pixels", "dust", "impulse noise", "despeckle"),
             conflicts=("remove_impulses",)),  # once the specks are gone, a second pass takes highlights
    ToolSpec("remove_banding", "Remove fine horizontal stripes: rows offset by a sensor's readout.",
             "Use for horizontal banding: thin lines across the photo, each row a little brighter or darker than the "
             "next, seen most in flat areas and at high ISO. Each row's own offset is taken out; what changes slowly "
             "down the photo stays.",
             (_F("strength", "how much of the measured offsets to take out", 1.0, 0.0, 1.0, "Lower takes out part."),),
             remove_banding, keywords=("banding", "stripes", "striping", "row noise", "line noise", "pattern noise",
                                       "horizontal lines"),
             conflicts=("remove_banding",)),  # three passes already: another finds only what is the photo's
    ToolSpec("deband", "Smooth posterisation: steps between too few levels, as in banded skies.",
             "Use for posterised photos, banded gradients in skies or walls, or a GIF-like look. Each channel is "
             "smoothed and held within its own level's step, so edges larger than a step stay and a photo that uses "
             "every level is left unchanged.",
             (_F("strength", "how much of the smoothing to keep", 1.0, 0.0, 1.0, "Lower keeps part of the steps."),
              _F("radius", "smoothing radius in pixels", 3.0, 0.5, 12.0, "Wider for wider steps.", neutral=None,
                 pixels=True)),
             deband, keywords=("posterised", "posterized", "posterisation", "posterization", "banding in the sky",
                               "colour banding", "color banding", "deband", "gradient banding", "8-bit banding"),
             # once held in its cells, a second pass finds the levels filled; a sharpen or a deconvolution after it
             # steepens the ramps it made back into steps
             conflicts=("deband", "sharpen", "deconvolve")),
    ToolSpec("dehaze", "Remove haze, glare or a fade laid evenly over the photo (a veil of light).",
             "Use for hazy, foggy-looking or flared photos whose darkest parts never reach black: a veil of light lies "
             "over everything. The veil's colour and share are measured on the photo (the dark channel prior) and "
             "taken out in linear light, where it was added, so the midtones keep their place; a photo whose darkest "
             "parts reach black is left unchanged.",
             (_F("strength", "how much of the measured veil to take out", 1.0, 0.0, 1.0, "Lower takes out part."),),
             dehaze, keywords=("haze", "remove haze", "foggy", "misty", "veiling glare", "flare", "milky"),
             # measured and taken out at once: a second pass finds nothing
             pins=_haze_pins, conflicts=("dehaze",), pointwise=True),
    ToolSpec("fix_fringes", "Remove the red and blue colour fringes a lens leaves toward the corners.",
             "Use for lateral chromatic aberration: edges fringed red on one side and blue or cyan on the other, the "
             "fringes widening toward the corners. The red and blue images are scaled back onto the green one about "
             "the photo's centre, by the misregistration measured on the photo; an aligned photo is left unchanged.",
             (_F("strength", "how much of the measured misregistration to undo", 1.0, 0.0, 1.0,
                 "Lower undoes part of it."),),
             fix_fringes, keywords=("chromatic aberration", "colour fringes", "color fringes", "fringing",
                                    "purple fringes", "lens fringes"),
             pins=_fringe_pins, pixel_pins=("centre_x", "centre_y"), placed=True, moves_pixels=True,
             conflicts=("fix_fringes",)),  # measured and undone at once: a second pass finds nothing
    ToolSpec("deblock", "Remove JPEG blocks and ringing (mosquito noise) while keeping real edges.",
             "Use for heavily compressed photos showing an 8x8 block grid, blotchy flat areas or buzzing around "
             "edges. Small steps on the grid are smoothed into ramps, large ones (edges) kept; a mild edge-preserving "
             "filter as strong as the measured grid then calms the ringing. Nearly a no-op on a clean photo.",
             (_F("strength", "how much to smooth", 0.7, 0.0, 1.0, "Higher removes more blocking and more fine texture."),),
             deblock, keywords=("jpeg", "jpeg artifacts", "compression artifacts", "blocky", "blocks", "deblock",
                                "mosquito noise", "pixelated", "low quality"),
             conflicts=("sharpen", "deconvolve", "deblock")),  # once the grid is gone, another pass only smooths
    ToolSpec("deconvolve", "Undo defocus, motion or Gaussian blur with a kernel estimated from the photo.",
             "Use for out-of-focus, shaken or softly blurred photos. The blur (a disc for defocus, a line for motion, "
             "a Gaussian, round or elongated, for a soft blur) is measured from the photo's spectrum unless given; a "
             "sharp photo is left as it is. Stronger settings recover more detail and amplify more noise; a JPEG's "
             "rounding, read from the photo's 8x8 blocks, counts as noise. Only the brightness is deconvolved: the "
             "colour stays as it came (a JPEG keeps it at half resolution, and sharpening it raises colour noise).",
             (Param("kind", "enum", "the blur to undo", default="auto",
                    choices=("auto", "defocus", "motion", "gaussian")),
              _F("strength", "how far to go", 0.7, 0.0, 1.0, "Higher = sharper, with more noise."),
              _F("radius", "defocus disc radius in pixels; 0 estimates it", 0.0, 0.0, 20.0, neutral=None, pixels=True),
              _F("length", "motion length in pixels; 0 estimates it", 0.0, 0.0, 40.0, neutral=None, pixels=True),
              _F("angle", "motion direction, or an elongated Gaussian's long axis, in degrees counter-clockwise from "
                 "horizontal; -1 estimates it", -1.0, -1.0, 180.0, neutral=None),
              _F("sigma", "Gaussian blur width in pixels (along its long axis when elongated); 0 estimates it", 0.0,
                 0.0, 10.0, neutral=None, pixels=True),
              _F("sigma_minor", "an elongated Gaussian's width across its long axis in pixels; 0: round (or "
                 "estimated with sigma)", 0.0, 0.0, 10.0, neutral=None, pixels=True)),
             deconvolve, keywords=("deblur", "out of focus", "defocus", "motion blur", "camera shake", "shaky",
                                   "blurry", "unsharp", "deconvolve"),
             pins=_deconvolve_pins, pixel_pins=("radius", "length", "sigma", "sigma_minor"), forward=_deconvolve_forward,
             conflicts=("sharpen", "deconvolve")),  # one kernel undone once; a sharpen on top rings
)
