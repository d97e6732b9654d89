"""Small image helpers shared by tools and metrics. Images are float32 HxWxC in [0, 1]
with C = 1 (grayscale), 3 (RGB) or 4 (RGBA).

The filters and resampling below compute what OpenCV's functions of the same purpose compute (same
kernels, border rules and interpolation weights), on torch, numpy and Pillow, which ComfyUI installs.
The pack never installs OpenCV: its wheels all install one package folder, so a pack installing another
wheel than the one already there breaks both. When a working OpenCV is there anyway (another pack brought
it), each filter hands its work to OpenCV's function, which is faster on small images; the results agree
(tests/test_opencv_parity.py). EDIT_AGENTS_OPENCV=0 keeps OpenCV out.
"""
from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from types import ModuleType
from typing import Callable

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
    return np.clip(a.astype(np.float32, copy=False), 0.0, 1.0)  # float32 already: one new array, not two


FLAT_TOLERANCE = 1.5 / 255  # values this close together are one flat colour (a frame, a blank canvas)


def uniform_frame(img: np.ndarray, tolerance: float = FLAT_TOLERANCE, least: float = 0.01, inside: int = 16
                  ) -> tuple[int, int, int, int] | None:
    """The widths (top, bottom, left, right, in px) of a frame of one flat colour around a photo: a border, a mount,
    letterbox or pillarbox bars, a background the photo was pasted on. Rows and columns count while every pixel of
    them is within ``tolerance`` of the corner's colour, each channel; a frame needs two opposite sides at least
    ``least`` of the photo across (and 2 px), and leaves at least ``inside`` px a side within it. None where there is
    none, or the whole image is that one colour. A blown sky touches one side only, so it is no frame. Line by line
    from each edge: a photo with no frame costs four lines, and no copy of the image is made."""
    h, w = img.shape[:2]
    colour = img[0, 0, :3] if img.ndim == 3 else img[0, 0]

    def run(lines) -> int:  # how many lines from an edge are flat
        count = 0
        for line in lines:
            if not (np.abs(line[..., :3] - colour) <= tolerance if line.ndim == 2 else
                    np.abs(line - colour) <= tolerance).all():
                break
            count += 1
        return count

    top = run(img[y] for y in range(h))
    if top == h:
        return None
    bottom = run(img[y] for y in range(h - 1, -1, -1))
    left = run(img[:, x] for x in range(w))
    right = run(img[:, x] for x in range(w - 1, -1, -1))
    tall, wide = max(2, round(least * h)), max(2, round(least * w))
    if not ((top >= tall and bottom >= tall) or (left >= wide and right >= wide)):
        return None
    if min(h - top - bottom, w - left - right) < inside:
        return None
    return top, bottom, left, right


def to_uint8(img: np.ndarray) -> np.ndarray:
    return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def split_alpha(img: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    if img.shape[2] == 4:
        return img[:, :, :3], img[:, :, 3:]
    return img, None


def join_alpha(color: np.ndarray, alpha: np.ndarray | None) -> np.ndarray:
    color = np.clip(color, 0.0, 1.0).astype(np.float32, copy=False)  # float32 already: one new array, not two
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


# px: global readings of a photo (its light; the perceiver's tone and colour statistics, agents/metrics.py) are made on
# a copy at most this long: the same reading whatever the size of the photo or of the search's copy of it, and cheap
# (a white balance of a 12 MP photo read its light on every pixel: 0.6 GB of planes and most of a second)
STATISTICS_SIDE = 256


def scene_light(rgb: np.ndarray) -> np.ndarray:
    """The light a photo was taken under, as log(R/G), log(B/G) (``illuminant_estimate``), read on a copy at most
    ``STATISTICS_SIDE`` long."""
    return illuminant_estimate(resize_longest(rgb, STATISTICS_SIDE))[0]


def illuminant_estimate(rgb: np.ndarray) -> tuple[np.ndarray, float]:
    """The scene illuminant's colour as log(R/G), log(B/G), and how sure the estimate is (0..1).

    Three estimators that a dominant scene colour fools in different ways: white patch (each
    channel's 99th percentile), shades of gray (Minkowski p = 6 mean) and gray edge (mean gradient
    per channel). Their median is the estimate; the confidence falls as they disagree, so a brown
    coffee table or a red retina is not read as a cast while a tint on everything is.
    """
    rgb = np.clip(rgb[:, :, :3], 0.0, 1.0).astype(np.float32)
    channels = channel_planes(rgb)
    lum = (channels[0] + channels[1] + channels[2]) / 3
    mid = (lum > 0.03) & (lum < 0.97)
    use = mid if mid.sum() > 100 else np.ones_like(mid)
    white_patch = np.array([np.percentile(c, 99.0) for c in channels])
    sixth = [(c * c) ** 3 for c in channels]  # a cube of squares: much faster than a power of 6
    shades_of_gray = np.power(np.array([float(x[use].mean()) for x in sixth]), 1 / 6)
    smooth = per_plane(lambda c: sampled_gaussian(c, 1.0), channels)  # once, for both gradients
    across, down = per_plane(lambda c: sobel(c, 1, 0), smooth), per_plane(lambda c: sobel(c, 0, 1), smooth)
    edges = [np.abs(x).mean() + np.abs(y).mean() for x, y in zip(across, down)]
    estimates = np.array([np.log((e[[0, 2]] + 1e-4) / (e[1] + 1e-4))
                          for e in (white_patch, shades_of_gray, np.array(edges))], np.float64)
    consensus = np.median(estimates, axis=0)
    spread = float(np.linalg.norm(estimates - consensus, axis=1).mean())
    confidence = float(np.clip(1.0 - spread / (np.linalg.norm(consensus) + 0.05), 0.0, 1.0))
    return consensus, confidence


def neutral_evidence(rgb: np.ndarray, illuminant: np.ndarray, radius: float = 0.04) -> tuple[float, float]:
    """Where the photo's grey surfaces are: the shares of its midtone pixels whose colour, as log(R/G), log(B/G),
    lies within ``radius`` of neutral and within ``radius`` of ``illuminant`` (the estimated cast).

    Under a real cast every grey surface takes the light's colour, so none stays neutral once the cast is
    larger than twice the radius: the second share is large where the photo has grey surfaces, the first is
    small. A photo whose cast estimate is pulled by a dominant coloured object (orange fruit on a grey
    table) keeps its grey surfaces neutral: the first share is the larger."""
    rgb = np.clip(rgb[::2, ::2, :3], 0.0, 1.0).astype(np.float32)  # every other pixel: a share, 4x cheaper
    lum = channel_mean(rgb)
    use = (lum > 0.06) & (lum < 0.94) & (channel_min(rgb) > 0.02)  # log colour is noise in the darkest pixels
    if use.sum() < 100:
        return 0.0, 0.0
    green = rgb[..., 1][use]
    red, blue = np.log(rgb[..., 0][use] / green), np.log(rgb[..., 2][use] / green)
    near = lambda r, b: float(((red - r) ** 2 + (blue - b) ** 2 < radius * radius).mean())  # noqa: E731
    return near(0.0, 0.0), near(float(illuminant[0]), float(illuminant[1]))


OPENCV_SWITCH = "EDIT_AGENTS_OPENCV"  # "0": the built-in filters even where OpenCV is installed


def opencv() -> ModuleType | None:
    """OpenCV, where a working one is installed and not switched off (OPENCV_SWITCH); else None."""
    if os.environ.get(OPENCV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return _installed_opencv()


@lru_cache(maxsize=1)
def _installed_opencv() -> ModuleType | None:
    try:
        import cv2
        # two OpenCV wheels in one folder can leave a module that imports but lacks its functions
        cv2.GaussianBlur, cv2.sepFilter2D, cv2.bilateralFilter, cv2.createCLAHE  # noqa: B018
    except ImportError:
        return None
    except Exception as err:  # noqa: BLE001 - a broken OpenCV (mixed wheels, numpy ABI) fails in many ways
        logging.getLogger("edit_agents").warning(
            "Edit Agents: OpenCV is installed but does not load (%s: %s); using the built-in filters. "
            "Set %s=0 to skip it.", type(err).__name__, err, OPENCV_SWITCH)
        return None
    return cv2


def _like(out: np.ndarray, src: np.ndarray) -> np.ndarray:
    """OpenCV drops a trailing channel axis of 1: give it back."""
    return out.reshape(*out.shape[:2], *src.shape[2:]) if out.ndim < src.ndim else out


_CV_BORDERS = {"reflect101": "BORDER_REFLECT_101", "replicate": "BORDER_REPLICATE", "zero": "BORDER_CONSTANT"}


def channel_planes(img: np.ndarray) -> list[np.ndarray]:
    """The channels of an HxWxC image, each contiguous: its sums then run in the same order as on an image of
    its own (numpy sums a strided view in another order)."""
    return [np.ascontiguousarray(img[:, :, i]) for i in range(img.shape[2])]


def _channels_folded(img: np.ndarray, fold: np.ufunc) -> np.ndarray:
    out = img[:, :, 0].copy()
    for c in range(1, img.shape[2]):
        fold(out, img[:, :, c], out=out)
    return out


def channel_min(img: np.ndarray) -> np.ndarray:
    """The least of each pixel's channels, ``img.min(axis=2)`` to the bit: elementwise minima of the planes, where
    numpy's reduction over a short last axis runs pixel by pixel (0.02 against 1.3 ms on a 256 px copy)."""
    return _channels_folded(img, np.minimum)


def channel_max(img: np.ndarray) -> np.ndarray:
    """The greatest of each pixel's channels, ``img.max(axis=2)`` to the bit (as channel_min)."""
    return _channels_folded(img, np.maximum)


def channel_mean(img: np.ndarray) -> np.ndarray:
    """The mean of each pixel's channels, ``img.mean(axis=2)`` to the bit (the same sum in the same order, then the
    same division), as sums of the planes: for the same reason as channel_min."""
    total = img[:, :, 0].copy()
    for c in range(1, img.shape[2]):
        total += img[:, :, c]
    return total / img.shape[2]


def per_plane(fn: Callable[[np.ndarray], np.ndarray], planes: list[np.ndarray]) -> list[np.ndarray]:
    """``fn`` (a filter below) of each of ``planes`` (HxW, one size). On small planes the built-in filters pay
    mostly per call, so they take them as the channels of one image: the same values, in one call. Large planes
    go one by one (stacking them would cost more than it saves), and so do OpenCV's, whose one-channel code
    rounds a little differently from its code for several."""
    if opencv() is not None or len(planes) < 2 or planes[0].size * len(planes) > SMALL_ELEMENTS:
        return [fn(p) for p in planes]
    return channel_planes(fn(np.stack(planes, axis=2)))


def in_threads(work: Callable[[int], None], count: int, elements: int) -> None:
    """``work(0) .. work(count - 1)``, for work that lets go of the interpreter (numpy's loops), spread over as
    many threads as the caller lets torch use: a search that keeps torch to one thread gets one. An image of
    ``elements`` values up to SMALL_ELEMENTS is done in this thread: there, starting threads costs more than
    they save."""
    import torch

    threads = min(torch.get_num_threads(), count) if elements > SMALL_ELEMENTS else 1
    if threads < 2:
        for part in range(count):
            work(part)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="edit-agents") as pool:
        for _ in pool.map(work, range(count)):  # in order; the first error is raised here
            pass


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


# ---------------------------------------------------------------------------- filters (OpenCV's, on torch)

# Along columns a kernel of at least BAND_TAPS taps runs as banded matrix products (BLAS), which beat one
# multiply-add pass per tap; along rows, where the matrices would need the tile transposed, only one longer
# than DIRECT_TAPS does.
BAND_TAPS = 7
DIRECT_TAPS = 25
TILE_ELEMENTS = 1 << 20  # rows are filtered in tiles of about this many values
CACHED_TAPS = 1 << 20  # resampling tables up to this many taps are kept for the next image of the same size
SMALL_ELEMENTS = 1 << 18  # up to this many values (a 300 x 300 RGB image), an image is filtered in one piece


def border_index(n: int, lo: int, hi: int, border: str = "reflect101") -> np.ndarray:
    """The source index of positions ``lo .. hi - 1`` along an axis of length ``n`` padded as OpenCV pads:
    'reflect101' (its default: ...dcb|abcd|cba...) or 'replicate' (...aa|abcd|dd...)."""
    i = np.arange(lo, hi)
    if border == "replicate":
        return np.clip(i, 0, n - 1)
    if n == 1:
        return np.zeros_like(i)
    period = 2 * (n - 1)
    i = np.abs(i) % period
    return np.where(i >= n, period - i, i)


def _float_image(img: np.ndarray) -> np.ndarray:
    a = np.asarray(img)
    return np.ascontiguousarray(a, a.dtype if a.dtype in (np.float32, np.float64) else np.float32)


def _band(kernel: np.ndarray, size: int, dtype):
    """``size`` rows of the banded matrix that correlates with ``kernel``: row j holds it at columns j ..."""
    import torch

    taps = len(kernel)
    band = torch.zeros(size, size + taps - 1, dtype=dtype)
    rows = torch.arange(size)[:, None]
    band[rows, rows + torch.arange(taps)] = torch.tensor(kernel, dtype=dtype)
    return band


def _pad(x, py: int, px: int, border: str):
    """A torch (H, W, C) array with ``py`` rows and ``px`` columns of border on each side: one new array, the
    borders copied in (np.pad does the same with several times the overhead, which counts on small images)."""
    import torch
    import torch.nn.functional as F

    src = x.numpy()
    h, w, c = src.shape
    if c == 1 and (border != "reflect101" or (py < h and px < w)):  # torch's own padding: one native call
        mode = {"zero": "constant", "reflect101": "reflect", "replicate": "replicate"}[border]
        return F.pad(x.view(1, 1, h, w), (px, px, py, py), mode=mode).view(h + 2 * py, w + 2 * px, 1)
    out = np.empty((h + 2 * py, w + 2 * px, c), src.dtype)
    out[py:py + h, px:px + w] = src
    if border == "zero":
        out[:py], out[py + h:], out[py:py + h, :px], out[py:py + h, px + w:] = 0, 0, 0, 0
    else:
        out[py:py + h, :px] = src[:, _border_index(w, -px, 0, border)]
        out[py:py + h, px + w:] = src[:, _border_index(w, w, w + px, border)]
        out[:py] = out[py + _border_index(h, -py, 0, border)]
        out[py + h:] = out[py + _border_index(h, h, h + py, border)]
    return torch.from_numpy(out)


@lru_cache(maxsize=256)
def _border_index(n: int, lo: int, hi: int, border: str) -> np.ndarray:
    index = border_index(n, lo, hi, border)
    index.setflags(write=False)  # shared between calls
    return index


def correlate_separable(img: np.ndarray, kernel_x, kernel_y, border: str = "reflect101") -> np.ndarray:
    """OpenCV's ``sepFilter2D``: correlation with ``kernel_x`` along rows and ``kernel_y`` down columns (odd lengths,
    centred), the same size out, of an HxW or HxWxC image, in its float type (float32 for others).
    ``border``: 'reflect101' (OpenCV's default), 'replicate' or 'zero'.

    float64 is rounded as OpenCV rounds it, bit for bit (BRISQUE and NIQE count the exact zeros of flat
    regions, so their scores depend on it); float32 takes a faster order of the same sums.
    """
    import torch

    src = _float_image(img)
    kx, ky = (np.asarray(k, np.float64).ravel() for k in (kernel_x, kernel_y))
    if len(kx) % 2 == 0 or len(ky) % 2 == 0:
        raise ValueError(f"kernels need an odd number of taps, got {len(kx)} and {len(ky)}")
    if border not in _CV_BORDERS:
        raise ValueError(f"unknown border {border!r}: one of {', '.join(_CV_BORDERS)}")
    if (cv2 := opencv()) is not None:
        return _like(cv2.sepFilter2D(src, -1, kx, ky, borderType=getattr(cv2, _CV_BORDERS[border])), src)
    x = torch.from_numpy(src[:, :, None] if src.ndim == 2 else src)
    if x.dtype == torch.float64:
        out = _correlate_exact(x, kx, ky, border)
    elif x.numel() <= SMALL_ELEMENTS:
        out = _correlate_small(x, kx, ky, border)
    else:
        out = _correlate_tiled(x, kx, ky, border)
    return out.numpy().reshape(src.shape)


def _correlate_small(x, kx: np.ndarray, ky: np.ndarray, border: str):
    """An image that fits in cache in one piece: padded once, then one multiply-add pass per tap, each written
    in place. Here a pass costs microseconds, so the few arrays this allocates (and their page faults) and
    the number of torch calls are what count; the reward's statistics and the search's copies come here."""
    import torch

    h, w, _ = x.shape
    py, px = len(ky) // 2, len(kx) // 2
    padded = _pad(x, py, px, border)
    columns = torch.mul(padded[0:h], float(ky[0]))
    for t in range(1, len(ky)):
        columns.add_(padded[t:t + h], alpha=float(ky[t]))
    out = torch.mul(columns[:, 0:w], float(kx[0]))
    for t in range(1, len(kx)):
        out.add_(columns[:, t:t + w], alpha=float(kx[t]))
    return out


def _correlate_exact(x, kx: np.ndarray, ky: np.ndarray, border: str):
    """OpenCV's arithmetic (its x86 build, AVX2 and up): rows first, a fused multiply-add per tap in kernel
    order (torch's add with a factor is one), except in the last (width x channels) mod 4 values of a row,
    which it does four at a time without fusing; then columns, a symmetric kernel as the centre tap plus each
    mirrored pair's sum times its tap, unfused. The whole image at once: only the quality metrics' small gray
    images come here."""
    import torch

    h, w, c = x.shape
    py, px = len(ky) // 2, len(kx) // 2
    padded = _pad(x, py, px, border)
    # few arrays, each written in place: on images this small, fresh memory (its page faults) costs more
    # than the arithmetic
    rows = torch.mul(padded[:, 0:w], kx[0])
    for t in range(1, len(kx)):
        rows.add_(padded[:, t:t + w], alpha=float(kx[t]))
    tail = rows.view(len(rows), w * c)[:, w * c - (w * c) % 4:]
    if tail.shape[1]:
        flat = padded.view(len(padded), -1)
        start = w * c - tail.shape[1]
        unfused = flat[:, start:start + tail.shape[1]] * kx[0]
        for t in range(1, len(kx)):
            unfused = unfused + flat[:, start + t * c:start + t * c + tail.shape[1]] * kx[t]
        tail.copy_(unfused)
    out = rows[py:py + h] * ky[py]
    if np.array_equal(ky, ky[::-1]):
        pair = torch.empty_like(out)
        for t in range(1, py + 1):
            torch.add(rows[py - t:py - t + h], rows[py + t:py + t + h], out=pair)
            out.add_(pair.mul_(float(ky[py - t])))
    else:
        out = rows[0:h] * ky[0]
        for t in range(1, len(ky)):
            out.add_(rows[t:t + h], alpha=float(ky[t]))
    return out


def _touched(buffer: np.ndarray) -> np.ndarray:
    """``buffer`` with its pages mapped by this thread. numpy asks for huge pages for large arrays; when torch's
    threads first write tiles of one at the same time, they fault on the same huge pages, and that costs several
    times the filter (measured at 12 MP: about 170 ms against 15 for one thread writing it first). With small
    pages, the threads' faults do not collide, and a pass of its own would only add time."""
    if _huge_pages():
        buffer.fill(0)
    return buffer


def _huge_pages() -> bool:
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _get_madvise_hugepage
    return bool(_get_madvise_hugepage())


def _correlate_tiled(x, kx: np.ndarray, ky: np.ndarray, border: str):
    """Columns, then rows, in tiles of rows that stay in the CPU's cache; the source is never copied whole."""
    import torch

    h, w, c = x.shape
    py = len(ky) // 2
    out = torch.from_numpy(_touched(np.empty((h, w, c), x.numpy().dtype)))
    if len(ky) > DIRECT_TAPS:
        block = 32 if py < 64 else 64
    elif len(ky) >= BAND_TAPS:
        block = 8
    else:
        block = 0
    rows = max(block, 1, TILE_ELEMENTS // (w * c))
    rows = min(h, rows - rows % block if block else rows)
    band_y = _band(ky, block, x.dtype) if block else None
    taps_y = ky.tolist()
    if border == "zero":
        x, row_index = torch.cat([torch.zeros(py, w, c, dtype=x.dtype), x, torch.zeros(py, w, c, dtype=x.dtype)]), None
    else:
        row_index = torch.from_numpy(border_index(h, -py, h + py, border))
    columns = _RowFilter(kx, w, border, x.dtype)
    vbuf = torch.empty(rows, w, c, dtype=x.dtype)
    for r0 in range(0, h, rows):
        n = min(rows, h - r0)
        if row_index is None:  # zero border: rows r0 .. r0 + n + 2 py of the padded copy
            s = x[r0:r0 + n + 2 * py]
        elif r0 >= py and r0 + n + py <= h:
            s = x[r0 - py:r0 + n + py]
        else:
            s = x.index_select(0, row_index[r0:r0 + n + 2 * py])
        v = vbuf[:n]
        if block:
            flat_s, flat_v = s.reshape(n + 2 * py, w * c), v.view(n, w * c)
            whole = n - n % block  # blocks of rows as one batched product, over overlapping views of the source
            if whole:
                windows = flat_s[:whole + 2 * py].unfold(0, block + 2 * py, block).transpose(1, 2)
                torch.matmul(band_y, windows, out=flat_v[:whole].view(whole // block, block, w * c))
            if n > whole:
                m = n - whole
                torch.mm(band_y[:m, :m + 2 * py], flat_s[whole:], out=flat_v[whole:])
        else:
            torch.mul(s[:n], taps_y[0], out=v)
            for t in range(1, len(taps_y)):
                v.add_(s[t:t + n], alpha=taps_y[t])
        columns(v, out[r0:r0 + n])
    return out


class _RowFilter:
    """Correlation along each row (axis 1) of (n, W, C) tiles, borders as asked."""

    def __init__(self, kernel: np.ndarray, w: int, border: str, dtype):
        import torch

        self.taps, self.p, self.border = kernel.tolist(), len(kernel) // 2, border
        # a long kernel runs down the columns of the tile transposed, as banded products in blocks of rows
        self.block = (32 if self.p < 64 else 64) if len(kernel) > DIRECT_TAPS else 0
        self.band = _band(kernel, self.block, dtype) if self.block else None
        if border != "zero":
            self.edges = [torch.from_numpy(border_index(w, a, b, border)) for a, b in ((-self.p, 0), (w, w + self.p))]
        # the outputs within p of either end read the border: their source columns, worked out once for all tiles
        self.strips = [(lo, hi, self._strip_columns(w, lo, hi)) for lo, hi in ((0, self.p), (w - self.p, w))] \
            if 0 < self.p < w - self.p else []

    def _padded(self, src):
        import torch

        n, w, c = src.shape
        p = self.p
        out = torch.zeros(n, w + 2 * p, c, dtype=src.dtype) if self.border == "zero" else \
            torch.empty(n, w + 2 * p, c, dtype=src.dtype)
        out[:, p:p + w] = src
        if self.border != "zero":
            out[:, :p], out[:, p + w:] = (src.index_select(1, edge) for edge in self.edges)
        return out

    def __call__(self, src, dst) -> None:
        import torch

        n, w, c = src.shape
        p, taps = self.p, self.taps
        if self.band is not None:
            # channels as planes, then each plane's rows as columns: (W + 2p) x (C n), both copies cheap
            columns = self._padded(src).permute(2, 0, 1).reshape(c * n, w + 2 * p).t().contiguous()
            res = torch.empty(w, c * n, dtype=src.dtype)
            whole, block = w - w % self.block, self.block
            if whole:
                windows = columns[:whole + 2 * p].unfold(0, block + 2 * p, block).transpose(1, 2)
                torch.matmul(self.band, windows, out=res[:whole].view(whole // block, block, c * n))
            if w > whole:
                m = w - whole
                torch.mm(self.band[:m, :m + 2 * p], columns[whole:], out=res[whole:])
            dst.copy_(res.t().reshape(c, n, w).permute(1, 2, 0))
            return
        if w <= 2 * p:  # narrower than the kernel: all of it from a padded copy
            padded = self._padded(src)
            torch.mul(padded[:, :w], taps[0], out=dst)
            for t in range(1, len(taps)):
                dst.add_(padded[:, t:t + w], alpha=taps[t])
            return
        inner = dst[:, p:w - p]
        torch.mul(src[:, :w - 2 * p], taps[0], out=inner)
        for t in range(1, len(taps)):
            inner.add_(src[:, t:t + w - 2 * p], alpha=taps[t])
        for lo, hi, columns in self.strips:  # the outputs that read the border, from padded strips
            strip = self._strip(src, columns)
            part = dst[:, lo:hi]
            torch.mul(strip[:, :hi - lo], taps[0], out=part)
            for t in range(1, len(taps)):
                part.add_(strip[:, t:t + hi - lo], alpha=taps[t])

    def _strip_columns(self, w: int, lo: int, hi: int):
        """Where source columns lo - p .. hi + p come from: for the zero border, which of them lie inside and
        their columns; otherwise the column each reads, border rule applied."""
        import torch

        cols = np.arange(lo - self.p, hi + self.p)
        if self.border == "zero":
            inside = (cols >= 0) & (cols < w)
            return len(cols), torch.from_numpy(np.flatnonzero(inside)), torch.from_numpy(cols[inside])
        return torch.from_numpy(border_index(w, lo - self.p, hi + self.p, self.border))

    def _strip(self, src, columns):
        """Source columns lo - p .. hi + p of a tile, the border filled in (``columns``: ``_strip_columns``)."""
        import torch

        if self.border == "zero":
            width, at, cols = columns
            strip = torch.zeros(src.shape[0], width, src.shape[2], dtype=src.dtype)
            strip[:, at] = src[:, cols]
            return strip
        return src.index_select(1, columns)


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


def _rank_filter(planes: np.ndarray, size: int, largest: bool) -> np.ndarray:
    src = _float_image(planes)
    if (cv2 := opencv()) is not None and (src.ndim == 2 or src.shape[2] <= 4):
        square = np.ones((int(size), int(size)), np.uint8)
        return _like((cv2.dilate if largest else cv2.erode)(src, square, borderType=cv2.BORDER_REPLICATE), src)
    from scipy import ndimage

    out, one_way = src, ndimage.maximum_filter1d if largest else ndimage.minimum_filter1d
    for axis in (0, 1):  # one axis after the other: 3x faster than a 2-D filter
        out = one_way(out, int(size), axis=axis, mode="nearest")
    return out


def minimum_filter(planes: np.ndarray, size: int) -> np.ndarray:
    """Each channel's minimum over every ``size`` x ``size`` square, the borders extended (scipy's
    ``minimum_filter(mode="nearest")``; OpenCV's ``erode`` with a square, the same values: the dark channel of every
    state the search reads, about 30x faster than scipy's two passes)."""
    return _rank_filter(planes, size, largest=False)


def maximum_filter(planes: np.ndarray, size: int) -> np.ndarray:
    """Each channel's maximum over every ``size`` x ``size`` square, the borders extended (``minimum_filter``'s
    twin: OpenCV's ``dilate``)."""
    return _rank_filter(planes, size, largest=True)


# ---------------------------------------------------------------------------- resampling (OpenCV's resize)

def _cubic_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """INTER_CUBIC along one axis: 4 taps (a = -0.75), the weights in float32 as OpenCV has them."""
    scale = 1.0 / (n_out / n_in)
    f = (np.arange(n_out) + 0.5) * scale - 0.5
    start = np.floor(f)
    t = (f - start).astype(np.float32)
    a = np.float32(-0.75)
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1
    weights = np.stack([w0, w1, w2, 1 - w0 - w1 - w2], axis=1)
    index = start.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    return np.clip(index, 0, n_in - 1), weights


def _area_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """INTER_AREA shrinking one axis: each output averages the input cells it covers, partial cells weighed
    by the part covered (OpenCV's table, with its 1e-3 tolerance for a part)."""
    scale = 1.0 / (n_out / n_in)
    lo = np.arange(n_out) * scale
    hi = lo + scale
    cell = np.minimum(scale, n_in - lo)
    last = np.minimum(np.floor(hi), n_in - 1).astype(np.int64)
    first = np.minimum(np.ceil(lo).astype(np.int64), last)
    index = first[:, None] - 1 + np.arange(int(math.ceil(scale)) + 2)[None, :]
    head = np.where(first - lo > 1e-3, (first - lo) / cell, 0.0)[:, None]
    tail = np.where(hi - last > 1e-3, np.minimum(np.minimum(hi - last, 1.0), cell) / cell, 0.0)[:, None]
    inner = (1.0 / cell)[:, None]
    last = last[:, None]
    weights = np.where(index < first[:, None], head, np.where(index < last, inner, np.where(index == last, tail, 0.0)))
    return np.clip(index, 0, n_in - 1), weights.astype(np.float32)


def _area_linear_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """INTER_AREA when either axis grows: OpenCV interpolates linearly between two neighbours, with
    weights from how the output cell meets the input cells, on both axes."""
    scale = 1.0 / (n_out / n_in)
    d = np.arange(n_out)
    start = np.floor(d * scale).astype(np.int64)
    t = ((d + 1) - (start + 1) * (n_out / n_in)).astype(np.float32)
    t = np.where(t <= 0, np.float32(0), t - np.floor(t))
    last = start >= n_in - 1
    start, t = np.where(last, n_in - 1, start), np.where(last, np.float32(0), t)
    index = np.clip(start[:, None] + np.arange(2)[None, :], 0, n_in - 1)
    return index, np.stack([1 - t, t], axis=1)


class _Taps:
    """One axis's resampling: each output's nonzero taps (source index, weight) as flat torch arrays, with
    where each output's taps start; applied by torch's embedding bag (one native pass, however irregular).
    Built once per (input length, output length, method): the search resizes copies of the same sizes again
    and again."""

    def __init__(self, index: np.ndarray, weights: np.ndarray, dtype):
        import torch

        keep = weights != 0
        self.outputs = len(index)
        self.starts = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
        # int32 indices are the embedding bag's fastest form; tables here stay far below 2^31 rows
        self.index = torch.from_numpy(index[keep].astype(np.int32))
        self.weights = torch.from_numpy(weights[keep].astype(dtype))
        self.starts32 = torch.from_numpy(self.starts.astype(np.int32))

    def rows(self, table, j0: int, j1: int):
        """Outputs j0 .. j1 - 1 as weighted sums of rows of the 2-D torch ``table``."""
        a, b = int(self.starts[j0]), int(self.starts[j1])
        starts = self.starts32[j0:j1 + 1] - a if a else self.starts32[j0:j1 + 1]
        return self._bags(table, self.index[a:b], self.weights[a:b], starts)

    def columns(self, x: np.ndarray) -> np.ndarray:
        """Every row of an (H, W, C) array resampled along W: the array seen as a table of pixels, each row's
        taps the first row's moved on by the pixels before it."""
        import torch

        h, w, c = x.shape
        # kept for small images only: for a whole large image these tables run to hundreds of megabytes
        bags = _column_bags if h * len(self.index) <= CACHED_TAPS else _column_bags.__wrapped__
        index, weights, starts = bags(self, h, w)
        return self._bags(torch.from_numpy(x).view(h * w, c), index, weights, starts).numpy().reshape(h, self.outputs, c)

    @staticmethod
    def _bags(table, index, weights, starts):
        import torch.nn.functional as F

        return F.embedding_bag(index, table, starts, mode="sum", per_sample_weights=weights, include_last_offset=True)


@lru_cache(maxsize=64)
def _taps(n_in: int, n_out: int, method: str, dtype: str) -> _Taps:
    if method == "cubic":
        weights = _cubic_weights
    elif method == "area":
        weights = _area_weights
    else:
        weights = _area_linear_weights
    return _Taps(*weights(n_in, n_out), np.dtype(dtype))


@lru_cache(maxsize=64)
def _column_bags(taps: _Taps, h: int, w: int):
    """The taps of every row of an H x W image seen as one table of pixels (index, weights, bag starts)."""
    import torch

    count = len(taps.index)
    index = (torch.arange(h, dtype=torch.int32)[:, None] * w + taps.index).view(-1)
    starts = torch.from_numpy(np.concatenate([(np.arange(h)[:, None] * count + taps.starts[:-1]).ravel(),
                                              [h * count]]).astype(np.int32))
    return index, taps.weights.repeat(h), starts


def resize(img: np.ndarray, size: tuple[int, int], method: str = "area") -> np.ndarray:
    """OpenCV's ``resize`` of an HxW or HxWxC image to ``size`` = (width, height): 'area' (INTER_AREA: cell
    averages when shrinking) or 'cubic' (INTER_CUBIC, a = -0.75, not antialiased). A uint8 or uint16 image comes
    back in its own type, rounded, as OpenCV returns it; any other comes back as float."""
    a = np.asarray(img)
    if a.dtype in (np.uint8, np.uint16):
        return np.clip(np.rint(_resize_float(a, size, method)), 0, np.iinfo(a.dtype).max).astype(a.dtype)
    return _resize_float(a, size, method)


def _resize_float(img: np.ndarray, size: tuple[int, int], method: str) -> np.ndarray:
    import torch

    src = _float_image(img)
    h, w = src.shape[:2]
    nw, nh = int(size[0]), int(size[1])
    if (nw, nh) == (w, h):
        return src.copy()
    if method not in ("area", "cubic"):
        raise ValueError(f"unknown resize method {method!r}: 'area' or 'cubic'")
    if (cv2 := opencv()) is not None:
        flags = cv2.INTER_AREA if method == "area" else cv2.INTER_CUBIC
        return _like(cv2.resize(src, (nw, nh), interpolation=flags), src)
    x = src[:, :, None] if src.ndim == 2 else src
    c = x.shape[2]
    # INTER_AREA interpolates linearly on both axes as soon as either grows
    kind = method if method == "cubic" or (nw <= w and nh <= h) else "area-growing"
    down, across = _taps(h, nh, kind, x.dtype.str), _taps(w, nw, kind, x.dtype.str)
    out = np.empty((nh, nw, c), x.dtype)
    # a band of output rows at a time, small enough to stay in cache between the two passes. Shrinking rows,
    # the rows pass comes first, so the columns pass sees fewer rows; growing them, it comes last.
    if nh <= h:
        table, band = torch.from_numpy(x).view(h, w * c), max(1, TILE_ELEMENTS // (w * c))
        for j0 in range(0, nh, band):
            j1 = min(nh, j0 + band)
            out[j0:j1] = across.columns(down.rows(table, j0, j1).numpy().reshape(j1 - j0, w, c))
    else:
        table, band = torch.from_numpy(across.columns(x)).view(h, nw * c), max(1, TILE_ELEMENTS // (nw * c))
        for j0 in range(0, nh, band):
            j1 = min(nh, j0 + band)
            out[j0:j1] = down.rows(table, j0, j1).numpy().reshape(j1 - j0, nw, c)
    return out[:, :, 0] if src.ndim == 2 else out


def warp_affine(img: np.ndarray, matrix: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """OpenCV's ``warpAffine(img, matrix, size, INTER_LINEAR, BORDER_REPLICATE)``: output pixel (x, y) is the
    bilinear sample of ``img`` at the inverse of ``matrix`` (2x3, source to output) applied to (x, y)."""
    import torch

    src = _float_image(img)
    nw, nh = int(size[0]), int(size[1])
    if (cv2 := opencv()) is not None:
        return _like(cv2.warpAffine(src, np.asarray(matrix, np.float64), (nw, nh), flags=cv2.INTER_LINEAR,
                                    borderMode=cv2.BORDER_REPLICATE), src)
    x = torch.from_numpy(src[:, :, None] if src.ndim == 2 else src)
    h, w, c = x.shape
    m = np.vstack([np.asarray(matrix, np.float64), [0.0, 0.0, 1.0]])
    inv = np.linalg.inv(m)[:2]
    out = torch.empty(nh, nw, c, dtype=x.dtype)
    flat = x.reshape(h * w, c)
    xs = torch.arange(nw, dtype=torch.float64)
    rows = max(1, TILE_ELEMENTS // max(1, nw * c))
    for r0 in range(0, nh, rows):
        ys = torch.arange(r0, min(nh, r0 + rows), dtype=torch.float64)[:, None]
        sx = inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]
        sy = inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]
        x0, y0 = torch.floor(sx), torch.floor(sy)
        fx, fy = (sx - x0).to(x.dtype)[..., None], (sy - y0).to(x.dtype)[..., None]
        x0, y0 = x0.long(), y0.long()
        xa, xb = x0.clamp(0, w - 1), (x0 + 1).clamp(0, w - 1)
        ya, yb = y0.clamp(0, h - 1) * w, (y0 + 1).clamp(0, h - 1) * w
        top = flat[ya + xa] * (1 - fx) + flat[ya + xb] * fx
        bottom = flat[yb + xa] * (1 - fx) + flat[yb + xb] * fx
        out[r0:r0 + len(ys)] = top * (1 - fy) + bottom * fy
    result = out.numpy()
    return result[:, :, 0] if src.ndim == 2 else result


# ---------------------------------------------------------------------------- edge-preserving and local filters

def bilateral_filter(img: np.ndarray, diameter: int, sigma_color: float, sigma_space: float) -> np.ndarray:
    """OpenCV's ``bilateralFilter`` of a float HxWxC image: each pixel becomes the mean of the pixels in a disc of
    radius ``diameter // 2`` around it, weighted by exp(-r^2 / 2 sigma_space^2) for the distance r and by
    exp(-d^2 / 2 sigma_color^2) for the colour difference d, the sum of the channels' absolute differences.

    The colour weight between two pixels is the same both ways, so it is computed once per pair of
    opposite offsets and used for both. Rows are done in tiles that stay in the CPU's cache.
    """
    import torch

    src = np.ascontiguousarray(img, np.float32)
    if (cv2 := opencv()) is not None:
        return _like(cv2.bilateralFilter(src, int(diameter), float(sigma_color), float(sigma_space)), src)
    x = torch.from_numpy(src[:, :, None] if src.ndim == 2 else src)
    h, w, c = x.shape
    if float(x.max() - x.min()) < np.finfo(np.float32).eps:  # OpenCV returns a flat image as it is
        return src.copy()
    sigma_color = sigma_color if sigma_color > 0 else 1.0  # OpenCV's defaults for these
    sigma_space = sigma_space if sigma_space > 0 else 1.0
    r = max(diameter // 2 if diameter > 0 else round(sigma_space * 1.5), 1)
    colour, space = -0.5 / sigma_color ** 2, -0.5 / sigma_space ** 2
    offsets = [(dy, dx) for dy in range(0, r + 1) for dx in range(-r, r + 1)
               if (dy, dx) > (0, 0) and dy * dy + dx * dx <= r * r]  # one of each opposite pair
    log_space = {o: torch.tensor(math.log(float(np.float32(math.exp((o[0] ** 2 + o[1] ** 2) * space)))))
                 for o in offsets}
    rows = min(h, max(1, TILE_ELEMENTS // (4 * (w + 2 * r))))
    out = _touched(np.empty((h, w, c), np.float32))
    o = torch.from_numpy(out)
    row_index = torch.from_numpy(border_index(h, -r, h + r))
    left, right = (torch.from_numpy(border_index(w, a, b) + r) for a, b in ((-r, 0), (w, w + r)))
    # per tile: the channels as planes with a border of r, and one plane of ones, whose weighted sum is
    # the sum of the weights
    planes = torch.ones(c + 1, rows + 2 * r, w + 2 * r)
    acc = torch.empty(c + 1, rows, w)
    diff = torch.empty(c, rows + 2 * r, w + 2 * r)
    weight = torch.empty(rows + 2 * r, w + 2 * r)
    for r0 in range(0, h, rows):
        n = min(rows, h - r0)
        block = x[r0 - r:r0 + n + r] if r <= r0 and r0 + n + r <= h else x.index_select(0, row_index[r0:r0 + n + 2 * r])
        colour_planes = planes[:c, :n + 2 * r]
        colour_planes[:, :, r:r + w].copy_(block.permute(2, 0, 1))
        colour_planes[:, :, :r] = colour_planes.index_select(2, left)
        colour_planes[:, :, r + w:] = colour_planes.index_select(2, right)
        total = acc[:, :n]
        centre = planes[:, r:r + n, r:r + w]  # the centre pixel, weight 1: where the sums start
        for dy, dx in offsets:
            # weights of the pair (p, p + (dy, dx)) for every p that needs one: the tile's pixels and those
            # (dy, dx) before them
            y0, y1 = min(0, -dy), n + max(0, -dy)
            x0, x1 = min(0, -dx), w + max(0, -dx)
            d = diff[:, :y1 - y0, :x1 - x0]
            torch.sub(planes[:c, r + y0 + dy:r + y1 + dy, r + x0 + dx:r + x1 + dx],
                      planes[:c, r + y0:r + y1, r + x0:r + x1], out=d).abs_()
            wt = weight[:y1 - y0, :x1 - x0]
            if c == 1:
                wt.copy_(d[0])
            else:  # the channels' absolute differences, summed
                torch.add(d[0], d[1], out=wt)
                for channel in d[2:]:
                    wt.add_(channel)
            torch.addcmul(log_space[(dy, dx)], wt, wt, value=colour, out=wt).exp_()
            forward = (planes[:, r + dy:r + dy + n, r + dx:r + dx + w], wt[-y0:-y0 + n, -x0:-x0 + w])
            if (dy, dx) == offsets[0]:
                torch.addcmul(centre, *forward, out=total)
            else:
                total.addcmul_(*forward)
            total.addcmul_(planes[:, r - dy:r - dy + n, r - dx:r - dx + w],
                           wt[-y0 - dy:-y0 - dy + n, -x0 - dx:-x0 - dx + w])
        torch.div(total[:c], total[c], out=o[r0:r0 + n].permute(2, 0, 1))  # straight into the interleaved output
    return out[:, :, 0] if src.ndim == 2 else out


def clahe_uint16(gray: np.ndarray, clip_limit: float, grid: int) -> np.ndarray:
    """OpenCV's ``createCLAHE(clip_limit, (grid, grid)).apply`` on an HxW uint16 image.

    Each of grid x grid tiles gets a 65536-bin histogram, clipped at clip_limit times the mean bin count
    (as an integer, at least 1) with the excess spread over all bins, and its cumulative sum as a lookup
    table; each pixel blends the tables of the four nearest tile centres bilinearly. An image that does not
    divide into whole tiles is first padded by reflection, as OpenCV pads it (by a whole tile row or column
    where that side did divide).
    """
    import torch

    bins = 65536
    src = np.ascontiguousarray(gray, np.uint16)
    if (cv2 := opencv()) is not None:
        return cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=(int(grid), int(grid))).apply(src)
    h, w = src.shape
    tiles = int(grid)
    if h % tiles or w % tiles:
        th, tw = (h + tiles - h % tiles) // tiles, (w + tiles - w % tiles) // tiles
    else:
        th, tw = h // tiles, w // tiles
    area = th * tw
    # counted straight into float32: exact, as every count and running count below stays under 2^24
    hist = np.empty((tiles * tiles, bins), np.float32)

    def histograms(ty: int) -> None:
        rows = slice(ty * th, (ty + 1) * th) if (ty + 1) * th <= h else border_index(h, ty * th, (ty + 1) * th)
        band = src[rows]
        for tx in range(tiles):
            cols = slice(tx * tw, (tx + 1) * tw) if (tx + 1) * tw <= w else border_index(w, tx * tw, (tx + 1) * tw)
            hist[ty * tiles + tx] = np.bincount(band[:, cols].ravel(), minlength=bins)

    in_threads(histograms, tiles, h * w)
    # on torch (vectorised, both cores); the product and rounding below are OpenCV's, in float32
    counts = torch.from_numpy(hist)
    if clip_limit > 0:
        limit = float(max(int(clip_limit * area / bins), 1))
        excess = (counts - limit).clamp_(min=0).sum(dim=1).numpy().astype(np.int64)  # exact: a sum below 2^24
        counts.clamp_(max=limit)
        counts += torch.from_numpy((excess // bins).astype(np.float32))[:, None]
        for t in np.flatnonzero(excess % bins):  # the rest, one each to every step-th bin from the first
            residual = int(excess[t] % bins)
            step = max(bins // residual, 1)
            counts[t, 0:(residual - 1) * step + 1:step] += 1
    lut = torch.cumsum(counts, dim=1)
    lut.mul_(float(np.float32(bins - 1) / np.float32(area)))
    lut = lut.round_().clamp_(max=bins - 1).numpy().reshape(tiles, tiles, bins)

    def centres(n: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per pixel along an axis: the tiles before and after its place among the tile centres, and how far."""
        f = np.arange(n, dtype=np.float32) * (np.float32(1) / np.float32(size)) - np.float32(0.5)
        before = np.floor(f)
        return np.maximum(before, 0).astype(np.int64), np.minimum(before + 1, tiles - 1).astype(np.int64), f - before

    y1, y2, fy = centres(h, th)
    x1, x2, fx = centres(w, tw)
    out = np.empty((h, w), np.uint16)
    # pixels between the same four tile centres share their tables: one block of them at a time (four tables
    # of 256 KB stay in cache; a whole row of them would not)
    row_cuts = np.flatnonzero(np.diff(y1, prepend=-1) | np.diff(y2, prepend=-1)).tolist() + [h]
    col_cuts = np.flatnonzero(np.diff(x1, prepend=-1) | np.diff(x2, prepend=-1)).tolist() + [w]

    def blend(band: int) -> None:
        ya, yb = row_cuts[band], row_cuts[band + 1]
        wy = fy[ya:yb, None]
        top, bottom = lut[y1[ya]], lut[y2[ya]]
        for xa, xb in zip(col_cuts[:-1], col_cuts[1:]):
            v = src[ya:yb, xa:xb]
            wx = fx[None, xa:xb]
            # indexing with the uint16 values as they are (np.take would first copy them to int64: 3x slower)
            a, b, c, d = (t[v] for t in (top[x1[xa]], top[x2[xa]], bottom[x1[xa]], bottom[x2[xa]]))
            # OpenCV's order, in float32: (a (1 - wx) + b wx) (1 - wy) + (c (1 - wx) + d wx) wy
            a *= 1 - wx
            a += np.multiply(b, wx, out=b)
            a *= 1 - wy
            c *= 1 - wx
            c += np.multiply(d, wx, out=d)
            c *= wy
            a += c
            np.rint(a, out=a)  # within 0 .. 65535: a blend of table values
            out[ya:yb, xa:xb] = a

    # numpy lets go of the interpreter while it gathers from the tables: the bands share the torch threads'
    # cores (2 cores, 12 MP: about 110 ms with the counting above, against 200 in one thread)
    in_threads(blend, len(row_cuts) - 1, h * w)
    return out


def morphology(mask: np.ndarray, radius: int) -> np.ndarray:
    """OpenCV's ``dilate`` (radius > 0) or ``erode`` (radius < 0) of an HxW float mask by its elliptic
    structuring element of size 2 |radius| + 1; pixels outside the mask take no part.

    Row dy of the ellipse spans |dx| <= round(sqrt(k^2 - dy^2)): going from the outer rows in, each row's
    extreme comes from the last one's, widened a pixel at a time. Done in bands of rows that stay in cache.
    """
    import torch

    k = abs(int(radius))
    src = np.ascontiguousarray(mask, np.float32)
    if k == 0:
        return src.copy()
    if (cv2 := opencv()) is not None:
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * k + 1, 2 * k + 1))
        return cv2.dilate(src, kernel) if radius > 0 else cv2.erode(src, kernel)
    m = torch.from_numpy(src)
    pick = torch.maximum if radius > 0 else torch.minimum
    h, w = m.shape
    half = [int(np.rint(math.sqrt(k * k - dy * dy))) for dy in range(k + 1)]
    band = min(h, max(64, 4 * k))
    out = _touched(np.empty((h, w), np.float32))
    span, scratch = torch.empty(band + 2 * k, w), torch.empty(band + 2 * k, w)
    for r0 in range(0, h, band):
        n = min(band, h - r0)
        lo, hi = max(0, r0 - k), min(h, r0 + n + k)  # the rows this band reads
        cur, tmp, width = span[:hi - lo], scratch[:hi - lo], 0
        cur.copy_(m[lo:hi])
        res = torch.from_numpy(out[r0:r0 + n])
        res.fill_(-math.inf if radius > 0 else math.inf)
        for dy in range(k, -1, -1):
            while width < half[dy]:  # one wider either side: max(x - 1, x, x + 1), the edges reading only inside
                if w > 1:
                    pick(cur[:, :-1], cur[:, 1:], out=tmp[:, :-1])
                    tmp[:, -1] = cur[:, -1]
                    pick(tmp[:, 1:], tmp[:, :-1], out=cur[:, 1:])
                    cur[:, 0] = tmp[:, 0]
                width += 1
            for shift in {dy, -dy}:  # output row r0 + i reads row r0 + i + shift, where there is one
                a, b = max(0, lo - r0 - shift), min(n, hi - r0 - shift)
                if a < b:
                    pick(res[a:b], cur[r0 + shift + a - lo:r0 + shift + b - lo], out=res[a:b])
    return out


def resize_longest(img: np.ndarray, longest: int) -> np.ndarray:
    """Downscale (never upscale) so the longest side is at most ``longest`` pixels."""
    h, w = img.shape[:2]
    scale = longest / max(h, w)
    if scale >= 1.0:
        return img
    return resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), "area")


def paste_masked(original: np.ndarray, painted: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``painted`` where the H x W mask is 1, ``original`` (exactly) where it is 0, blended between."""
    m = np.clip(mask, 0.0, 1.0)[:, :, None]
    return original * (1.0 - m) + painted * m


THUMB_SAMPLES = 4  # a thumbnail averages at least this many sampled pixels per pixel along each side


def thumbnail_data_url(img: np.ndarray, side: int = 96, quality: int = 80) -> str:
    """A small JPEG as a ``data:`` URL, for trace steps and tree nodes the browser shows
    (a few kB: small enough to stream over the websocket and keep in /history)."""
    import base64
    import io

    from PIL import Image

    arr = np.asarray(img)
    # shrink first: a thumbnail of a 12 MP state (the search's tree shows one per node) need not convert it all
    if arr.dtype in (np.uint8, np.uint16, np.float32, np.float64) and arr.ndim in (2, 3) and min(arr.shape[:2]) > 0:
        # ... nor average every pixel: every step-th pixel of each row and column still leaves at least
        # THUMB_SAMPLES times the thumbnail's side to average (an area resize of 2048 px cost 12 ms a tree node)
        step = max(arr.shape[:2]) // (side * THUMB_SAMPLES)
        arr = resize_longest(arr[::step, ::step] if step > 1 else arr, side)
    small = to_rgb(as_image(arr))
    buf = io.BytesIO()
    Image.fromarray(to_uint8(small)).save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
