"""The blur kernel estimated from a photo's spectrum: a disc (defocus), a line (motion) or a Gaussian, round or
elongated (``estimate_blur``, ``blur_of_spectrum`` on pooled crops), and the photo's noise floor (``floor_sigma``).

Shared by deconvolve (restore/deconvolution) and the perceiver's kernel readings (agents/photoagent/perceiver); the
figures below were measured on the project's photos and defect space (docs/notes/2026-11-generalisation/).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

from .jpeg import _plane

RING_PER_RADIUS = 1.86  # a disc of radius R puts its cepstral ring at 1.86 R (measured, R = 1.5 to 6 px)
MIN_CONFIDENCE = 0.25  # below this estimate_blur says "none" and deconvolve leaves the photo alone
# A disc is round, so its cepstral ring is as deep all round: the ring's mean over its deepest point (_ring_evenness)
# reads 0.31-0.71 per crop on the calibration photos' defocus discs (0.25 on the few JPEG'd ones still read as discs),
# while a kernel whose zeros lie on lines (a square's, a resampling's) puts four deep points on it and reads about 0.1.
# A disc's confidence scales down below this: deconvolved as a disc, such a blur comes back covered in a fine mesh
# (each frequency where the two kernels differ in sign is restored inverted). Rounding to 8 bits or a JPEG fills the
# zeros and lifts squares to 0.16-0.42, among the discs: there a square still reads as a disc (docs/notes/2026-11-generalisation/)
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
# crops that read a line near an axis (written 2026-12-01 for the probe's screen-copy family; docs/notes/2026-11-generalisation/):
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
# family: docs/notes/2026-11-generalisation/)
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
