"""A JPEG's traces and their removal: the 8x8 grid's visibility (``blockiness``, ``grid_step``), the rounding the
codec left (``jpeg_error``: the quality it was saved at, and the error), and the ``deblock`` tool.

The perceiver and the readings (agents/quality/metrics) read the grid measures; deconvolve and fix_fringes ask
``jpeg_error``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft

from ..imageops import bilateral_filter, luminance, on_color, split_alpha

BLOCK = 8  # the JPEG DCT block


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
