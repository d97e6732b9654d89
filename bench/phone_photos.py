"""Benchmark: photos as phones save them, with strong scene light. Are they left as the photographer meant, and is a
wrong white balance on surfaces that should be neutral still corrected?

The cases are tests/support/phone.py's: sunsets, golden-hour light, blue skies, vivid flowers, plain daylight and
daylight through a phone's HDR tone mapping, each meant as it is, and two controls with a wrong white-balance preset
(a daylight scene shot for tungsten, a room under lamps shot for daylight), each built on photoset's photos and saved
as a 4:2:0 JPEG. Seeds 0 to --seeds-1 were looked at while the rules were written; seeds from phone.HELD_APART on were
not, and are reported apart.

Every method runs on the saved JPEG and is judged against what the photographer meant (the file itself; for a
control, the scene under the right preset) by SSIM and mean CIEDE2000, as bench/photoagent_generalise.py judges: a
meant photo is "left" when no edit moved it past the harm bounds (SSIM down 0.02, ΔE up 1.0) and "untouched" when no
edit was kept at all; a control is "closer" as photoagent_fidelity.closer says.

Run: .venv/bin/python bench/phone_photos.py [--seeds 6] [--held-apart 6] [--methods mcts,autocontrast,clahe]
     [--jobs 2] [--detail]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import phone
from edit_agents.agents.photoagent.search import mcts_enhance
from photoagent_fidelity import SETTINGS, closer, delta_e, share_of_cores, ssim
from photoagent_generalise import BASELINES, HARM_DE, HARM_SSIM, mcts_tools_and_reward, untouched

METHODS = ("mcts", "autocontrast", "autolevel-gamma", "clahe")


def run_case(kind: str, seed: int, methods: tuple[str, ...]) -> dict:
    """One case, each method on it: its actions and SSIM / ΔE against what was meant, before and after."""
    case = phone.case(kind, seed)
    before = (ssim(case.image, case.truth), delta_e(case.image, case.truth))
    row = {"case": case.name, "kind": kind, "seed": seed, "ground": case.ground, "meant": case.meant,
           "before": before, "after": {}, "actions": {}, "wall": {}}
    for method in methods:
        t = time.perf_counter()
        if method == "mcts":
            tools, reward, _ = mcts_tools_and_reward("clean")
            result = mcts_enhance(case.image.copy(), tools, reward, replace(SETTINGS, seed=0))
            out, row["actions"][method] = result.image, [a.label() for a in result.actions]
        else:
            out, row["actions"][method] = BASELINES[method](case.image.copy()), [method]
        row["wall"][method] = time.perf_counter() - t
        row["after"][method] = (ssim(out, case.truth), delta_e(out, case.truth))
    return row


def verdict(row: dict, method: str) -> str:
    """"untouched", "left" (moved within the harm bounds) or "edited" for a meant photo; "closer" or "not closer"
    for a control."""
    (s0, e0), (s1, e1) = row["before"], row["after"][method]
    if not row["meant"]:
        return "closer" if closer((s0, e0), (s1, e1)) else "not closer"
    if untouched((s1, e1)) or (method == "mcts" and not row["actions"][method]):
        return "untouched"
    return "left" if s1 >= s0 - HARM_SSIM and e1 <= e0 + HARM_DE else "edited"


def _run(args: tuple) -> dict:
    share_of_cores(1)
    return run_case(*args)


def report(rows: list[dict], methods: tuple[str, ...], title: str) -> None:
    print(f"\n{title}: per kind, meant photos left as they were (untouched + moved within the bounds) / n, "
          "controls closer / n; mean SSIM / ΔE to what was meant")
    print(f"{'kind':26s} {'n':>3s}  {'before':>12s}  " + "  ".join(f"{m:>26s}" for m in methods))
    for kind in phone.KINDS:
        some = [r for r in rows if r["kind"] == kind]
        if not some:
            continue
        s0 = np.mean([r["before"][0] for r in some])
        e0 = np.mean([r["before"][1] for r in some])
        cells = []
        for m in methods:
            v = [verdict(r, m) for r in some]
            good = sum(x in ("untouched", "left", "closer") for x in v)
            s1 = np.mean([r["after"][m][0] for r in some])
            e1 = np.mean([r["after"][m][1] for r in some])
            cells.append(f"{good:2d}/{len(some):<2d} ({v.count('untouched'):2d} u) {s1:.3f} {e1:5.2f}")
        print(f"{kind:26s} {len(some):3d}  {s0:.3f} {e0:5.2f}  " + "  ".join(f"{c:>26s}" for c in cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 of each kind (looked at while tuning)")
    ap.add_argument("--held-apart", type=int, default=6, help="seeds from phone.HELD_APART on (never looked at)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--detail", action="store_true", help="print every case")
    a = ap.parse_args()
    methods = tuple(a.methods.split(","))
    seeds = list(range(a.seeds)) + list(range(phone.HELD_APART, phone.HELD_APART + a.held_apart))
    jobs = [(kind, seed, methods) for seed in seeds for kind in phone.KINDS]
    t = time.perf_counter()
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(_run, jobs))
    if a.detail:
        for r in rows:
            print(f"{r['case']:28s} {r['ground']:18s} " + " | ".join(
                f"{m} {verdict(r, m)} {r['after'][m][0]:.3f} {r['after'][m][1]:.2f}" + (
                    f" {', '.join(r['actions'][m])}" if m == "mcts" else "") for m in methods))
    print(f"{len(rows)} phone photos at {phone.SIDE} px, MCTS defaults (seed 0), the default reward and perceiver; "
          f"{a.jobs} worker(s)")
    report([r for r in rows if r["seed"] < phone.HELD_APART], methods, f"seeds 0-{a.seeds - 1} (looked at)")
    report([r for r in rows if r["seed"] >= phone.HELD_APART], methods,
           f"seeds {phone.HELD_APART}-{phone.HELD_APART + a.held_apart - 1} (held apart)")
    edits = Counter(label.split("(")[0] for r in rows if r["meant"] for label in r["actions"].get("mcts", []))
    print("\nmcts's edits kept on meant photos, by tool: "
          + (", ".join(f"{k} {v}" for k, v in edits.most_common()) or "none"))
    print(f"wall {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
