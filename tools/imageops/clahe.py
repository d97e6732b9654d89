"""OpenCV's CLAHE (contrast-limited adaptive histogram equalisation) on a uint16 image."""
from __future__ import annotations

import numpy as np

from .opencv_switch import opencv
from .separable import border_index
from .tiles import in_threads


def clahe_uint16(gray: np.ndarray, clip_limit: float, grid: int) -> np.ndarray:
    """OpenCV's ``createCLAHE(clip_limit, (grid, grid)).apply`` on an HxW uint16 image.

    Each of grid x grid tiles gets a 65536-bin histogram, clipped at clip_limit times the mean bin count
    (as an integer, at least 1) with the excess spread over all bins, and its cumulative sum as a lookup
    table; each pixel blends the tables of the four nearest tile centres bilinearly. An image that does not
    divide into whole tiles is first padded by reflection, as OpenCV pads it (by a whole tile row or column
    where that side did divide).
    """
    src = np.ascontiguousarray(gray, np.uint16)
    if (cv2 := opencv()) is not None:
        return cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=(int(grid), int(grid))).apply(src)
    h, w = src.shape
    tiles = int(grid)
    if h % tiles or w % tiles:
        th, tw = (h + tiles - h % tiles) // tiles, (w + tiles - w % tiles) // tiles
    else:
        th, tw = h // tiles, w // tiles
    return _blended(src, _tables(src, tiles, th, tw, clip_limit), tiles, th, tw)


def _tables(src: np.ndarray, tiles: int, th: int, tw: int, clip_limit: float) -> np.ndarray:
    """Each tile's lookup table (tiles x tiles x 65536): its histogram clipped, the excess spread over all bins,
    summed and scaled to the levels."""
    import torch

    bins = 65536
    h, w = src.shape
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
    return lut


def _blended(src: np.ndarray, lut: np.ndarray, tiles: int, th: int, tw: int) -> np.ndarray:
    """Each pixel from the tables of the four tile centres nearest it, blended bilinearly as OpenCV blends."""
    h, w = src.shape

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
