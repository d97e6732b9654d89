#!/usr/bin/env python3
"""Experiment (not shipped): can a model fitted on the defect space predict a photo's tone correction
from its histogram alone? Judged leave-one-family-out on photos kept apart.

The idea (issue 27, item 3): regress where each luminance quantile of a photo *should* be — the clean
photo's quantiles for a degraded one, its own for a good one — and apply the monotone curve between them.
Rows: the FIT photos clean (target: no change) and degraded by every family of tests/support/defects.py at random
strengths. For each family, a model fitted without it (nor any combination containing it) predicts that
family's cases on the held-out EVALUATION photos; ``recovered`` is the share of the needed correction it
gets (1 = all, 0 = no better than leaving the photo, < 0 = worse). It also reports how far the full model
would move the held-out *clean* photos (a good auto-tone moves them ~0).

Two regressors: ridge on standardised histogram features, and k nearest neighbours. The result (docs/
notes/2026-11-generalisation/): with 10 fit photos neither separates a photo's content from a defect — the held-out
clean photos would be moved up to 0.2-0.5 (mean knot shift, on 0..1), as much as many defects need — so the
shipped perceiver does not use it. Run: .venv/bin/python bench/tone_estimator_lofo.py [--jobs 2]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from defects import FAMILIES, families, family_of_parts, make  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

from edit_agents.tools.imageops import luminance, resize_longest, to_rgb  # noqa: E402

FIT_PHOTOS = CALIBRATION + ("grass",)  # the reward's calibration photos and one more (scikit-image's cat is chelsea)
QUANTILES = (0.5, 2.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 98.0, 99.5)
KNOTS = [0, 2, 4, 5, 6, 8, 10]  # indexes into QUANTILES: the curve's control points
STRENGTHS, COMBINATIONS, CLEAN_WEIGHT = 4, 8, 8.0


def statistics(img: np.ndarray) -> tuple[np.ndarray, float]:
    small = resize_longest(img, 256)
    lum, rgb = luminance(small), to_rgb(small)
    rg, yb = rgb[..., 0] - rgb[..., 1], 0.5 * (rgb[..., 0] + rgb[..., 1]) - rgb[..., 2]
    return np.percentile(lum, QUANTILES), float(math.sqrt(rg.var() + yb.var()))


def features(q: np.ndarray, col: float, lum_clip: tuple[float, float]) -> np.ndarray:
    return np.concatenate([q, np.sqrt(np.maximum(q, 0)), np.diff(q), lum_clip, [math.sqrt(col), col]])


def rows_of(photo: str) -> list[dict]:
    clean = load(photo)
    cq, ccol = statistics(clean)
    cases = [("clean", 0)] + [(f, i) for f in families() if f != "combination" for i in range(STRENGTHS)]
    out = []
    for family, index in cases + [("combination", i) for i in range(COMBINATIONS)]:
        img, case = make(clean, photo, family, index)
        q, col = statistics(img)
        lum = luminance(resize_longest(img, 256))
        x = features(q, col, (float((lum <= 0.01).mean()), float((lum >= 0.99).mean())))
        sat = 0.0 if ccol < 1e-3 or col < 1e-3 else math.log(ccol / col)
        out.append({"photo": photo, "family": family, "parts": family_of_parts(case), "x": x,
                    "y": np.concatenate([cq[KNOTS] - q[KNOTS], [sat]])})
    return out


def arrays(rows):
    return (np.array([r["x"] for r in rows]), np.array([r["y"] for r in rows]),
            np.array([CLEAN_WEIGHT if r["family"] == "clean" else 1.0 for r in rows]))


def ridge(train, test, strength: float = 30.0) -> np.ndarray:
    x, y, w = arrays(train)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    reg = strength * np.eye(z.shape[1])
    reg[-1, -1] = 0.0
    weights = np.linalg.solve(z.T @ (z * w[:, None]) + reg, (z * w[:, None]).T @ y)
    zt = np.hstack([(arrays(test)[0] - mean) / scale, np.ones((len(test), 1))])
    return zt @ weights


def nearest(train, test, k: int = 15) -> np.ndarray:
    x, y, _ = arrays(train)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    zt, zs = (x - mean) / scale, (arrays(test)[0] - mean) / scale
    d = ((zs[:, None, :] - zt[None, :, :]) ** 2).sum(-1)
    idx = np.argsort(d, axis=1)[:, :k]
    w = 1.0 / (np.take_along_axis(d, idx, 1) + 1e-3)
    return (y[idx] * w[..., None]).sum(1) / w.sum(1)[:, None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    with ProcessPoolExecutor(a.jobs) as pool:
        fit_rows = [r for rows in pool.map(rows_of, FIT_PHOTOS) for r in rows]
        held_rows = [r for rows in pool.map(rows_of, EVALUATION) for r in rows]
    print(f"{len(fit_rows)} fit rows ({len(FIT_PHOTOS)} photos), {len(held_rows)} held-out rows ({len(EVALUATION)} photos)")
    for name, predict in (("ridge", ridge), ("k nearest", nearest)):
        print(f"\n{name}: {'family':<24}{'group':<12}{'needed':>8}{'recovered':>10}")
        for family in families():
            train = [r for r in fit_rows if family not in r["parts"] and r["family"] != family]
            test = [r for r in held_rows if r["family"] == family]
            y, p = arrays(test)[1], predict(train, test)
            need = np.abs(y[:, :-1]).mean()
            group = FAMILIES[family].group if family in FAMILIES else "combination"
            print(f"{'':<{len(name) + 2}}{family:<24}{group:<12}{need:>8.3f}"
                  f"{1 - np.abs(p[:, :-1] - y[:, :-1]).mean() / max(need, 1e-9):>10.2f}")
        cleans = [r for r in held_rows if r["family"] == "clean"]
        shift = np.abs(predict(fit_rows, cleans)[:, :-1]).mean(1)
        print("  clean held-out photos, mean knot shift: " +
              ", ".join(f"{r['photo']} {s:.3f}" for r, s in zip(cleans, shift)))


if __name__ == "__main__":
    main()
