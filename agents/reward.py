"""Classic no-reference reward: image statistics that need no model weights.

Each component maps a raw statistic to [0, 1] (1 = good). The reward is the weighted
mean of the components minus a content-preservation penalty (1 - structure similarity to
the input), so edits improve a photo instead of replacing it: PhotoAgent's failure cases
are over-edits. Learned components (aesthetic, CLIP, ImageReward, VLM) and BRISQUE/NIQE
plug into the same ``RewardConfig`` weights when they exist.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..tools.backends import require
from ..tools.imageops import luminance, neutral_pixels, resize_longest, to_rgb

# Ideal bands, chosen from typical well-exposed photographs (sRGB values in 0..1).
IDEAL_MEAN_LUMA = 0.47
IDEAL_CONTRAST = (0.19, 0.30)  # RMS contrast (std of luminance)
GOOD_COLOURFULNESS = 0.16  # Hasler-Suesstrunk spread term on a 0..1 scale (~40 on 0..255)
METRIC_SIDE = 512  # statistics are computed on a copy at most this long: fast, size-independent

DEFAULT_WEIGHTS: dict[str, float] = {
    "exposure": 1.0,
    "clipping": 1.0,
    "contrast": 1.0,
    "colourfulness": 0.6,
    "colour_cast": 0.3,
    "sharpness": 0.4,
    "noise": 0.6,
}


@dataclass(frozen=True)
class RewardConfig:
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    preservation: float = 1.5  # penalty weight on (1 - structure similarity to the input)

    def __post_init__(self):
        unknown = set(self.weights) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown reward components {sorted(unknown)}; known: {sorted(DEFAULT_WEIGHTS)}")
        if any((not math.isfinite(w)) or w < 0 for w in self.weights.values()):
            raise ValueError("reward weights must be finite and >= 0")
        if sum(self.weights.values()) <= 0:
            raise ValueError("at least one reward weight must be above 0")


@dataclass(frozen=True)
class Score:
    total: float
    components: dict[str, float]  # normalised, 0..1
    raw: dict[str, float]  # the statistics behind them

    def as_dict(self) -> dict[str, float]:
        out = {"total": round(self.total, 5)}
        out.update({f"{k}": round(v, 4) for k, v in self.components.items()})
        return out


def image_statistics(img: np.ndarray) -> dict[str, float]:
    """Raw statistics of a float image (any size); computed on a <=512 px copy."""
    small = resize_longest(img, METRIC_SIDE)
    lum = luminance(small).astype(np.float32)
    rgb = to_rgb(small)
    stats = {
        "mean_luma": float(lum.mean()),
        "rms_contrast": float(lum.std()),
        "clip_dark": float((lum <= 0.01).mean()),
        "clip_bright": float((lum >= 0.99).mean()),
        "colourfulness": _colourfulness(rgb),
        "colour_cast": _colour_cast(rgb),
        "sharpness": _sharpness(lum),
        "noise_sigma": _noise_sigma(lum),
        "is_gray": float(np.abs(rgb[..., 0] - rgb[..., 1]).mean() + np.abs(rgb[..., 1] - rgb[..., 2]).mean() < 0.004),
    }
    return stats


def _colourfulness(rgb: np.ndarray) -> float:
    # Hasler & Suesstrunk (2003), spread term only: a global cast should not count as colour.
    rg = rgb[..., 0] - rgb[..., 1]
    yb = 0.5 * (rgb[..., 0] + rgb[..., 1]) - rgb[..., 2]
    return float(math.sqrt(rg.var() + yb.var()))


def _colour_cast(rgb: np.ndarray) -> float:
    """How far the near-neutral mid-tones are from gray (0 = neutral)."""
    means = neutral_pixels(rgb).mean(axis=0) + 1e-4
    return float(np.abs(means / means.mean() - 1.0).max())


def _sharpness(lum: np.ndarray) -> float:
    cv2 = require("cv2")

    return float(cv2.Laplacian(lum, cv2.CV_32F, ksize=3).std())


def _noise_sigma(lum: np.ndarray) -> float:
    """Immerkaer (1996) fast noise variance estimate, sigma on a 0..1 scale."""
    cv2 = require("cv2")

    h, w = lum.shape
    if h < 3 or w < 3:
        return 0.0
    kernel = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)
    conv = cv2.filter2D(lum, cv2.CV_32F, kernel)[1:-1, 1:-1]
    # measure on flat regions only, so texture and edges are not counted as noise
    grad = cv2.Sobel(lum, cv2.CV_32F, 1, 0) ** 2 + cv2.Sobel(lum, cv2.CV_32F, 0, 1) ** 2
    grad = grad[1:-1, 1:-1]
    flat = grad <= np.percentile(grad, 50)
    vals = np.abs(conv[flat]) if flat.sum() > 16 else np.abs(conv)
    return float(math.sqrt(math.pi / 2.0) * vals.mean() / 6.0)


def normalise(stats: Mapping[str, float]) -> dict[str, float]:
    """Map raw statistics to [0, 1] component scores (1 = good)."""
    lo, hi = IDEAL_CONTRAST
    c = stats["rms_contrast"]
    contrast = min(1.0, c / lo) ** 1.5 if c < lo else (1.0 if c <= hi else math.exp(-((c - hi) / 0.08) ** 2))
    comps = {
        "exposure": math.exp(-((stats["mean_luma"] - IDEAL_MEAN_LUMA) / 0.16) ** 2),
        # blown highlights hurt more than deep blacks, which many good photos have
        "clipping": math.exp(-max(0.0, stats["clip_bright"] - 0.005) * 40.0)
        * math.exp(-max(0.0, stats["clip_dark"] - 0.05) * 4.0),
        "contrast": contrast,
        "colourfulness": min(1.0, stats["colourfulness"] / GOOD_COLOURFULNESS) ** 0.7
        * (1.0 if stats["colourfulness"] < 0.35 else math.exp(-((stats["colourfulness"] - 0.35) / 0.1) ** 2)),
        "colour_cast": math.exp(-(stats["colour_cast"] / 0.2) ** 2),
        "sharpness": 1.0 - math.exp(-stats["sharpness"] / 0.05),
        "noise": math.exp(-(max(0.0, stats["noise_sigma"] - 0.006) / 0.02) ** 2),
    }
    if stats.get("is_gray"):
        comps["colourfulness"] = comps["colour_cast"] = 1.0  # a black-and-white photo is not dull
    return comps


def structure_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM *structure* term (local correlation) between two images' luminance.

    Invariant to brightness and contrast changes — those are the edits we want — while
    dropping for blur, crops, warps, heavy local contrast and invented content.
    """
    cv2 = require("cv2")

    la = luminance(resize_longest(a, 256)).astype(np.float32)
    lb = luminance(resize_longest(b, 256)).astype(np.float32)
    if la.shape != lb.shape:
        lb = cv2.resize(lb, (la.shape[1], la.shape[0]), interpolation=cv2.INTER_AREA)
    blur = lambda x: cv2.GaussianBlur(x, (0, 0), 1.5)  # noqa: E731
    ma, mb = blur(la), blur(lb)
    va = np.maximum(blur(la * la) - ma * ma, 0)
    vb = np.maximum(blur(lb * lb) - mb * mb, 0)
    cov = blur(la * lb) - ma * mb
    c3 = (0.03 ** 2) / 2
    return float(np.clip((cov + c3) / (np.sqrt(va * vb) + c3), -1, 1).mean())


class ClassicReward:
    """Scores an image (optionally against the original) with the classic components."""

    def __init__(self, config: RewardConfig | None = None):
        self.config = config or RewardConfig()

    def score(self, img: np.ndarray, original: np.ndarray | None = None) -> Score:
        raw = image_statistics(img)
        comps = normalise(raw)
        weights = self.config.weights
        wsum = sum(weights.values())
        quality = sum(weights.get(k, 0.0) * v for k, v in comps.items()) / wsum
        total = quality
        if original is not None and self.config.preservation > 0:
            sim = structure_similarity(original, img)
            raw["structure_similarity"] = sim
            comps["preservation"] = sim
            total -= self.config.preservation * (1.0 - sim)
        return Score(total=float(total), components=comps, raw=raw)
