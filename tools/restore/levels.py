"""Too few levels (posterisation): ``level_step`` measures the step between the levels a plane uses (the readings
share it), ``deband`` smooths the steps back into gradients."""
from __future__ import annotations

import numpy as np
from scipy import ndimage

from ..imageops import on_color, sampled_gaussian
from ..spec import ToolOutput

# --- too few levels: posterisation ------------------------------------------------------------------------------

LEVEL_GRID = 4095  # values are read on a grid 16 times finer than 8 bits: a step of one 8-bit level spans 16 of it


def _levels(plane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A plane's values on LEVEL_GRID and how many pixels sit at each grid point (a count, not a sort: fast)."""
    grid = np.clip(np.rint(np.asarray(plane, np.float32) * LEVEL_GRID), 0, LEVEL_GRID).astype(np.int32)
    return grid, np.bincount(grid.ravel(), minlength=LEVEL_GRID + 1)


def level_step(plane: np.ndarray) -> float:
    """The typical step between the levels a plane uses, in 8-bit levels: the median gap between neighbouring levels
    in its middle 98%. A camera photo uses every level of its range (1 in an 8-bit file, less in a float one); a
    posterised one jumps from level to level."""
    grid, counts = _levels(plane)
    cumulative = np.cumsum(counts)
    lo, hi = np.searchsorted(cumulative, [0.01 * grid.size, 0.99 * grid.size])  # the 1st and 99th percentiles
    used = np.flatnonzero(counts[lo:hi + 1])
    return float(np.median(np.diff(used))) * 255.0 / LEVEL_GRID if len(used) >= 3 else 0.0


def deband(img, strength=1.0, radius=3.0):
    """Posterisation's steps smoothed back into gradients: each channel is smoothed over ``radius`` px and then held
    within its level's own cell (halfway to the levels on either side), four times over, where a neighbourhood spans
    no more than two neighbouring levels. So the result is a photo that the same posterisation would give again
    (consistent dequantisation, where the photo uses every level of its range): an edge of more than a step stays
    where it is, and a photo that uses every level is left as it was."""
    def f(c):
        out = np.array(c, np.float32)
        for k in range(out.shape[2]):
            grid, counts = _levels(out[:, :, k])
            used = np.flatnonzero(counts)  # the levels the channel uses, in order
            if len(used) < 2:
                continue
            at = np.searchsorted(used, grid)
            below = grid - used[np.maximum(at - 1, 0)]
            above = used[np.minimum(at + 1, len(used) - 1)] - grid
            # the lowest and highest levels have one neighbour: their cell reaches out as far as the step beyond
            # that neighbour (a top level far above the rest is an edge, and smoothing would pull it over)
            steps = np.diff(used)
            first, last = (min(steps[0], steps[1]), min(steps[-1], steps[-2])) if len(steps) > 1 else (steps[0],) * 2
            below = np.where(at == 0, first, below)
            above = np.where(at == len(used) - 1, last, above)
            # a level's cell reaches halfway to each neighbour (a hair less, so a value smoothed to its edge still rounds
            # to its own level): steps may widen from level to level, as in a posterisation in linear light
            lo, hi = (grid - 0.49 * below) / LEVEL_GRID, (grid + 0.49 * above) / LEVEL_GRID
            plane = out[:, :, k]
            smooth = plane
            for _ in range(4):
                smooth = np.clip(sampled_gaussian(smooth, radius), lo, hi).astype(np.float32)
            # only where a 5x5 neighbourhood spans at most two neighbouring levels (a plateau, or a step between two):
            # wider spans are texture or an edge, which the levels kept
            flat = ndimage.maximum_filter(at, 5) - ndimage.minimum_filter(at, 5) <= 1
            out[:, :, k] = plane + strength * flat * (smooth - plane)
        return out
    return ToolOutput(on_color(f)(img), [f"steps between levels smoothed (strength {strength:g}, radius {radius:g} px)"])
