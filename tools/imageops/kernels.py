"""The fixed kernels: Gaussian blurs (OpenCV's sampled kernel, and a band-limited one for sub-pixel widths),
Sobel and Laplacian derivatives."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .arrays import _float_image
from .opencv_switch import _like, opencv
from .separable import correlate_separable

SMALL_SIGMA = 0.8  # below this a sampled Gaussian kernel blurs far less than a Gaussian of that width


def gaussian(img: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of an HxW or HxWxC float image, accurate for any sigma > 0.

    Sub-pixel widths come from the search's reduced copy (a 1.5 px radius is 0.375 px at a quarter of the
    size); a kernel sampled from the Gaussian then nearly equals the identity, so an edit looks free on the
    copy that is not at full size. There the kernel is the band-limited Gaussian instead: its taps are the
    inverse transform of the Gaussian's frequency response over the pixel's band.
    """
    if sigma <= 0:
        return img
    if sigma >= SMALL_SIGMA:
        return sampled_gaussian(img, sigma)
    kernel = _band_limited_kernel(float(sigma))
    return correlate_separable(img, kernel, kernel)


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


@lru_cache(maxsize=64)
def gaussian_kernel(sigma: float) -> np.ndarray:
    """The kernel OpenCV's ``GaussianBlur(img, (0, 0), sigma)`` uses on a float image: round(8 sigma + 1) taps, odd."""
    size = int(np.rint(sigma * 8 + 1)) | 1
    x = np.arange(size) - (size - 1) / 2
    kernel = np.exp(-x * x / (2 * sigma * sigma))
    kernel /= kernel.sum()
    kernel.setflags(write=False)  # shared between calls
    return kernel


def sampled_gaussian(img: np.ndarray, sigma: float) -> np.ndarray:
    """OpenCV's ``GaussianBlur(img, (0, 0), sigma)``: a kernel sampled from the Gaussian, borders reflected."""
    if (cv2 := opencv()) is not None:
        src = _float_image(img)
        return _like(cv2.GaussianBlur(src, (0, 0), float(sigma)), src)
    kernel = gaussian_kernel(float(sigma))
    return correlate_separable(img, kernel, kernel)


def sobel(img: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """OpenCV's ``Sobel(img, CV_32F, dx, dy)`` with its 3x3 kernels: one derivative, either way."""
    if (cv2 := opencv()) is not None:
        src = _float_image(img)
        return _like(cv2.Sobel(src, -1, dx, dy), src)
    derivative, smooth = (-1.0, 0.0, 1.0), (1.0, 2.0, 1.0)
    return correlate_separable(img, derivative if dx else smooth, derivative if dy else smooth)


def laplacian(img: np.ndarray) -> np.ndarray:
    """OpenCV's ``Laplacian(img, CV_32F, ksize=3)``: the kernel [[2, 0, 2], [0, -8, 0], [2, 0, 2]]."""
    src = _float_image(img)
    if (cv2 := opencv()) is not None:
        return _like(cv2.Laplacian(src, -1, ksize=3), src)
    return 2.0 * correlate_separable(src, (1.0, 0.0, 1.0), (1.0, 0.0, 1.0)) - 8.0 * src
