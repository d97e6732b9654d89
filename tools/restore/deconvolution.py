"""The ``deconvolve`` tool: a Wiener deconvolution of the brightness by a disc, a line or a Gaussian kernel, given or
estimated (restore/blur), with a JPEG's rounding and the photo's noise floor counted as noise."""
from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

from ..imageops import luminance, maximum_filter, minimum_filter, on_color
from ..spec import ToolOutput
from .blur import estimate_blur, floor_sigma, unless_grid
from .jpeg import jpeg_error

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
    # detail it reads): without it, heavy ringing on a photo saved at quality 85 (docs/notes/2026-11-generalisation/)
    noise = math.hypot(_noise_sigma(lum), jpeg_error(img)[0])
    # and so is the rounding of 8 bits or of a JPEG too fine for jpeg_error to read (quality 95), which lies at the
    # spectrum's floor, where the finest diagonal detail misses what the codec dropped
    noise = max(noise, floor_sigma(lum))
    # the penalty: enough to keep noise and 8-bit steps from being amplified; lower strength = more penalty
    balance = (1000 * noise * noise + 3e-3) * 10 ** (1.5 * (0.7 - strength))

    # only the luminance is deconvolved, and its change added to every channel: a JPEG keeps colour at half the
    # resolution and rounds it coarser than the luma, and deconvolving each channel raised those colour errors, so a
    # right kernel took the photo further from its sharp original in colour as it came closer in structure
    # (docs/notes/2026-11-generalisation/, "The colour left as it came")
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
