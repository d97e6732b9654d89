"""Colour fringes from a lens (lateral chromatic aberration): ``fringe_scales`` measures how far red and blue are
magnified apart from green (the readings share it), ``fix_fringes`` scales them back."""
from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from ..imageops import luminance, on_color, resize_longest, sampled_gaussian, to_rgb
from ..spec import ToolOutput
from .jpeg import HALF_COLOUR_DETAIL, JPEG_CHROMA_SIGMA, jpeg_error

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
    # moving the fine detail too would misalign it (docs/notes/2026-11-generalisation/)
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
