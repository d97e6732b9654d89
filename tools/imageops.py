"""Small image helpers shared by tools and metrics. Images are float32 HxWxC in [0, 1]
with C = 1 (grayscale), 3 (RGB) or 4 (RGBA)."""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

from .backends import require

import numpy as np


def as_image(arr: np.ndarray) -> np.ndarray:
    """Normalise any HxW / HxWxC uint8/uint16/float array to float32 HxWxC in [0, 1]."""
    a = np.asarray(arr)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        raise ValueError(f"expected an HxW or HxWxC image with 1, 3 or 4 channels, got shape {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"image has no pixels (shape {a.shape})")
    if a.dtype == np.uint8:
        return a.astype(np.float32) / 255.0
    if a.dtype == np.uint16:
        return a.astype(np.float32) / 65535.0
    return np.clip(a.astype(np.float32), 0.0, 1.0)


def to_uint8(img: np.ndarray) -> np.ndarray:
    return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def split_alpha(img: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    if img.shape[2] == 4:
        return img[:, :, :3], img[:, :, 3:]
    return img, None


def join_alpha(color: np.ndarray, alpha: np.ndarray | None) -> np.ndarray:
    color = np.clip(color, 0.0, 1.0).astype(np.float32)
    return color if alpha is None else np.concatenate([color, alpha], axis=2)


def on_color(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Apply ``fn`` to the colour channels only; alpha passes through untouched."""
    def apply(img: np.ndarray) -> np.ndarray:
        color, alpha = split_alpha(img)
        return join_alpha(fn(color), alpha)
    return apply


def luminance(img: np.ndarray) -> np.ndarray:
    color, _ = split_alpha(img)
    if color.shape[2] == 1:
        return color[:, :, 0]
    return color[:, :, 0] * 0.2126 + color[:, :, 1] * 0.7152 + color[:, :, 2] * 0.0722


def to_rgb(img: np.ndarray) -> np.ndarray:
    color, _ = split_alpha(img)
    return np.repeat(color, 3, axis=2) if color.shape[2] == 1 else color


def illuminant_estimate(rgb: np.ndarray) -> tuple[np.ndarray, float]:
    """The scene illuminant's colour as log(R/G), log(B/G), and how sure the estimate is (0..1).

    Three estimators that a dominant scene colour fools in different ways: white patch (each
    channel's 99th percentile), shades of gray (Minkowski p = 6 mean) and gray edge (mean gradient
    per channel). Their median is the estimate; the confidence falls as they disagree, so a brown
    coffee table or a red retina is not read as a cast while a tint on everything is.
    """
    cv2 = require("cv2")

    rgb = np.clip(rgb[:, :, :3], 0.0, 1.0).astype(np.float32)
    channels = [np.ascontiguousarray(rgb[:, :, i]) for i in range(3)]
    lum = (channels[0] + channels[1] + channels[2]) / 3
    mid = (lum > 0.03) & (lum < 0.97)
    use = mid if mid.sum() > 100 else np.ones_like(mid)
    white_patch = np.array([np.percentile(c, 99.0) for c in channels])
    sixth = [(c * c) ** 3 for c in channels]  # a cube of squares: much faster than a power of 6
    shades_of_gray = np.power(np.array([float(x[use].mean()) for x in sixth]), 1 / 6)
    smooth = [cv2.GaussianBlur(c, (0, 0), 1.0) for c in channels]  # once per channel, for both gradients
    edges = [np.abs(cv2.Sobel(s, cv2.CV_32F, 1, 0)).mean() + np.abs(cv2.Sobel(s, cv2.CV_32F, 0, 1)).mean()
             for s in smooth]
    estimates = np.array([np.log((e[[0, 2]] + 1e-4) / (e[1] + 1e-4))
                          for e in (white_patch, shades_of_gray, np.array(edges))], np.float64)
    consensus = np.median(estimates, axis=0)
    spread = float(np.linalg.norm(estimates - consensus, axis=1).mean())
    confidence = float(np.clip(1.0 - spread / (np.linalg.norm(consensus) + 0.05), 0.0, 1.0))
    return consensus, confidence


SMALL_SIGMA = 0.8  # below this a sampled Gaussian kernel blurs far less than a Gaussian of that width


def gaussian(img: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of an HxW or HxWxC float image, accurate for any sigma > 0.

    Sub-pixel widths come from the search's reduced copy (a 1.5 px radius is 0.375 px at a quarter of the
    size); a kernel sampled from the Gaussian then nearly equals the identity, so an edit looks free on the
    copy that is not at full size. There the kernel is the band-limited Gaussian instead: its taps are the
    inverse transform of the Gaussian's frequency response over the pixel's band.
    """
    cv2 = require("cv2")

    if sigma <= 0:
        return img
    if sigma >= SMALL_SIGMA:
        return cv2.GaussianBlur(img, (0, 0), sigmaX=sigma)
    kernel = _band_limited_kernel(float(sigma))
    return cv2.sepFilter2D(img, -1, kernel, kernel, borderType=cv2.BORDER_REFLECT_101)


@lru_cache(maxsize=64)
def _band_limited_kernel(sigma: float) -> np.ndarray:
    """7 taps of the band-limited Gaussian (the search asks for the same few widths again and again)."""
    freqs = np.linspace(-0.5, 0.5, 257)
    response = np.exp(-2.0 * (np.pi * sigma * freqs) ** 2)
    taps = np.arange(-3, 4)
    kernel = np.trapezoid(response[None, :] * np.cos(2.0 * np.pi * freqs[None, :] * taps[:, None]), freqs, axis=1)
    kernel = (kernel / kernel.sum()).astype(np.float32)
    kernel.setflags(write=False)  # shared between calls
    return kernel


def resize_longest(img: np.ndarray, longest: int) -> np.ndarray:
    """Downscale (never upscale) so the longest side is at most ``longest`` pixels."""
    cv2 = require("cv2")

    h, w = img.shape[:2]
    scale = longest / max(h, w)
    if scale >= 1.0:
        return img
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    out = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    return out[:, :, None] if out.ndim == 2 else out


def paste_masked(original: np.ndarray, painted: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``painted`` where the H x W mask is 1, ``original`` (exactly) where it is 0, blended between."""
    m = np.clip(mask, 0.0, 1.0)[:, :, None]
    return original * (1.0 - m) + painted * m


def thumbnail_data_url(img: np.ndarray, side: int = 96, quality: int = 80) -> str:
    """A small JPEG as a ``data:`` URL, for trace steps and tree nodes the browser shows
    (a few kB: small enough to stream over the websocket and keep in /history)."""
    import base64

    cv2 = require("cv2")
    arr = np.asarray(img)
    # shrink first: a thumbnail of a 12 MP state (the search's tree shows one per node) need not convert it all
    if arr.dtype in (np.uint8, np.uint16, np.float32, np.float64) and arr.ndim in (2, 3) and min(arr.shape[:2]) > 0:
        arr = resize_longest(arr, side)
    small = to_rgb(as_image(arr))
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(to_uint8(small), cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError(f"could not encode a thumbnail of an image of shape {img.shape}")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")
