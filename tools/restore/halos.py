"""Halos and ringing an edit made: ``overshoot``, the share of pixels pushed past their neighbourhood's range (the
reward's check of a sharpen or a deconvolution)."""
from __future__ import annotations

import numpy as np

from ..imageops import luminance, maximum_filter, minimum_filter


def _local_range(x: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    return minimum_filter(x, size), maximum_filter(x, size)


def _tone_map(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``before`` through the monotone curve that best maps it to ``after``: a global tone edit (gamma, levels,
    curves) moves every local extreme with it, so it then creates none."""
    bins = 64
    idx = np.clip((before * bins).astype(np.int64), 0, bins - 1).ravel()
    count = np.bincount(idx, minlength=bins)
    mean = np.bincount(idx, after.ravel().astype(np.float64), minlength=bins) / np.maximum(count, 1)
    centres = (np.bincount(idx, before.ravel().astype(np.float64), minlength=bins) / np.maximum(count, 1))[count > 0]
    mean = mean[count > 0]
    if len(mean) < 2:
        return np.full_like(before, float(after.mean()))
    rising = np.corrcoef(before.ravel(), after.ravel())[0, 1] >= 0 if before.std() > 0 and after.std() > 0 else True
    curve = np.maximum.accumulate(mean) if rising else np.minimum.accumulate(mean)
    return np.interp(before, centres, curve).astype(np.float32)


def overshoot(before: np.ndarray, after: np.ndarray, window: int = 5, tolerance: float = 0.02) -> float:
    """The share of pixels (0..1) where an edit made new extremes: ``after``'s luminance leaves the range that
    ``before`` (through the edit's global tone curve) spans in a ``window`` x ``window`` neighbourhood by more
    than ``tolerance``. Halos and ringing of a sharpen or deconvolution raise it; tone edits leave it near 0."""
    b = luminance(before) if np.ndim(before) == 3 else np.asarray(before, np.float32)
    a = luminance(after) if np.ndim(after) == 3 else np.asarray(after, np.float32)
    if a.shape != b.shape:
        raise ValueError(f"overshoot compares images of one size, got {b.shape} and {a.shape}")
    lo, hi = _local_range(_tone_map(b, a), window)
    return float(((a > hi + tolerance) | (a < lo - tolerance)).mean())
