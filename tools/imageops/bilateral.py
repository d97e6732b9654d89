"""OpenCV's ``bilateralFilter``: an edge-preserving mean weighted by distance and colour difference."""
from __future__ import annotations

import math

import numpy as np

from . import tiles  # its sizes read as tiles.X: set there (as the tests do), they reach this module
from .opencv_switch import _like, opencv
from .separable import border_index
from .tiles import _touched


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
    rows = min(h, max(1, tiles.TILE_ELEMENTS // (4 * (w + 2 * r))))
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
