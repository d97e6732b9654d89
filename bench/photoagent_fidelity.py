"""Benchmark (issue 13): does offline PhotoAgent do what a photographer wants, judged against the truth?

The evaluation photos of tests/support/photoset.py (never used to fit the reward), each clean and with each
known defect at its benchmark strength. Every result is compared with the clean original by SSIM and
mean CIEDE2000, not by the reward the search optimises.

Methods, at matched budgets of edits: a tool call on a search state (its small copy) or on a photo at
full resolution counts as one edit; the same call on the search state's four native-resolution texture
crops is part of that edit's evaluation and is not counted again:
  mcts        the shipped search (backup of the rollout's final value G(s_T), as in Algorithm 1)
  greedy      one-step look-ahead (agents/photoagent/enhance.py) with as many candidates per step as MCTS's budget allows
  random      random perceiver proposals from random states, the best-scoring kept, for MCTS's count of edits
  random-all  the same, for MCTS's count of every tool call, the crops' included (5 per search edit): the
              accounting of the benchmark's first runs, which gives random search several times the budget

A degraded case counts as "closer" when SSIM rises by at least 0.005 with ΔE up by at most 0.5, or
ΔE falls by at least 0.5 with SSIM down by at most 0.005. Targets (issue 13): >= 85% of degraded
cases closer, none more than 0.02 SSIM worse than it started, clean photos SSIM >= 0.95 and ΔE <= 2 to
themselves (most untouched), MCTS at least as good as greedy and random.

Run: .venv/bin/python bench/photoagent_fidelity.py [--side 512] [--jobs 2] [--methods mcts,greedy]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from photoset import DEFECTS, EVALUATION, degrade, load  # noqa: E402

from edit_agents.agents.photoagent.enhance import EnhanceSettings, enhance  # noqa: E402
from edit_agents.agents.photoagent.search import MCTSSettings, mcts_enhance  # noqa: E402
from edit_agents.agents.quality.perception import RulePerceiver  # noqa: E402
from edit_agents.agents.quality.reward import Reward  # noqa: E402
from edit_agents.agents.quality.metrics import image_statistics  # noqa: E402
from edit_agents.tools import default_registry  # noqa: E402

METHODS = ("mcts", "greedy", "random", "random-all")
SETTINGS = MCTSSettings()  # the MCTS Planner node's defaults, as a user gets them


class CountingTools:
    """The registry with its calls counted: ``edits`` (the budget the methods are compared at) and ``calls``."""

    def __init__(self, tools):
        self.tools, self.calls, self.edits = tools, 0, 0

    def call(self, *args, **kwargs):
        self.calls += 1
        # the search edits a state's native crops with the pins measured on its copy and no scale
        # (agents/mcts.apply_call): the copy's call is the edit, the crops' calls evaluate it
        crop = "pins" in kwargs and "scale" not in kwargs
        self.edits += not crop
        return self.tools.call(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tools, name)

    def __len__(self):
        return len(self.tools)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return float(structural_similarity(a, b, channel_axis=2, data_range=1.0))


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.color import deltaE_ciede2000, rgb2lab

    return float(deltaE_ciede2000(rgb2lab(a), rgb2lab(b)).mean())


def closer(before: tuple[float, float], after: tuple[float, float]) -> bool:
    (s0, e0), (s1, e1) = before, after
    return (s1 - s0 >= 0.005 and e1 - e0 <= 0.5) or (e0 - e1 >= 0.5 and s0 - s1 <= 0.005)


def random_search(img: np.ndarray, tools: CountingTools, reward: Reward, calls: int, seed: int = 0) -> np.ndarray:
    rng, perceiver = random.Random(seed), RulePerceiver()
    best, best_score, state = img, reward.score(img, img).total, img
    while tools.calls < calls:
        options = perceiver.propose(image_statistics(state), SETTINGS.branching, tools.names())
        if not options:
            if state is img:
                break  # nothing to try from the input itself
            state = img
            continue
        call = rng.choice(options)
        state = tools.call(call.tool, state, call.params)[0]
        s = reward.score(state, img).total
        if s > best_score + SETTINGS.min_gain:
            best, best_score = state, s
        if rng.random() < 0.34:  # restart from the input now and then
            state = img
    return best


def run_case(args: tuple[str, str, int, tuple[str, ...], int]) -> dict:
    name, defect, side, methods, seed = args
    settings = replace(SETTINGS, seed=seed)
    clean = load(name, side)
    bad = clean if defect == "clean" else degrade(clean, defect, DEFECTS[defect][2])
    classic, reward = default_registry().subset(categories=["classic"]), Reward()
    row = {"photo": name, "defect": defect, "before": (ssim(bad, clean), delta_e(bad, clean)), "calls": {}, "after": {},
           "actions": {}, "wall": {}}
    budget = budget_all = None
    for method in methods:
        tools, t = CountingTools(classic), time.perf_counter()
        if method == "mcts":
            result = mcts_enhance(bad, tools, reward, settings)
            out, actions = result.image, [a.label() for a in result.actions]
            budget, budget_all = tools.edits, tools.calls
        elif method == "greedy":
            calls = budget or 60
            per_step = max(1, calls // SETTINGS.max_steps - SETTINGS.top_k)
            result = enhance(bad, tools, reward, EnhanceSettings(max_steps=SETTINGS.max_steps, candidates=per_step,
                                                                 top_k=SETTINGS.top_k, min_gain=SETTINGS.min_gain,
                                                                 preview_side=SETTINGS.preview_side))
            out, actions = result.image, [a.label() for a in result.actions]
        else:
            calls = (budget_all if method == "random-all" else budget) or 60
            out, actions = random_search(bad, tools, reward, calls, seed), ["(random)"]
        row["after"][method] = (ssim(out, clean), delta_e(out, clean))
        row["calls"][method], row["actions"][method] = tools.edits, actions
        row["wall"][method] = time.perf_counter() - t
    return row


def report(rows: list[dict], methods: tuple[str, ...]) -> None:
    print(f"{'photo':<18}{'defect':<15}{'SSIM before':>12}{'ΔE before':>10}  " +
          "".join(f"{m + ' SSIM':>16}{'ΔE':>7}" for m in methods) + "   mcts actions")
    for r in rows:
        print(f"{r['photo']:<18}{r['defect']:<15}{r['before'][0]:>12.3f}{r['before'][1]:>10.2f}  " +
              "".join(f"{r['after'][m][0]:>16.3f}{r['after'][m][1]:>7.2f}" for m in methods) +
              "   " + (", ".join(r["actions"].get(methods[0], [])) or "(none)"))
    defects = [r for r in rows if r["defect"] != "clean"]
    cleans = [r for r in rows if r["defect"] == "clean"]
    print()
    for m in methods:
        n_closer = sum(closer(r["before"], r["after"][m]) for r in defects)
        worst = min((r["after"][m][0] - r["before"][0], r["photo"], r["defect"]) for r in defects) if defects else None
        print(f"{m:<9} degraded cases closer: {n_closer}/{len(defects)} ({100 * n_closer / max(1, len(defects)):.0f}%)"
              f"; mean SSIM {statistics.mean(r['before'][0] for r in defects):.3f} -> "
              f"{statistics.mean(r['after'][m][0] for r in defects):.3f}, mean ΔE "
              f"{statistics.mean(r['before'][1] for r in defects):.2f} -> {statistics.mean(r['after'][m][1] for r in defects):.2f}"
              + (f"; worst SSIM change {worst[0]:+.3f} ({worst[1]}, {worst[2]})" if worst else "")
              + f"; edits mean {statistics.mean(r['calls'][m] for r in rows):.0f}"
              f"; wall mean {statistics.mean(r['wall'][m] for r in rows):.1f} s")
        if cleans:
            untouched = sum(r["after"][m] == (1.0, 0.0) for r in cleans)
            print(f"{'':<9} clean photos: {untouched}/{len(cleans)} untouched; min SSIM "
                  f"{min(r['after'][m][0] for r in cleans):.3f}, max ΔE {max(r['after'][m][1] for r in cleans):.2f}")
    print("\nper defect, cases closer (" + " / ".join(methods) + "):")
    for defect in DEFECTS:
        sel = [r for r in defects if r["defect"] == defect]
        if sel:
            print(f"  {defect:<15}" + " / ".join(f"{sum(closer(r['before'], r['after'][m]) for r in sel)}/{len(sel)}"
                                                for m in methods))


def share_of_cores(threads: int) -> None:
    """A worker's thread pools: torch's, and OpenCV's, which keeps its own."""
    torch.set_num_threads(threads)
    try:
        import cv2
    except ImportError:
        return
    cv2.setNumThreads(threads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=512, help="longest side of the photos (default 512)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {METHODS}")
    ap.add_argument("--photos", default=",".join(EVALUATION))
    ap.add_argument("--defects", default="clean," + ",".join(DEFECTS))
    ap.add_argument("--seed", type=int, default=0, help="the seed of MCTS and of random search (both are random; "
                                                        "run several to see how much the figures move)")
    a = ap.parse_args()
    methods = tuple(m for m in a.methods.split(",") if m)
    if "mcts" not in methods and ({"greedy", "random", "random-all"} & set(methods)):
        methods = ("mcts",) + methods  # the budget comes from MCTS's count
    cases = [(p, d, a.side, methods, a.seed) for p in a.photos.split(",") for d in a.defects.split(",")]
    t0 = time.perf_counter()
    # one process per core, not two processes' torch threads on each core (they spin waiting for each other)
    threads = max(1, (os.cpu_count() or 1) // a.jobs)
    print(f"{len(cases)} cases at {a.side} px, MCTS defaults: {SETTINGS.simulations} simulations x depth "
          f"{SETTINGS.depth}, up to {SETTINGS.max_steps} steps, search copy {SETTINGS.preview_side} px, seed {a.seed}; "
          f"{a.jobs} worker(s) of {threads} torch thread(s)")
    with ProcessPoolExecutor(a.jobs, initializer=share_of_cores, initargs=(threads,)) as pool:
        rows = list(pool.map(run_case, cases))
    report(rows, methods)
    print(f"\nwall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
