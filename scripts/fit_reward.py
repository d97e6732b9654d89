#!/usr/bin/env python3
"""Fit the offline reward's bands and weights by pairwise ranking; write agents/data/reward_offline.json.

Training pairs come from the CALIBRATION photos of tests/support/photoset.py: the clean photo beats each
degraded or over-processed version of itself, and a milder degradation beats a stronger one of the
same kind (tests/support/photoset.py's recipes: the shipped fit). --space defects takes the pairs from the defect
space of tests/support/defects.py instead (every family at random strengths, combinations of two or three, and
the over-processing a good photo must be protected from); docs/notes/2026-11-generalisation/ gives what it measured. The model is the reward's own: per statistic a band (where it stops being fine, and how
fast the score falls outside), per component a weight; it maximises the pairwise log-likelihood
(a logistic of the score difference) with L-BFGS. The same pairs built from the EVALUATION photos,
never seen by the fit, give the held-out ranking accuracy that the README reports. --lofo judges the fit
leave-one-family-out: for each family, a fit without it (nor any combination containing it) ranks that
family's held-out pairs (docs/notes/2026-11-generalisation/).
Run: .venv/bin/python scripts/fit_reward.py   (about three minutes on 2 cores; with --lofo about fifteen)
     --out PATH writes elsewhere; --calibration / --held-out take comma-separated photo names (tests/support/photoset.py).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from defects import FAMILIES, family_of_parts  # noqa: E402
from defects import families as defect_families  # noqa: E402
from defects import make as make_defect  # noqa: E402
from photoset import CALIBRATION, DEFECTS, EVALUATION, OVERDONE, degrade, load  # noqa: E402

from edit_agents.agents.quality.reward import COLOUR_ONLY, COMPONENT_STATS, FITTED, STAT_SIDE  # noqa: E402

from edit_agents.agents.quality.metrics import raw_statistics  # noqa: E402

STATS = tuple(STAT_SIDE)
COMPS = tuple(COMPONENT_STATS)
TEMPERATURE = 0.01  # score gap that counts as a confident preference
RIDGE = 1e-3
# Pairs only fix the order, so a band may sit where it also marks good photos down (a colourful photo read as
# over-saturated, a black background as clipping). The anchor asks every component to rate clean photos near 1:
# the bands describe where good photos lie, and the search is not pulled away from them.
ANCHOR = 0.3
MIN_WIDTH = 0.25  # a band's softest fall, in spreads (standard deviations) of its statistic
# Statistics that describe the scene as much as its defects: how bright, how contrasty, how colourful, how much deep
# black or blown white. Nine calibration photos span only part of what good photos show, and a fitted edge lands on the
# most extreme of them (rms contrast at I08's 0.243, with the camera man at 0.287 and the astronaut at 0.293). So each
# edge of these is moved out to at least CLEAN_MARGIN of the calibration photos' spread past the most extreme one, its
# fall no steeper than that margin; a share of pixels spreads at least SHARE_UNIT (a clipped area smaller than 1% of the
# frame marks no photo down). Defect measures (cast, sharpness, noise, BRISQUE, NIQE) keep their fitted edges, and so
# does the white level: its low side is the reward's evidence of under-exposure (widened, it stopped brightening at
# whites of 0.68 and left the recipes' under-exposed photos half corrected: docs/notes/2026-11-generalisation/).
SCENE_STATS = ("black_level", "mean_luma", "clip_bright", "clip_dark", "rms_contrast", "colourfulness")
CLEAN_MARGIN = 0.25
SHARE_UNIT = {"clip_bright": 0.01, "clip_dark": 0.01}
STRENGTHS = 3  # random strengths per family and photo (tests/support/defects.py)
COMBINATIONS = 4  # random combinations per photo


def measure(img: np.ndarray) -> dict[str, float]:
    raw = raw_statistics(img)
    return {k: (v if math.isfinite(v) else 100.0) for k, v in raw.items()}


def build(photos: tuple[str, ...], space: str = "recipes"
          ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, str, frozenset]], list[int]]:
    """Raw statistics of every image (rows), gray flags, the pairs (better, worse, kind, the families the worse
    one is made of) and the clean rows."""
    rows, gray, pairs, cleans = [], [], [], []

    def add(img):
        raw = measure(img)
        rows.append([raw[k] for k in STATS])
        gray.append(raw["is_gray"])
        return len(rows) - 1

    for name in photos:
        clean = load(name)
        c = add(clean)
        cleans.append(c)
        if space == "defects":
            for family in defect_families():
                for index in range(COMBINATIONS if family == "combination" else STRENGTHS):
                    img, case = make_defect(clean, name, family, index)
                    if np.abs(img - clean).max() < 2 / 255:  # e.g. saturation on a black-and-white photo
                        continue
                    pairs.append((c, add(img), family, frozenset(family_of_parts(case))))
            continue
        for kind, spec in {**DEFECTS, **OVERDONE}.items():
            prev, prev_img = c, clean
            for strength in spec[1]:
                img = degrade(clean, kind, strength)
                if np.abs(img - prev_img).max() < 2 / 255:  # e.g. saturation on a black-and-white photo: no change
                    continue
                i = add(img)
                pairs.append((c, i, kind, frozenset({kind})))
                if prev != c:
                    pairs.append((prev, i, kind, frozenset({kind})))
                prev, prev_img = i, img
    return np.array(rows, np.float64), np.array(gray, bool), pairs, cleans


class Model:
    """Unpacks a parameter vector into bands and weights, and scores rows of raw statistics."""

    def __init__(self, x: np.ndarray):
        self.scale = x.std(axis=0) + 1e-6
        self.slots = []  # (stat index, side) for each band edge
        for i, k in enumerate(STATS):
            if STAT_SIDE[k] in ("low", "band"):
                self.slots.append((i, "lo"))
            if STAT_SIDE[k] in ("high", "band"):
                self.slots.append((i, "hi"))

    def initial(self, x: np.ndarray) -> np.ndarray:
        p = []
        for i, side in self.slots:
            p += [np.percentile(x[:, i], 10 if side == "lo" else 90) / self.scale[i], 0.0]
        return np.array(p + [0.0] * len(COMPS))

    def bounds(self) -> list[tuple[float, float]]:
        """Edges within 50 spreads of the data; widths at least MIN_WIDTH of a spread, so no band becomes a
        step (a step rates every edit that crosses it as all or nothing, and gives the search no slope); weights
        within e^8 of 1. Unbounded, fits with a family left out ran off to infinity."""
        return [(-50.0, 50.0), (math.log(MIN_WIDTH), 8.0)] * len(self.slots) + [(-8.0, 8.0)] * len(COMPS)

    def unpack(self, p: np.ndarray):
        edges = {}
        for j, (i, side) in enumerate(self.slots):
            edges[(i, side)] = (p[2 * j] * self.scale[i], math.exp(p[2 * j + 1]) * self.scale[i])
        w = np.exp(p[2 * len(self.slots):])
        return edges, w / w.sum()

    def components(self, p: np.ndarray, x: np.ndarray, gray: np.ndarray) -> np.ndarray:
        return components_of(self.unpack(p)[0], x, gray)


def components_of(edges: dict[tuple[int, str], tuple[float, float]], x: np.ndarray, gray: np.ndarray) -> np.ndarray:
    """Each row's component scores under band ``edges`` ({(stat index, "lo" or "hi"): (edge, width)})."""
    d = np.zeros_like(x)
    for (i, side), (edge, width) in edges.items():
        gap = (edge - x[:, i]) if side == "lo" else (x[:, i] - edge)
        d[:, i] += (np.maximum(0.0, gap) / width) ** 2
    per_stat = np.exp(-d)
    out = np.stack([np.prod(per_stat[:, [STATS.index(k) for k in COMPONENT_STATS[c]]], axis=1) for c in COMPS], 1)
    for c in COLOUR_ONLY:
        out[gray, COMPS.index(c)] = 1.0
    return out


def json_scores(fitted: dict, x: np.ndarray, gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, components) of rows under a fit as reward_offline.json holds it."""
    edges = {(STATS.index(k), side): (band[side], band[f"{side}_width"])
             for k, band in fitted["bands"].items() for side in ("lo", "hi") if side in band}
    comps = components_of(edges, x, gray)
    return comps @ np.array([fitted["weights"][c] for c in COMPS]), comps


def widen_to_clean(bands: dict[str, dict], clean: np.ndarray) -> dict[str, dict]:
    """``bands`` (reward_offline.json's form) with the SCENE_STATS edges moved out past the clean rows ``clean``
    (see CLEAN_MARGIN); the other bands as they were."""
    out = {k: dict(v) for k, v in bands.items()}
    for stat in SCENE_STATS:
        values = clean[:, STATS.index(stat)]
        spread = max(float(values.max() - values.min()), SHARE_UNIT.get(stat, 0.0), 1e-6)
        band, margin = out[stat], CLEAN_MARGIN * spread
        if "hi" in band:
            band["hi"] = round(max(band["hi"], float(values.max()) + margin), 6)
            band["hi_width"] = round(max(band["hi_width"], margin), 6)
        if "lo" in band:
            band["lo"] = round(min(band["lo"], float(values.min()) - margin), 6)
            band["lo_width"] = round(max(band["lo_width"], margin), 6)
    return out


def loss(p, model, x, gray, pairs, cleans) -> float:
    comps = model.components(p, x, gray)
    _, w = model.unpack(p)
    s = comps @ w
    better, worse = pairs[:, 0], pairs[:, 1]
    margin = (s[better] - s[worse]) / TEMPERATURE
    anchor = ((1.0 - comps[cleans]) ** 2).mean()
    return float(np.logaddexp(0.0, -margin).mean() + ANCHOR * anchor + RIDGE * np.sum(p[-len(COMPS):] ** 2))


def fit(model: Model, x: np.ndarray, gray: np.ndarray, pairs: list[tuple], cleans: list[int], restarts: int
        ) -> np.ndarray:
    idx = np.array([(b, w) for b, w, *_ in pairs])
    best = None
    for restart in range(restarts):  # a few starts: the bands make the loss non-convex
        p0 = model.initial(x) + np.random.default_rng(restart).normal(0, 0.3 if restart else 0.0, len(model.initial(x)))
        res = minimize(loss, p0, args=(model, x, gray, idx, cleans), method="L-BFGS-B", options={"maxiter": 3000},
                       bounds=model.bounds())
        if best is None or res.fun < best.fun:
            best = res
    return best.x


def fitted_json(model: Model, p: np.ndarray, clean: np.ndarray) -> dict:
    """A fit as agents/data/reward_offline.json holds it (FittedReward.load reads it), its scene bands widened past
    the clean rows ``clean`` (widen_to_clean); its report is filled by whoever judges it."""
    edges, weights = model.unpack(p)
    bands = {}
    for (i, side), (edge, width) in edges.items():
        band = bands.setdefault(STATS[i], {})
        band[side] = round(float(edge), 6)
        band[f"{side}_width"] = round(float(width), 6)
    return {"about": "Offline reward bands and weights, fitted by scripts/fit_reward.py; do not edit by hand.",
            "bands": widen_to_clean(bands, clean), "weights": {c: round(float(w), 5) for c, w in zip(COMPS, weights)}, "report": {}}


def leave_one_family_out(model, x, gray, pairs, cleans, hx, hgray, hpairs, restarts,
                         save: Path | None = None) -> dict[str, float]:
    """For each family: fitted without it (nor any combination made with it), the share of its held-out pairs
    (held-out photos) ranked right; beside it the share a fit on everything gets. Each fit is judged as it is saved
    (scene bands widened). ``save``: a folder for each family's fit (<family>.json), for
    bench/photoagent_generalise.py --lofo-rewards."""
    full = json_scores(fitted_json(model, fit(model, x, gray, pairs, cleans, restarts), x[cleans]), hx, hgray)[0]
    table = {}
    print(f"leave-one-family-out, held-out photos: {'family':<24}{'group':<13}{'left out':>9}{'all in':>8}")
    for family in defect_families():
        if family == "combination":
            continue
        train = [p for p in pairs if family not in p[3]]
        test = [p for p in hpairs if p[2] == family]
        if not test:
            continue
        fitted = fitted_json(model, fit(model, x, gray, train, cleans, restarts), x[cleans])
        table[family] = accuracy(json_scores(fitted, hx, hgray)[0], test)[0]
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            fitted["report"] = {"left_out": family, "held_out_accuracy_on_it": round(table[family], 4)}
            (save / f"{family}.json").write_text(json.dumps(fitted, indent=1) + "\n")
        print(f"{'':<45}{family:<24}{FAMILIES[family].group:<13}{table[family]:>9.3f}{accuracy(full, test)[0]:>8.3f}")
    print(f"{'':<45}mean over families left out: {np.mean(list(table.values())):.3f}")
    return table


def accuracy(scores: np.ndarray, pairs: list[tuple]) -> tuple[float, dict[str, float]]:
    hits = {}
    for b, w, kind, *_ in pairs:
        hits.setdefault(kind, []).append(scores[b] > scores[w])
    overall = float(np.mean([h for v in hits.values() for h in v]))
    return overall, {k: round(float(np.mean(v)), 3) for k, v in hits.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=FITTED, help=f"where to write the fit (default {FITTED})")
    ap.add_argument("--calibration", default=",".join(CALIBRATION), help="photos to fit on")
    ap.add_argument("--held-out", default=",".join(EVALUATION), help="photos to measure the accuracy on")
    ap.add_argument("--restarts", type=int, default=4, help="optimiser starts (the loss is not convex)")
    ap.add_argument("--space", choices=("recipes", "defects"), default="recipes",
                    help="tests/support/photoset.py's recipes (default, the shipped fit) or tests/support/defects.py's defect space")
    ap.add_argument("--lofo", action="store_true", help="first judge the fit leave-one-family-out (defects space)")
    ap.add_argument("--lofo-dir", type=Path, help="with --lofo: write each family's fit there as <family>.json")
    ap.add_argument("--widen", action="store_true", help="do not fit: widen the scene bands of the fit at --out past "
                    "the calibration photos (widen_to_clean) and re-measure it")
    args = ap.parse_args(argv)
    if args.lofo and args.space != "defects":
        ap.error("--lofo leaves families of the defect space out: use it with --space defects")
    calibration, held_out = tuple(args.calibration.split(",")), tuple(args.held_out.split(","))
    if set(calibration) & set(held_out):
        ap.error(f"a photo cannot be both fitted on and held out: {sorted(set(calibration) & set(held_out))}")
    t0 = time.perf_counter()
    print(f"calibration photos: {', '.join(calibration)}\nheld-out photos:    {', '.join(held_out)}")
    x, gray, pairs, cleans = build(calibration, args.space)
    hx, hgray, hpairs, hcleans = build(held_out, args.space)
    print(f"{len(pairs)} training pairs from {len(x)} images, {len(hpairs)} held-out pairs from {len(hx)} images "
          f"({time.perf_counter() - t0:.0f} s to measure)")
    if args.widen:  # the fit at --out kept, its scene bands widened past the calibration photos
        out = json.loads(args.out.read_text())
        out["bands"] = widen_to_clean(out["bands"], x[cleans])
    else:
        model = Model(x)
        if args.lofo:
            leave_one_family_out(model, x, gray, pairs, cleans, hx, hgray, hpairs, args.restarts, args.lofo_dir)
        out = fitted_json(model, fit(model, x, gray, pairs, cleans, args.restarts), x[cleans])
    # every figure below is of the fit as written: scene bands widened
    train_acc, train_kinds = accuracy(json_scores(out, x, gray)[0], pairs)
    scores, comps = json_scores(out, hx, hgray)
    held_acc, held_kinds = accuracy(scores, hpairs)
    held_clean = comps[hcleans]  # how the held-out clean photos are rated, per component
    weights = np.array([out["weights"][c] for c in COMPS])
    out["report"] = {
        "fitted": _dt.date.today().isoformat() if not args.widen else out["report"].get("fitted"),
        "widened": _dt.date.today().isoformat(), "space": args.space,
        "scene_bands": f"{', '.join(SCENE_STATS)}: edges at least {CLEAN_MARGIN} of the calibration photos' spread "
                       "past the most extreme of them (scripts/fit_reward.py widen_to_clean)",
        "calibration_photos": list(calibration), "held_out_photos": list(held_out),
        "training_pairs": len(pairs), "held_out_pairs": len(hpairs),
        "training_accuracy": round(train_acc, 4), "held_out_accuracy": round(held_acc, 4),
        "held_out_accuracy_by_kind": held_kinds, "training_accuracy_by_kind": train_kinds,
        "held_out_clean_components_mean": {c: round(float(v), 3) for c, v in zip(COMPS, held_clean.mean(axis=0))},
        "held_out_clean_score_mean": round(float((held_clean @ weights).mean()), 4),
        "brisque_range_clean": [round(float(np.percentile(x[:, STATS.index("brisque")], q)), 2) for q in (5, 95)],
        "niqe_range_clean": [round(float(np.percentile(x[:, STATS.index("niqe")], q)), 2) for q in (5, 95)],
    }
    report = out["report"]
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print("weights:", ", ".join(f"{c} {w:.3f}" for c, w in zip(COMPS, weights)))
    for k, b in out["bands"].items():
        print(f"  {k:<14} {b}")
    print(f"pairwise accuracy: training {train_acc:.3f}, held-out {held_acc:.3f}; held-out clean photos score "
          f"{report['held_out_clean_score_mean']:.3f} on average ({report['held_out_clean_components_mean']})")
    for kind, acc in held_kinds.items():
        seen = f"{train_kinds[kind]:.3f}" if kind in train_kinds else "none: no such pair in training"
        print(f"  held-out {kind:<16} {acc:.3f} (training {seen})")
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
