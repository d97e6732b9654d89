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
from typing import Any, Mapping, Protocol

import numpy as np

from ..tools.backends import require
from ..tools.imageops import luminance, neutral_pixels, resize_longest, to_rgb

# Ideal bands, chosen from typical well-exposed photographs (sRGB values in 0..1).
IDEAL_MEAN_LUMA = 0.47
IDEAL_CONTRAST = (0.19, 0.30)  # RMS contrast (std of luminance)
GOOD_COLOURFULNESS = 0.16  # Hasler-Suesstrunk spread term on a 0..1 scale (~40 on 0..255)
METRIC_SIDE = 512  # statistics are computed on a copy at most this long: fast, size-independent

STATISTICS = ("exposure", "clipping", "contrast", "colourfulness", "colour_cast", "sharpness", "noise")
CLASSIC_IQA = ("brisque", "niqe")
LEARNED = ("aesthetic", "clip", "image_reward", "vlm")

DEFAULT_WEIGHTS: dict[str, float] = {
    "exposure": 1.0,
    "clipping": 1.0,
    "contrast": 1.0,
    "colourfulness": 0.6,
    "colour_cast": 0.3,
    "sharpness": 0.4,
    "noise": 0.6,
    "brisque": 0.5,
    "niqe": 0.5,
    # learned components: PhotoAgent's weights (CLIP 1.0, aesthetic 2.0, ImageReward 2.0, UGC-style score 0.8);
    # each is used only when its model (or brain) is there, and skipped with a note otherwise
    "aesthetic": 2.0,
    "clip": 1.0,
    "image_reward": 2.0,
    "vlm": 0.8,
}
RAW_OF = {"exposure": "mean_luma", "clipping": "clip_bright", "contrast": "rms_contrast",
          "colourfulness": "colourfulness", "colour_cast": "colour_cast", "sharpness": "sharpness",
          "noise": "noise_sigma", "brisque": "brisque", "niqe": "niqe", "preservation": "structure_similarity"}


class LearnedScorer(Protocol):
    """A learned reward component: a model (or a brain) that rates an image."""

    name: str

    def unavailable(self) -> str | None:
        """Why this scorer cannot run here (missing weights, package or brain), or None when it can."""

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        """(raw score, normalised 0..1) of ``img``; ``mood`` is the target mood text ('' when none)."""


@dataclass(frozen=True)
class RewardConfig:
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    preservation: float = 1.5  # penalty weight on (1 - structure similarity to the input)
    mood: str = ""  # mood-guided mode: the target mood, read by the CLIP, ImageReward and VLM components

    def __post_init__(self):
        unknown = set(self.weights) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown reward components {sorted(unknown)}; known: {sorted(DEFAULT_WEIGHTS)}")
        if any((not math.isfinite(w)) or w < 0 for w in self.weights.values()):
            raise ValueError("reward weights must be finite and >= 0")
        if sum(self.weights.values()) <= 0:
            raise ValueError("at least one reward weight must be above 0")
        if not math.isfinite(self.preservation) or self.preservation < 0:
            raise ValueError(f"preservation must be a finite number >= 0, got {self.preservation}")


@dataclass(frozen=True)
class Score:
    total: float
    components: dict[str, float]  # normalised, 0..1
    raw: dict[str, float]  # the statistics behind them
    weights: dict[str, float] = field(default_factory=dict)  # weights used, renormalised over the components present
    skipped: dict[str, str] = field(default_factory=dict)  # component -> why it was left out

    def as_dict(self) -> dict[str, float]:
        out = {"total": round(self.total, 5)}
        out.update({f"{k}": round(v, 4) for k, v in self.components.items()})
        return out

    def report(self) -> dict[str, Any]:
        """Per component: raw value, normalised value and weight; plus the skipped ones with why."""
        rows = {name: {"raw": _round(self.raw.get(RAW_OF.get(name, name))), "normalised": round(value, 4),
                       "weight": round(self.weights.get(name, 0.0), 4)}
                for name, value in self.components.items()}
        return {"total": round(self.total, 5), "components": rows, "skipped": dict(self.skipped)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 5)


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


def brisque_niqe(img: np.ndarray, want: tuple[str, ...] = CLASSIC_IQA) -> dict[str, float]:
    """BRISQUE and NIQE of an image, on the same <=512 px copy as the statistics.

    NIQE needs 192 px on the short side; smaller copies (search previews) are upscaled to that first.
    """
    from .iqa import NIQE_BLOCK, brisque, niqe, to_gray255

    gray = to_gray255(resize_longest(img, METRIC_SIDE))
    out: dict[str, float] = {}
    if "brisque" in want:
        out["brisque"] = brisque(gray) if min(gray.shape) >= 16 else float("nan")  # too small to measure
    if "niqe" in want:
        short = min(gray.shape)
        if short < 2 * NIQE_BLOCK:
            cv2 = require("cv2")
            f = 2 * NIQE_BLOCK / short
            gray = cv2.resize(gray, (math.ceil(gray.shape[1] * f), math.ceil(gray.shape[0] * f)),
                              interpolation=cv2.INTER_CUBIC)
        out["niqe"] = niqe(gray)
    return out


def normalise_iqa(raw: Mapping[str, float]) -> dict[str, float]:
    """BRISQUE (0 best, ~100 bad) and NIQE (~3 for clean photos, higher is worse) to 0..1, 1 = good."""
    out = {}
    # NaN means the image has no natural-scene structure at all (a flat image): the worst score
    if "brisque" in raw:
        out["brisque"] = min(1.0, max(0.0, (80.0 - raw["brisque"]) / 70.0)) if math.isfinite(raw["brisque"]) else 0.0
    if "niqe" in raw:
        out["niqe"] = min(1.0, max(0.0, (10.0 - raw["niqe"]) / 7.0)) if math.isfinite(raw["niqe"]) else 0.0
    return out


class Reward:
    """PhotoAgent's reward ensemble: a weighted mean of normalised components minus a preservation penalty.

    Components: image statistics and BRISQUE/NIQE (always there, no weights needed), plus the learned
    scorers handed in (aesthetic, CLIP similarity, ImageReward, VLM score). A component whose model is
    missing, or whose weight is 0, is skipped with a note and the other weights are renormalised.
    """

    def __init__(self, config: RewardConfig | None = None, scorers: Mapping[str, LearnedScorer] | None = None):
        self.config = config or RewardConfig()
        weights = self.config.weights
        self.skipped: dict[str, str] = {}
        self.scorers: dict[str, LearnedScorer] = {}
        scorers = dict(scorers or {})
        for name in LEARNED:
            if weights.get(name, 0.0) <= 0:
                continue
            scorer = scorers.get(name)
            why = "not connected" if scorer is None else scorer.unavailable()
            if why is None and name == "clip" and not self.config.mood.strip():
                why = "no mood text (CLIP similarity scores a photo against the target mood)"
            if why is None:
                self.scorers[name] = scorer
            else:
                self.skipped[name] = why
        self.active = {k: w for k, w in weights.items()
                       if w > 0 and (k in STATISTICS or k in CLASSIC_IQA or k in self.scorers)}
        if not self.active:
            raise ValueError("no reward component is available: give at least one statistic, BRISQUE or NIQE a weight "
                             f"above 0 (skipped: {self.skipped})")
        self._norm = sum(self.active.values())

    def describe(self) -> str:
        parts = [f"{k} {w / self._norm:.2f}" for k, w in self.active.items()]
        skipped = "; ".join(f"{k}: {why}" for k, why in self.skipped.items())
        return "reward = " + " + ".join(parts) + (f" (skipped {skipped})" if skipped else "")

    def score(self, img: np.ndarray, original: np.ndarray | None = None) -> Score:
        small = resize_longest(img, METRIC_SIDE)  # once: the statistics and BRISQUE/NIQE all read this copy
        raw = image_statistics(small)
        comps = {k: v for k, v in normalise(raw).items() if k in self.active}
        iqa_wanted = tuple(k for k in CLASSIC_IQA if k in self.active)
        if iqa_wanted:
            iqa_raw = brisque_niqe(small, iqa_wanted)
            raw.update(iqa_raw)
            comps.update(normalise_iqa(iqa_raw))
        for name, scorer in self.scorers.items():
            raw[name], comps[name] = scorer.measure(img, self.config.mood)
        weights = {k: self.active[k] / self._norm for k in comps}
        quality = sum(weights[k] * v for k, v in comps.items()) / max(1e-9, sum(weights.values()))
        total = quality
        if original is not None and self.config.preservation > 0:
            sim = structure_similarity(original, img)
            raw["structure_similarity"] = sim
            comps["preservation"] = sim
            total -= self.config.preservation * (1.0 - sim)
        return Score(total=float(total), components=comps, raw=raw, weights=weights, skipped=dict(self.skipped))


ClassicReward = Reward  # the ensemble with no learned scorers is the classic reward
