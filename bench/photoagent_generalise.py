"""Benchmark: does offline PhotoAgent generalise to defects it was not tuned on, judged against the truth?

bench/photoagent_fidelity.py judges the search on the eight defects of tests/support/photoset.py, made the same
way the reward was fitted on. Here the defects come from tests/support/defects.py: each defect made several
ways (families, grouped into tone, colour, noise, blur and over-processing, plus combinations of two
or three families), each case with its own random strength. The photos are photoset.EVALUATION, never
used to fit anything. Every result is compared with the clean original by SSIM and mean CIEDE2000
(photoagent_fidelity's functions), not by the reward the search optimises.

--held-out runs the families of defects.HELD_OUT instead: written after all the tuning so far and kept apart from
it, so their figures are the nearest this repository has to photos and defects nobody tuned on.

Methods, each run on the same degraded image:
  mcts             the shipped search: mcts_enhance with the MCTS Planner node's defaults, the classic tools,
                   the default reward and perceiver (see mcts_tools_and_reward, the leave-one-family-out hook)
  autocontrast     Pillow's ImageOps.autocontrast(cutoff=0.5) on the 8-bit image, each channel stretched
  autolevel-gamma  ImageMagick's `-auto-level -auto-gamma`, reimplemented in numpy (autolevel_gamma)
  clahe            scikit-image's exposure.equalize_adapthist(clip_limit=0.01), its defaults otherwise
  none             the degraded input itself: a sanity row (never closer, never harmed)

A degraded case is "closer" as in photoagent_fidelity.closer: SSIM up by at least 0.005 with ΔE up by at
most 0.5, or ΔE down by at least 0.5 with SSIM down by at most 0.005. A case is "harmed" when SSIM drops
by more than 0.02 or ΔE rises by more than 1.0 relative to the method's input (for a clean photo: relative
to the clean photo itself, so any change beyond those bounds). A clean photo is "untouched" when SSIM is 1
and ΔE 0 (to a float tolerance).

Two of the project's photos are distorted images with no clean original (NO_REFERENCE: IQA-PyTorch's calibration
images I03, a heavy blur, and I19, a heavy JPEG): they run with the clean photos, and the report says what each
method did to them and their BRISQUE and NIQE before and after (lower is better), since nothing says what they were.

--comfy-pictures 8 takes other pictures, which nothing in the project was tuned on: eight of the pictures ComfyUI's
workflow templates show (photoset.comfy_pictures: mostly generated portraits, products, interiors, landscapes and
illustrations, what a ComfyUI user has), drawn once, take the photos' place for the defects, and every other one of
them runs as a clean picture.

--saved-as-jpeg 85 saves every case as a JPEG before any method sees it, as a phone or an editor does: the same defects
reached another way, which every user's photos are. --saved-as-png rounds every case to 8 bits, as a PNG keeps it:
the defect space's cases are float arrays, which no file a user loads is, and the rounding alone fills the spectral
zeros the blur kernels are read from.

Run: .venv/bin/python bench/photoagent_generalise.py [--photos astronaut,camera] [--families jpeg,clean | --held-out]
     [--saved-as-jpeg 85 | --saved-as-png | --comfy-pictures 8] [--per-family 2] [--methods mcts,clahe] [--side 512]
     [--jobs 2] [--seed 0] [--detail] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import defects
from edit_agents.agents.photoagent.search import mcts_enhance
from edit_agents.agents.quality.reward import FittedReward, Reward
from edit_agents.tools import default_registry
from photoagent_fidelity import (
    SETTINGS,
    CountingTools,
    closer,
    delta_e,
    share_of_cores,
    ssim,
)
from photoset import CALIBRATION, EVALUATION, comfy_pictures, load

# every other photo the project has, run only as a clean photo: must it be left alone too
OTHER_CLEAN = CALIBRATION + ("retina",)
# distorted images with no clean original (tests/data/iqa: IQA-PyTorch's calibration images of distortions): I03 is
# blurred heavily, I19 compressed heavily as a JPEG. Counted as clean photos until 2026-11-27, when a look at them
# showed it: I19's deblock was counted as a harm. Run beside the clean photos, reported apart.
NO_REFERENCE = ("I03", "I19")
COMFY_DRAW = 2026  # the seed of --comfy-pictures' draw by default: the same pictures every run
AS_IS = ("clean", "distorted")  # the families run on the photo as it is, compared with itself: no degraded case

METHODS = ("mcts", "autocontrast", "autolevel-gamma", "clahe", "none")
HARM_SSIM, HARM_DE = 0.02, 1.0  # a drop in SSIM, a rise in ΔE, beyond which a case counts as harmed
UNTOUCHED_TOL = 1e-6


LOFO_REWARDS = os.environ.get("EDIT_AGENTS_LOFO_REWARDS", "")  # set by --lofo-rewards, read in the workers


def mcts_tools_and_reward(family: str):
    """``(tools, reward, perceiver)`` the search uses on a case of ``family`` (a family's name, "combination"
    or "clean"): the hook for leave-one-family-out. With --lofo-rewards DIR the reward is the fit made without
    that family (DIR/<family>.json, written by scripts/fit_reward.py --lofo --lofo-dir DIR); a combination or a
    clean photo gets the shipped fit, which saw every family. The perceiver is the default one (None): its
    thresholds are set on clean photos only (agents/photoagent/perceiver.py), no family is fitted into it."""
    reward = Reward()
    path = Path(LOFO_REWARDS) / f"{family}.json" if LOFO_REWARDS else None
    if path is not None and path.exists():
        reward = Reward(fitted=FittedReward.load(path))
    return default_registry().subset(categories=["classic"]), reward, None


# --- baselines -----------------------------------------------------------------------------------

def to_8bit(img: np.ndarray) -> np.ndarray:
    return (np.clip(img, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def autocontrast(img: np.ndarray) -> np.ndarray:
    """Pillow's autocontrast, 0.5% cut at each end of each channel's histogram, on the 8-bit image."""
    from PIL import Image, ImageOps

    out = ImageOps.autocontrast(Image.fromarray(to_8bit(img)), cutoff=0.5)
    return np.asarray(out, np.float32) / 255.0


def autolevel_gamma(img: np.ndarray) -> np.ndarray:
    """ImageMagick's ``-auto-level -auto-gamma``, reimplemented in numpy (not ImageMagick's code or binary).

    -auto-level stretches the channels' joint min..max (the min and max over all channels together, as
    ImageMagick's -auto-level does with its channels synced) to 0..1. -auto-gamma then applies to each
    channel the gamma that brings that channel's mean to 0.5: gamma = log(mean) / log(0.5), out = in ** (1 /
    gamma), computed on the display (sRGB-encoded) values as ImageMagick does, not in linear light."""
    x = np.clip(img.astype(np.float64), 0.0, 1.0)
    lo, hi = float(x.min()), float(x.max())
    if hi > lo:
        x = (x - lo) / (hi - lo)
    for c in range(x.shape[2]):
        mean = float(x[..., c].mean())
        if 1e-6 < mean < 1 - 1e-6:  # an all-black or all-white channel has no gamma to find
            x[..., c] = x[..., c] ** (math.log(0.5) / math.log(mean))
    return x.astype(np.float32)


def clahe(img: np.ndarray) -> np.ndarray:
    from skimage import exposure

    return exposure.equalize_adapthist(np.clip(img, 0.0, 1.0), clip_limit=0.01).astype(np.float32)


BASELINES = {"autocontrast": autocontrast, "autolevel-gamma": autolevel_gamma, "clahe": clahe,
             "none": lambda img: img}


# --- cases ---------------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def _photo(name: str, side: int) -> np.ndarray:
    img = load(name, side)
    img.flags.writeable = False  # shared by every case of the photo in this process
    return img


def harmed(before: tuple[float, float], after: tuple[float, float]) -> bool:
    return after[0] < before[0] - HARM_SSIM or after[1] > before[1] + HARM_DE


def untouched(after: tuple[float, float]) -> bool:
    return after[0] >= 1.0 - UNTOUCHED_TOL and after[1] <= UNTOUCHED_TOL


def run_case(photo: str, family: str, index: int = 0, side: int = 512, methods: tuple[str, ...] = METHODS,
             seed: int = 0, model_for: str | None = None, jpeg: int = 0) -> dict:
    """One case, every method on it. ``model_for``: the family whose search components to use
    (mcts_tools_and_reward), the case's own family when None; ``jpeg``: the quality the case is saved at before any
    method sees it (0: not saved, -1: as an 8-bit PNG), as a camera or an editor saves a photo."""
    clean = _photo(photo, side)
    bad, case = defects.make(clean, photo, "clean" if family == "distorted" else family, index)
    bad = np.array(bad, np.float32)  # its own writable copy, whatever make returned
    # a defect that changes nothing (a saturation change on a black-and-white photo) makes no degraded case: the
    # photo is clean and is counted with the clean ones
    as_is = family in AS_IS  # compared with itself: how far each method moved it
    unchanged = not as_is and float(np.abs(bad - clean).max()) < 0.5 / 255
    reference = clean
    if jpeg:
        bad = defects.save_as_jpeg(bad, jpeg) if jpeg > 0 else defects.save_as_png(bad)
        if as_is or unchanged:  # a clean photo, saved: what a method does to it is measured against what it was given
            reference = bad
    before = (1.0, 0.0) if as_is or unchanged else (ssim(bad, clean), delta_e(bad, clean))
    row = {"photo": photo, "family": family, "group": "distorted" if family == "distorted" else case.group,
           "index": index, "label": "distorted, no clean original" if family == "distorted" else case.label(),
           "unchanged": unchanged, "jpeg": jpeg,
           "parts": [[name, params] for name, params in case.parts], "before": before, "after": {},
           "actions": {}, "edits": {}, "wall": {}}
    for method in methods:
        t = time.perf_counter()
        if method == "mcts":
            classic, reward, perceiver = mcts_tools_and_reward(model_for or family)
            tools = CountingTools(classic)
            extra = {} if perceiver is None else {"perceiver": perceiver}
            result = mcts_enhance(bad.copy(), tools, reward, replace(SETTINGS, seed=seed), **extra)
            out = result.image
            row["actions"][method] = [a.label() for a in result.actions]
            row["edits"][method] = tools.edits
        elif method in BASELINES:
            out = BASELINES[method](bad.copy())
        else:
            raise ValueError(f"unknown method {method!r}: choose from {METHODS}")
        out = np.asarray(out, np.float32)
        if np.array_equal(out, reference):
            row["after"][method] = (1.0, 0.0)
        elif np.array_equal(out, bad):  # left as it came (none; a search that found nothing to do)
            row["after"][method] = before
        else:
            row["after"][method] = (ssim(out, reference), delta_e(out, reference))
        row["wall"][method] = time.perf_counter() - t  # its scoring against the original included
        if family == "distorted":  # no original to compare with: the no-reference scores before and after
            row.setdefault("no_reference", {"input": no_reference_scores(bad)})[method] = no_reference_scores(out)
    return row


def no_reference_scores(img: np.ndarray) -> tuple[float, float]:
    """BRISQUE and NIQE of an image (lower is better), as the reward reads them: on its four native-resolution
    texture crops side by side."""
    from edit_agents.agents.quality.metrics import raw_statistics

    raw = raw_statistics(img, texture=False, iqa=("brisque", "niqe"))
    return float(raw["brisque"]), float(raw["niqe"])


def _run(args: tuple) -> dict:
    return run_case(*args)


# --- report --------------------------------------------------------------------------------------

def _stats(rows: list[dict], method: str) -> dict:
    return {"n": len(rows),
            "closer": sum(closer(r["before"], r["after"][method]) for r in rows),
            "harmed": sum(harmed(r["before"], r["after"][method]) for r in rows),
            "untouched": sum(untouched(r["after"][method]) for r in rows),
            "ssim": statistics.mean(r["after"][method][0] for r in rows),
            "de": statistics.mean(r["after"][method][1] for r in rows),
            "min_ssim": min(r["after"][method][0] for r in rows),
            "max_de": max(r["after"][method][1] for r in rows)}


def summarise(rows: list[dict], methods: tuple[str, ...]) -> dict:
    """Counts and means per family, per group, over every degraded case ("all") and over the clean photos."""
    degraded = [r for r in rows if r["family"] not in AS_IS and not r.get("unchanged")]
    sets = {}
    for family in dict.fromkeys(r["family"] for r in degraded):
        sets[("family", family)] = [r for r in degraded if r["family"] == family]
    for group in defects.GROUPS:
        sets[("group", group)] = [r for r in degraded if r["group"] == group]
    sets[("group", "all")] = degraded
    evaluation = {r["photo"] for r in rows if r["family"] not in AS_IS} or set(EVALUATION)
    sets[("clean", "clean")] = [r for r in rows if r["family"] == "clean" and r["photo"] in evaluation]
    sets[("clean", "other")] = [r for r in rows if r["family"] == "clean" and r["photo"] not in evaluation]
    sets[("clean", "unchanged")] = [r for r in rows if r.get("unchanged")]
    out = {}
    for key, sel in sets.items():
        if sel:
            out[key] = {"n": len(sel), "before": (statistics.mean(r["before"][0] for r in sel),
                                                  statistics.mean(r["before"][1] for r in sel)),
                        "methods": {m: _stats(sel, m) for m in methods}}
    return out


def _pct(k: int, n: int) -> str:
    return f"{100 * k / max(1, n):.0f}%"


def report(rows: list[dict], methods: tuple[str, ...], detail: bool = False) -> dict:
    """Print the tables; return summarise(rows, methods), the figures they show."""
    summary = summarise(rows, methods)
    if detail:
        print(f"{'photo':<18}{'family':<22}{'#':>2}{'SSIM before':>12}{'ΔE':>7}  "
              + "".join(f"{m[:15] + ' SSIM':>21}{'ΔE':>7}" for m in methods) + "   mcts actions | case")
        for r in rows:
            print(f"{r['photo']:<18}{r['family']:<22}{r['index']:>2}{r['before'][0]:>12.3f}{r['before'][1]:>7.2f}  "
                  + "".join(f"{r['after'][m][0]:>21.3f}{r['after'][m][1]:>7.2f}" for m in methods)
                  + "   " + (", ".join(r["actions"].get("mcts", [])) or "(none)") + " | " + r["label"])
        print()
    print("per family and group, degraded cases: closer/n (%), harmed, mean SSIM and ΔE after "
          "(before: the degraded input's)")
    head = f"{'family':<22}{'n':>4}{'before':>14}  " + "".join(f"| {m:<30}" for m in methods)
    print(head + "\n" + "-" * len(head))
    last_kind = "family"
    for (kind, name), s in summary.items():
        if kind == "clean":
            continue
        if kind != last_kind:
            print("-" * len(head))
            last_kind = kind
        label = name if kind == "family" else f"[{name}]"
        cells = ""
        for m in methods:
            st = s["methods"][m]
            cells += (f"| {st['closer']:>3}/{st['n']:<3} {_pct(st['closer'], st['n']):>4} h{st['harmed']:<3}"
                      f" {st['ssim']:.3f} {st['de']:>5.2f} ")
        print(f"{label:<22}{s['n']:>4}{s['before'][0]:>8.3f}{s['before'][1]:>6.2f}  " + cells)
    for key, title in ((("clean", "clean"), "clean photos"),
                       (("clean", "other"), "other clean photos (the calibration photos and the retina; with "
                                            "--comfy-pictures, the pictures not drawn)"),
                       (("clean", "unchanged"), "cases their defect left unchanged (colour on a black-and-white photo)")):
        clean = summary.get(key)
        if clean:
            print(f"\n{title} ({clean['n']}): untouched, harmed (beyond the bounds above), min SSIM, max ΔE")
            for m in methods:
                st = clean["methods"][m]
                print(f"  {m:<16} untouched {st['untouched']}/{st['n']}, harmed {st['harmed']}, "
                      f"min SSIM {st['min_ssim']:.3f}, max ΔE {st['max_de']:.2f}")
    distorted = [r for r in rows if r["family"] == "distorted"]
    if distorted:
        print(f"\ndistorted photos with no clean original ({len(distorted)}): each method's edits (mcts), how far it "
              "moved the photo (SSIM, ΔE to the input), BRISQUE and NIQE before -> after (lower is better)")
        for r in distorted:
            nr = r["no_reference"]
            edits = f"; mcts: {', '.join(r['actions']['mcts']) or 'no edit'}" if "mcts" in r["actions"] else ""
            print(f"  {r['photo']}: BRISQUE {nr['input'][0]:.1f}, NIQE {nr['input'][1]:.2f} as it is{edits}")
            for m in methods:
                print(f"    {m:<16} SSIM {r['after'][m][0]:.3f}, ΔE {r['after'][m][1]:.2f}; "
                      f"BRISQUE {nr[m][0]:.1f}, NIQE {nr[m][1]:.2f}")
    print("\nsummary (markdown): per group, cases closer (%), harmed, mean SSIM / ΔE after\n")
    print("| group | n | before SSIM / ΔE | " + " | ".join(methods) + " |")
    print("|---|---:|---|" + "---|" * len(methods))
    for (kind, name), s in summary.items():
        if kind == "group":
            cells = [f"{_pct(st['closer'], st['n'])} closer, {st['harmed']} harmed, {st['ssim']:.3f} / {st['de']:.2f}"
                     for st in (s["methods"][m] for m in methods)]
            label = "**all degraded**" if name == "all" else name
            print(f"| {label} | {s['n']} | {s['before'][0]:.3f} / {s['before'][1]:.2f} | " + " | ".join(cells) + " |")
    for key, label in ((("clean", "clean"), "clean"), (("clean", "other"), "other clean photos"),
                       (("clean", "unchanged"), "unchanged by the defect")):
        clean = summary.get(key)
        if clean:
            cells = [f"{st['untouched']}/{st['n']} untouched, min SSIM {st['min_ssim']:.3f}, max ΔE {st['max_de']:.2f}"
                     for st in (clean["methods"][m] for m in methods)]
            print(f"| {label} | {clean['n']} | 1.000 / 0.00 | " + " | ".join(cells) + " |")
    return summary


# --- command line --------------------------------------------------------------------------------

def cases(photos: list[str], families: list[str], per_family: int, first: int = 0) -> list[tuple[str, str, int]]:
    """(photo, family, case index): ``per_family`` cases from ``first`` on (a clean photo: one)."""
    return [(p, f, i) for p in photos for f in families
            for i in ((0,) if f == "clean" else range(first, first + per_family))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--photos", default=",".join(EVALUATION), help="comma-separated (default: photoset.EVALUATION)")
    ap.add_argument("--families", default=",".join(defects.families() + ["clean"]),
                    help='comma-separated families of tests/support/defects.py, "combination" and "clean" (default: all)')
    ap.add_argument("--other-clean", default=",".join(OTHER_CLEAN),
                    help="photos run only as clean photos, beside the evaluation photos' own (default: every other "
                         "photo the project has; the calibration ones among them are in-sample for the reward)")
    ap.add_argument("--no-reference", default=",".join(NO_REFERENCE),
                    help="distorted photos with no clean original, run beside the clean photos and reported apart")
    ap.add_argument("--per-family", type=int, default=2, help="cases per photo and family (clean: one)")
    ap.add_argument("--first-case", type=int, default=0,
                    help="the first case's index (the strengths are drawn per index): fresh draws, never run before, "
                         "from an index past those a change was looked at on")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {METHODS}")
    ap.add_argument("--side", type=int, default=512, help="longest side of the photos (default 512)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes, one torch thread each")
    ap.add_argument("--seed", type=int, default=0, help="the search's seed (the cases' strengths are fixed)")
    ap.add_argument("--detail", action="store_true", help="print every case")
    ap.add_argument("--json", metavar="PATH", help="write every row here")
    ap.add_argument("--held-out", action="store_true", help="the held-out families (defects.HELD_OUT, never tuned on) "
                    "instead of --families, with no clean photos")
    ap.add_argument("--saved-as-jpeg", type=int, default=0, metavar="QUALITY",
                    help="save every case (and clean photo) as a JPEG at this quality before any method sees it, as a "
                         "phone or an editor saves a photo; a degraded case is still judged against its clean original, "
                         "a clean photo against the JPEG it was given (default 0: not saved)")
    ap.add_argument("--saved-as-png", action="store_true",
                    help="save every case (and clean photo) as an 8-bit PNG before any method sees it: rounded to 8 "
                         "bits, as every photo a user loads is (the defect space's cases are float arrays)")
    ap.add_argument("--comfy-pictures", type=int, default=0, metavar="N",
                    help="other pictures, never tuned on: N of ComfyUI's template pictures (photoset.comfy_pictures) "
                         "drawn at random take the photos' place, and every one of them is run as a clean picture")
    ap.add_argument("--comfy-draw", type=int, default=COMFY_DRAW, metavar="SEED",
                    help=f"the seed of --comfy-pictures' draw (default {COMFY_DRAW}, the pictures the docs' figures are "
                         "from): another seed draws other pictures, to check a change on pictures it was not looked at on")
    ap.add_argument("--lofo-rewards", metavar="DIR", help="leave-one-family-out: each family's search gets the reward "
                    "fitted without it (DIR/<family>.json from scripts/fit_reward.py --lofo --lofo-dir DIR; the "
                    "fits of bench/results/photoagent_generalise_lofo.txt are in bench/results/lofo_fits)")
    a = ap.parse_args()
    if a.lofo_rewards:
        global LOFO_REWARDS
        LOFO_REWARDS = os.environ["EDIT_AGENTS_LOFO_REWARDS"] = str(Path(a.lofo_rewards).resolve())
    methods = tuple(m for m in a.methods.split(",") if m)
    families = defects.held_out() if a.held_out else [f for f in a.families.split(",") if f]
    unknown = [m for m in methods if m not in METHODS] + \
              [f for f in families if f not in defects.FAMILIES and f not in defects.HELD_OUT
               and f not in ("combination", "clean")]
    if unknown:
        ap.error(f"unknown method(s) or family(ies): {', '.join(unknown)}")
    if a.saved_as_png and a.saved_as_jpeg:
        ap.error("--saved-as-png and --saved-as-jpeg: choose one")
    save = -1 if a.saved_as_png else a.saved_as_jpeg
    if a.comfy_pictures:
        pictures = sorted(comfy_pictures())
        if not pictures:
            ap.error("--comfy-pictures: none of ComfyUI's template packages is installed (make setup installs them)")
        a.photos = ",".join(random.Random(a.comfy_draw).sample(pictures, min(a.comfy_pictures, len(pictures))))
        a.other_clean, a.no_reference = ",".join(p for p in pictures if p not in a.photos.split(",")), ""
    todo = cases([p for p in a.photos.split(",") if p], families, a.per_family, a.first_case)
    if "clean" in families:
        todo += [(p, "clean", 0) for p in a.other_clean.split(",") if p]
        todo += [(p, "distorted", 0) for p in a.no_reference.split(",") if p]
    t0 = time.perf_counter()
    print(f"{len(todo)} cases at {a.side} px ({a.per_family} per photo and family"
          f"{f' from case {a.first_case}' if a.first_case else ''}, clean one)"
          f"{f', each saved as a JPEG at quality {a.saved_as_jpeg}' if a.saved_as_jpeg else ''}"
          f"{', each saved as an 8-bit PNG' if save == -1 else ''}, MCTS defaults: "
          f"{SETTINGS.simulations} simulations x depth {SETTINGS.depth}, up to {SETTINGS.max_steps} steps, search "
          f"copy {SETTINGS.preview_side} px, seed {a.seed}; {a.jobs} worker(s) of 1 torch thread")
    with ProcessPoolExecutor(a.jobs, initializer=share_of_cores, initargs=(1,)) as pool:
        rows = list(pool.map(_run, [(p, f, i, a.side, methods, a.seed, None, save) for p, f, i in todo]))
    report(rows, methods, a.detail)
    if "mcts" in methods:
        print(f"\nmcts: edits mean {statistics.mean(r['edits']['mcts'] for r in rows):.1f}, "
              f"wall mean {statistics.mean(r['wall']['mcts'] for r in rows):.2f} s per case")  # scoring included
    if a.json:
        for r in rows:
            r["closer"] = {m: r["family"] not in AS_IS and closer(r["before"], r["after"][m]) for m in methods}
            r["harmed"] = {m: r["family"] != "distorted" and harmed(r["before"], r["after"][m]) for m in methods}
        Path(a.json).write_text(json.dumps({"side": a.side, "seed": a.seed, "methods": methods, "rows": rows},
                                           indent=1))
        print(f"rows written to {a.json}")
    print(f"\nwall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
