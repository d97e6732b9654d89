"""OpenCV's ``sepFilter2D`` on torch: separable correlation with OpenCV's border rules, in one piece for small
images, in cache-sized tiles for large ones, and with OpenCV's own rounding for float64."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import tiles  # its sizes read as tiles.X: set there (as the tests do), they reach this module
from .arrays import _float_image
from .opencv_switch import _like, opencv
from .tiles import _touched

# Along columns a kernel of at least BAND_TAPS taps runs as banded matrix products (BLAS), which beat one
# multiply-add pass per tap; along rows, where the matrices would need the tile transposed, only one longer
# than DIRECT_TAPS does.
BAND_TAPS = 7
DIRECT_TAPS = 25
_CV_BORDERS = {"reflect101": "BORDER_REFLECT_101", "replicate": "BORDER_REPLICATE", "zero": "BORDER_CONSTANT"}


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
    elif x.numel() <= tiles.SMALL_ELEMENTS:
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
    rows = max(block, 1, tiles.TILE_ELEMENTS // (w * c))
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
