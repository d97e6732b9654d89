"""What a rule critic can measure about an edit: before/after statistics and checks."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...tools.imageops import luminance, resize_longest, to_rgb
from .metrics import METRICS, image_statistics, structure_similarity


def measure(img: np.ndarray) -> dict[str, float]:
    stats = image_statistics(img)
    small = resize_longest(img, 256)
    rgb = to_rgb(small)
    h, w = img.shape[:2]
    lum = luminance(small)
    ch, cw = max(1, lum.shape[0] // 5), max(1, lum.shape[1] // 5)
    corners = np.concatenate([lum[:ch, :cw].ravel(), lum[:ch, -cw:].ravel(), lum[-ch:, :cw].ravel(), lum[-ch:, -cw:].ravel()])
    centre = lum[2 * ch:-2 * ch or None, 2 * cw:-2 * cw or None]
    stats.update({
        "saturation": float((rgb.max(axis=2) - rgb.min(axis=2)).mean()),
        "warmth": float((rgb[..., 0] - rgb[..., 2]).mean()),
        "width": float(w), "height": float(h), "aspect": w / h, "longest_side": float(max(h, w)),
        # corners relative to the centre: a vignette changes it, a global brightness change does not
        "corner_ratio": float(corners.mean() / (centre.mean() + 1e-3)) if corners.size and centre.size else 1.0,
    })
    return stats


# what a rule critic checks a change of: the metrics with a smallest change that counts as "done"
CHECKED = {name: m for name, m in METRICS.items() if m.min_change}


def check(check: dict[str, Any], before: dict[str, float], after: dict[str, float],
          before_img: np.ndarray | None = None, after_img: np.ndarray | None = None) -> tuple[str, str, float]:
    """Answer one measurable question: (answer, explanation, achieved fraction of the wanted change)."""
    metric = check.get("metric")
    if metric in CHECKED:
        label, min_delta = CHECKED[metric].label, CHECKED[metric].min_change
        delta = after[metric] - before[metric]
        want = 1 if check.get("direction", "up") == "up" else -1
        done = delta * want
        wanted = float(check.get("amount", min_delta * 4))
        text = f"{label} {before[metric]:.3f} -> {after[metric]:.3f}" + (" (the wrong way)" if done < -min_delta else "")
        return ("yes" if done >= min_delta else "no"), text, done / wanted if wanted else 0.0
    if metric in ("aspect", "longest_side", "width", "height"):
        target = float(check["target"])
        ok = abs(after[metric] - target) <= max(0.01 * target, 1.0 if metric != "aspect" else 0.01)
        return ("yes" if ok else "no"), f"{metric} is {after[metric]:.3g} (wanted {target:.3g})", 1.0 if ok else 0.0
    if metric == "is_gray":
        ok = after["is_gray"] >= 0.5
        return ("yes" if ok else "no"), "the image is " + ("black and white" if ok else "still in colour"), float(ok)
    if metric == "mirrored" and before_img is not None and after_img is not None and before_img.shape == after_img.shape:
        axis = 1 if check.get("direction", "horizontal") == "horizontal" else 0
        ok = np.abs(np.flip(before_img, axis=axis) - after_img).mean() < np.abs(before_img - after_img).mean()
        return ("yes" if ok else "no"), "the image is " + ("mirrored" if ok else "not mirrored"), float(ok)
    if metric == "structure" and before_img is not None and after_img is not None:
        sim = structure_similarity(before_img, after_img)
        ok = sim >= float(check.get("min", 0.8))
        return ("yes" if ok else "no"), f"structure similarity {sim:.2f}", float(ok)
    return "unknown", "a rule critic cannot measure this; connect a VLM brain to judge it", 0.0
