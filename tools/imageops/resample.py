"""OpenCV's ``resize`` (INTER_AREA, INTER_CUBIC) and ``warpAffine`` (bilinear), and a downscale to a longest
side."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import tiles  # its sizes read as tiles.X: set there (as the tests do), they reach this module
from .arrays import _float_image
from .opencv_switch import _like, opencv

CACHED_TAPS = 1 << 20  # resampling tables up to this many taps are kept for the next image of the same size


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
        table, band = torch.from_numpy(x).view(h, w * c), max(1, tiles.TILE_ELEMENTS // (w * c))
        for j0 in range(0, nh, band):
            j1 = min(nh, j0 + band)
            out[j0:j1] = across.columns(down.rows(table, j0, j1).numpy().reshape(j1 - j0, w, c))
    else:
        table, band = torch.from_numpy(across.columns(x)).view(h, nw * c), max(1, tiles.TILE_ELEMENTS // (nw * c))
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
    rows = max(1, tiles.TILE_ELEMENTS // max(1, nw * c))
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


def resize_longest(img: np.ndarray, longest: int) -> np.ndarray:
    """Downscale (never upscale) so the longest side is at most ``longest`` pixels."""
    h, w = img.shape[:2]
    scale = longest / max(h, w)
    if scale >= 1.0:
        return img
    return resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), "area")
