"""Benchmark (issues 6 and 13): MCTS speed, low-resolution ranking agreement, and a 12-megapixel run.

1. Wall time and peak memory of 3 steps x 20 simulations on a 12-megapixel photo (4000x3000); 4: the same on a
   12-megapixel photo under a warm light (a white balance kept). Both say where the time goes: each reading (which
   metric or estimator), the edits and the reward, with their calls, calls per search state and seconds.
2. Simulations per second with the search copy at full, 1/2 and 1/4 resolution (classic tools, the
   offline reward), on a 2048 px photo that is dark, noisy and warm, so the tree stays wide.
3. Agreement between reward rankings of the same candidate edits scored as the search scores them
   (reduced copy plus native-resolution texture crops, pixel lengths scaled) and as they really are (the
   edits made to the whole photo, the result scored):
   Spearman, Kendall, top-1 and top-3 retention, on dim, flat, warm, noisy and blurred photos
   (PhotoAgent reports Spearman 0.94 at 1/2 and 0.79 at 1/4).
Run: .venv/bin/python bench/mcts_speed.py
"""
from __future__ import annotations

import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from photoset import DEFECTS, degrade, load  # noqa: E402

from edit_agents.agents.photoagent.search import MCTSSettings, apply_call, mcts_enhance, root_state  # noqa: E402
from edit_agents.agents.quality.perception import RulePerceiver
from edit_agents.agents.quality.reward import ClassicReward
from edit_agents.agents.quality.metrics import image_statistics
from edit_agents.agents.quality import iqa, metrics, reward as reward_module
from edit_agents.agents.photoagent import cache, scorer, search, state, tree
from edit_agents.tools import default_registry
from edit_agents.tools import imageops
from edit_agents.tools.spec import ToolRegistry
from edit_agents.tools.imageops import resize

TOOLS = default_registry().subset(categories=["classic"])
MIN_SEQUENCES = 8  # fewer candidates than this make a rank correlation meaningless
REWARD = ClassicReward()


TOOL_LABEL = "every tool call (search states and full resolution)"
TOOL_CALL = ToolRegistry.__dict__["call"]
FULL_SIZE = 1_000_000  # array elements: an image this large is the photo itself, not a search state's copy or crop
# What a search step reads, as (label, module, attribute): each is timed where the search looks it up. An indented
# label is a part of the unindented one above it (its seconds are counted in both).
READINGS = (
    ("reward.score (whole)", reward_module.Reward, "score"),
    ("  global statistics (tone, colour)", metrics, "global_statistics"),
    ("    illuminant estimate", metrics, "illuminant_estimate"),
    ("    neutral evidence", metrics, "neutral_evidence"),
    ("    lens fringes", metrics, "fringe_scales"),
    ("    dark channel", metrics, "patch_minimum"),
    ("  texture crops' readings", metrics, "crop_readings"),
    ("    noise sigma", metrics, "_noise_sigmas"),
    ("    sharpness", metrics, "_sharpnesses"),
    ("    chroma noise", metrics, "_chroma_noise"),
    ("    chroma blotches", metrics, "_chroma_blotches"),
    ("    posterisation (level step)", metrics, "level_step"),
    ("    impulses", metrics, "impulse_share"),
    ("    JPEG grid (also quality_readings)", metrics, "grid_measures"),
    ("  edges' width (a photo short of fine detail)", metrics, "edge_width"),
    ("  row banding", metrics, "banding_sigma"),
    ("  BRISQUE", iqa, "brisque"),
    ("  NIQE", iqa, "niqe"),
    ("  preservation (SSIM)", reward_module, "structure_similarity"),
    ("held readings (search.readings_without)", search, "quality_readings"),
    ("held readings of a sequence (state.readings_after)", state, "quality_readings"),
    ("kept photo's readings (scorer.as_it_is)", scorer, "quality_readings"),
    ("restorations' forward models", scorer, "through_forward_models"),
    ("blur kernel estimate", search, "estimate_kernel"),
    ("rule perceiver (whole)", RulePerceiver, "perceive"),
    ("edits on search states (apply_call)", cache, "apply_call"),
    ("  crops edited with a state", state, "crops_edited"),
    ("tree view thumbnails", tree, "thumbnail_data_url"),
    ("trace previews' thumbnails", imageops, "thumbnail_data_url"),
    (TOOL_LABEL, ToolRegistry, "call"),
    ("a step's root state (copy and crops)", search, "root_state"),
    ("the frame around the photo", search, "photo_in_frame"),
)


class Readings:
    """Calls and seconds of each of READINGS while the block runs (summed over the search's two threads), put back
    as they were after it."""

    def __init__(self):
        self.calls: Counter = Counter()
        self.seconds: dict[str, float] = defaultdict(float)
        self.originals: list = []

    def __enter__(self) -> "Readings":
        for label, owner, name in READINGS:
            fn = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            self.originals.append((owner, name, fn))
            setattr(owner, name, self._timed(label, fn))
        return self

    def _timed(self, label: str, fn):
        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls[label] += 1
                self.seconds[label] += time.perf_counter() - t
                if fn is TOOL_CALL:  # each tool, on a search state or at full resolution (the photo's own size)
                    where = "full resolution" if np.asarray(args[2]).size >= FULL_SIZE else "search states"
                    self.calls[f"  {args[1]} ({where})"] += 1
                    self.seconds[f"  {args[1]} ({where})"] += time.perf_counter() - t
        return timed

    def __exit__(self, *exc) -> None:
        for owner, name, fn in reversed(self.originals):
            setattr(owner, name, fn)

    def report(self, states: int, wall: float) -> None:
        """Each reading's calls, calls per search state (``states``: the states the search made, roots included) and
        seconds, in READINGS' order."""
        print(f"   where the time goes ({wall:.1f} s wall; {states} search states; seconds summed over both threads):")
        tools = sorted((k for k in self.calls if k.startswith("  ") and k.endswith(")") and " (" in k
                        and k not in {label for label, _, _ in READINGS}), key=lambda k: -self.seconds[k])
        for label, _, _ in READINGS:
            for line in [label] + (tools if label == TOOL_LABEL else []):
                if self.calls[line]:
                    print(f"   {line:<52} {self.calls[line]:5d} calls {self.calls[line] / states:6.2f}/state "
                          f"{self.seconds[line]:7.2f} s")


def photo(width: int, height: int, name: str = "chelsea", dim: float = 0.55) -> np.ndarray:
    """A real photo resized to width x height and dimmed, so there is something to repair."""
    img = load(name, max_side=100_000)  # as scikit-image ships it, black-and-white as RGB
    return (resize(img, (width, height), "cubic").clip(0, 1) * dim).astype(np.float32)


def sims_per_second(img: np.ndarray, side: int, simulations: int = 20) -> tuple[float, int, float]:
    """The search's simulations per second in one run: the search alone (not the full-resolution re-runs, nor the
    tree view's thumbnails), its count, and the rate with the thumbnails counted (the planner step's whole time, as
    this benchmark measured it until 2026-11-27: the thumbnails cost more at full size, which flattered the ratio)."""
    s = MCTSSettings(simulations=simulations, depth=3, max_steps=1, patience=1, preview_side=side, top_k=1,
                     time_budget_s=600)
    result = mcts_enhance(img, TOOLS, REWARD, s)
    planner = [step for step in result.trace.steps if step.role == "planner"]
    search_s = sum(step.outputs["search_s"] for step in planner)
    with_tree_s = sum(step.wall_ms for step in planner) / 1000
    return result.simulations / search_s, result.simulations, result.simulations / with_tree_s


def candidates(img: np.ndarray, n: int, seed: int = 0) -> list[list]:
    """Up to n distinct sequences of 1-3 perceiver proposals (what a search would compare)."""
    rng, perceiver, out, seen = random.Random(seed), RulePerceiver(), [], set()
    options_after: dict[tuple, tuple[np.ndarray, list]] = {}  # a prefix's image and proposals, worked out once

    def options(key: tuple, state: np.ndarray) -> tuple[np.ndarray, list]:
        if key not in options_after:
            options_after[key] = state, perceiver.propose(image_statistics(state), 8, TOOLS.names())
        return options_after[key]

    for _ in range(20 * n):
        if len(out) >= n:
            break
        state, seq, key = img, [], ()
        for _ in range(rng.randint(1, 3)):
            state, proposals = options(key, state)
            if not proposals:
                break
            call = rng.choice(proposals)
            seq.append(call)
            key += (call.key(),)
            state = options_after[key][0] if key in options_after else TOOLS.call(call.tool, state, call.params)[0]
        if seq and key not in seen:
            seen.add(key)
            out.append(seq)
    return out


def true_scores(img: np.ndarray, seqs: list[list]) -> list[float]:
    """Each sequence's reward when the edits are made to the whole photo and the result scored as it is
    (what the search's estimates stand in for)."""
    out = []
    for seq in seqs:
        result = img
        for call in seq:
            result = TOOLS.call(call.tool, result, call.params)[0]
        out.append(REWARD.score(result, img).total)
    return out


def scores_at(img: np.ndarray, seqs: list[list], factor: float) -> list[float]:
    """Each sequence's reward as the search estimates it, with a copy ``factor`` times the photo's size."""
    root = root_state(img, round(max(img.shape[:2]) * factor))
    out = []
    for seq in seqs:
        state = root
        for call in seq:
            state = apply_call(TOOLS, state, call)
        out.append(REWARD.score(state.preview, root.preview, crops=state.crops).total)
    return out


def agreement(full: list[float], low: list[float]) -> dict[str, float]:
    order_full, order_low = np.argsort(full)[::-1], np.argsort(low)[::-1]
    return {"spearman": float(sps.spearmanr(full, low).statistic), "kendall": float(sps.kendalltau(full, low).statistic),
            "top1": float(order_low[0] == order_full[0]),
            "top3": len(set(order_low[:3]) & set(order_full[:3])) / 3}


def twelve_megapixels(warm: bool = False) -> None:
    """Wall time and memory of a 12 MP photo: dimmed, or (``warm``) under a warm light, whose white balance reads
    the light of the whole photo (run it as a part of its own: the process's peak memory is the largest so far)."""
    print(f"{4 if warm else 1}. 12-megapixel photo (4000x3000{', under a warm light' if warm else ''}): 3 steps x 20 "
          "simulations, depth 3, search copy 256 px")
    huge = degrade(photo(4000, 3000, dim=1.0), "warm cast", 0.5) if warm else photo(4000, 3000)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    t = time.perf_counter()
    with Readings() as readings:
        result = mcts_enhance(huge, TOOLS, REWARD, MCTSSettings(simulations=20, depth=3, max_steps=3, patience=3,
                                                                min_gain=-1.0, time_budget_s=600))
    wall = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"   wall {wall:.1f} s on {torch.get_num_threads()} torch threads; {result.simulations} simulations, "
          f"{len(result.actions)} steps executed ({', '.join(a.label() for a in result.actions)})")
    print(f"   peak traced allocations {peak / 2**20:.0f} MiB (the input alone is {huge.nbytes / 2**20:.0f} MiB); "
          f"process peak RSS {rss_after:.0f} MiB (before: {rss_before:.0f} MiB)")
    print(f"   reward {result.score_before:.3f} -> {result.score_after:.3f}")
    searched = [step.outputs["search_s"] for step in result.trace.steps if "search_s" in step.outputs]
    print(f"   search per step: {', '.join(f'{s:.1f} s' for s in searched)}")
    readings.report(result.trace.summary["tool_calls"] + len(result.trees), wall)


def simulation_rate(rounds: int = 7) -> None:
    """Simulations per second at full, 1/2 and 1/4 resolution: the median of ``rounds`` runs each, the sizes
    taken in turn within a round so that a busy moment of the machine does not fall on one size only."""
    big = degrade(degrade(photo(2048, 1365, dim=1.0), "dark and noisy", 0.5), "warm cast", 0.3)
    print(f"2. simulations per second (depth 3, 20 simulations, 2048x1365 photo: dark, noisy and warm; median of "
          f"{rounds} runs, the sizes in turn)")
    sides = {"full (2048)": 2048, "1/2 (1024)": 1024, "1/4 (512)": 512}
    sims_per_second(big, 512)  # warm-up: imports and loaded models must not count against the first size
    runs: dict[int, list[float]] = {side: [] for side in sides.values()}
    with_tree: dict[int, list[float]] = {side: [] for side in sides.values()}
    for _ in range(rounds):
        for side in sides.values():
            rate, sims, counted = sims_per_second(big, side)
            runs[side].append(rate)
            with_tree[side].append(counted)
    rates = {side: statistics.median(r) for side, r in runs.items()}
    for label, side in sides.items():
        print(f"   {label:<12} {rates[side]:6.2f} sims/s ({sims} simulations; runs from {min(runs[side]):.2f} "
              f"to {max(runs[side]):.2f})")
    # each round's own ratio too: its two runs are seconds apart, so a slow spell of a shared machine falls on
    # both (the ratio of the medians pairs runs from different moments)
    paired = [q / f for q, f in zip(runs[512], runs[2048])]
    print(f"   1/4 runs {rates[512] / rates[2048]:.1f}x the simulations per second of full resolution "
          f"(median of the rounds' own ratios: {statistics.median(paired):.1f}x, from {min(paired):.1f} "
          f"to {max(paired):.1f})")
    counted = {side: statistics.median(r) for side, r in with_tree.items()}
    print(f"   with the tree view's thumbnails counted (as measured until 2026-11-27): full {counted[2048]:.2f}, "
          f"1/4 {counted[512]:.2f} sims/s, {counted[512] / counted[2048]:.1f}x")


def ranking_agreement() -> None:
    """Low- against full-resolution reward rankings."""
    print("3. the search's reward estimates (copy at 1/1, 1/2 and 1/4 plus native crops) against the reward of the\n"
          "   edits made to the whole photo, ranked over up to 40 candidate edit sequences per photo (1024 px)")
    rows = {1.0: [], 0.5: [], 0.25: []}
    cases = (("chelsea", "under-exposed"), ("coffee", "low contrast"), ("rocket", "warm cast"),
             ("astronaut", "noise"), ("camera", "blur"), ("chelsea", "dark and noisy"), ("coffee", "blur"),
             ("astronaut", "cool cast"))
    for name, defect in cases:
        img = degrade(photo(1024, 683 if name not in ("astronaut", "camera") else 1024, name, 1.0), defect,
                      DEFECTS[defect][2])
        seqs = candidates(img, 40)
        if len(seqs) < MIN_SEQUENCES:  # a clear single defect leaves few choices: no ranking to compare
            print(f"   {name} {defect}: only {len(seqs)} distinct sequences, left out")
            continue
        full = true_scores(img, seqs)
        for f in rows:
            rows[f].append(agreement(full, scores_at(img, seqs, f)))
            print(f"   {name} {defect}, 1/{int(1 / f)}: {len(seqs)} sequences, Spearman {rows[f][-1]['spearman']:.3f}")
    for f, rs in rows.items():
        mean = {k: statistics.mean(r[k] for r in rs) for k in rs[0]}
        print(f"   1/{int(1 / f)} (mean of {len(rs)} photos): Spearman {mean['spearman']:.3f}, Kendall {mean['kendall']:.3f}, "
              f"top-1 retention {mean['top1']:.2f}, top-3 retention {mean['top3']:.2f}")



def main() -> None:
    import argparse

    parts = {"1": twelve_megapixels, "2": simulation_rate, "3": ranking_agreement,
             "4": lambda: twelve_megapixels(warm=True)}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="1,2,3", help="which parts to run, e.g. 3 or 1,2 (4: its own process)")
    print(REWARD.describe())
    for part in ap.parse_args().parts.split(","):
        parts[part.strip()]()


if __name__ == "__main__":
    main()
