"""A sensor's row banding: ``banding_sigma`` measures the rows' own offsets (the readings share it),
``remove_banding`` takes them out."""
from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from ..imageops import luminance, on_color
from ..spec import ToolOutput

# --- row banding ------------------------------------------------------------------------------------
# A sensor read out row by row can offset whole rows by their own small amounts: fine horizontal stripes. What sets
# them apart from the photo's own horizontal lines (a horizon, text, brickwork) is that each row's offset is its own,
# unlike its neighbours', and the same all along the row. Columns are not read: a periodic texture (brickwork's
# staggered joints) lines its columns up in two places as banding would (brick: 0.009, over the limit).
BAND_REACH = 4  # a row is compared with this many rows on each side


def row_offsets(plane: np.ndarray) -> np.ndarray:
    """Each row's offset from the rows around it (itself left out), the median along it: a photo's content mostly
    cancels, a banding offset does not."""
    around = np.ones(2 * BAND_REACH + 1, np.float32)
    around[BAND_REACH] = 0.0
    around /= around.sum()
    plane = np.asarray(plane, np.float32)  # or a stack of planes, rows on the second-to-last axis
    return row_median(plane - ndimage.correlate1d(plane, around, axis=-2, mode="reflect"))


def row_median(x: np.ndarray) -> np.ndarray:
    """``np.median(x, axis=-1)``, the same values, by sorting: numpy sorts short rows with vector instructions,
    about ten times as fast as its selection runs row by row (the search reads four crops' rows on every state)."""
    ordered = np.sort(x, axis=-1)
    n = x.shape[-1]
    middle = ordered[..., n // 2] if n % 2 else np.mean(ordered[..., n // 2 - 1:n // 2 + 1], axis=-1)
    # as np.median, a row with a NaN has a NaN median (sorting puts NaN last)
    return np.where(np.isnan(ordered[..., -1]), np.float32(np.nan), middle) if n else middle


def banding_sigma(pieces: list[np.ndarray]) -> float:
    """The row banding's standard deviation (0..1 scale) in a photo's luminance, from pieces of it in pairs that share
    their rows ((0, 1) and (2, 3), as metrics.texture_crops cuts them): the part of the row-to-row change of the
    offsets (row_offsets) that both pieces of a pair show, in most rows. Content differs between two places in the same rows and
    changes little from one row to the next; banding is the same along a row and its own in each."""
    if len(pieces) < 4 or min(min(p.shape[:2]) for p in pieces) < 2 * BAND_REACH + 3:
        return 0.0
    same = len({p.shape for p in pieces}) == 1  # as texture_crops cuts them: one call for all (the same values)
    steps = list(np.diff(row_offsets(np.stack(pieces)), axis=-1)) if same else [np.diff(row_offsets(p)) for p in pieces]
    # the median over the rows, not the mean: banding is in every row, a horizon or a pasted edge in a few (a sea's
    # horizon of 0.5 would lift the mean past the limit by itself)
    shared = [float(np.median(steps[a] * steps[b])) for a, b in ((0, 1), (2, 3)) if len(steps[a]) == len(steps[b])]
    # independent offsets of sigma s change by sqrt(2) s from one row to the next, and the median of the square of a
    # normal is 0.455 of its variance
    return math.sqrt(max(0.0, float(np.mean(shared)) / (2.0 * 0.455))) if shared else 0.0


def remove_banding(img, strength=1.0):
    """Each row's own offset (row_offsets) in the luminance, taken out of every channel alike (a readout offset
    brightens a whole row; the colours stay), in three passes: an offset read against its neighbours carries a share
    of theirs. What changes slowly from row to row, like the light across a scene, is the photo's and stays."""
    def f(c):
        out = np.array(c, np.float32)
        lum = luminance(out).astype(np.float32)
        if lum.shape[0] < 2 * BAND_REACH + 3:
            return out
        total = np.zeros(lum.shape[0], np.float32)
        for _ in range(3):
            total += row_offsets(lum - total[:, None]) * strength
        return out - total[:, None, None]
    return ToolOutput(on_color(f)(img), [f"row offsets removed (strength {strength:g})"])
