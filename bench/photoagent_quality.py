"""Benchmark (issue 6 evidence): MCTS vs greedy (depth 1) vs random actions at the same budget of tool
calls, on real photos with known degradations.

For each photo x degradation: the reward (the default ensemble: statistics, BRISQUE, NIQE, preservation)
before/after, and the fidelity to the clean original (1 - mean absolute difference) before/after.
Budgets are counted, not estimated: every tool call (search copies and full-resolution re-runs) goes
through a counter. MCTS runs first; greedy gets as many candidates per step as fit in MCTS's count;
random search applies random perceiver proposals (restarting now and then) for exactly that count
and keeps the best-scoring state. The table prints each method's calls.
Run: .venv/bin/python bench/photoagent_quality.py
"""
from __future__ import annotations

import random
import statistics
import time

import numpy as np
from skimage import data

from edit_agents.agents.enhance import EnhanceSettings, enhance
from edit_agents.agents.mcts import MCTSSettings, mcts_enhance
from edit_agents.agents.perceiver import RulePerceiver
from edit_agents.agents.reward import ClassicReward, image_statistics, structure_similarity
from edit_agents.tools import default_registry
from edit_agents.tools.imageops import as_image, resize_longest

PHOTOS = ("coffee", "chelsea", "astronaut")
DEGRADATIONS = {
    "under-exposed": lambda x: x * 0.4,
    "over-exposed": lambda x: np.clip(x * 1.6 + 0.1, 0, 1),
    "low contrast": lambda x: x * 0.45 + 0.3,
    "colour cast": lambda x: np.clip(x * np.array([1.0, 0.88, 0.62], np.float32), 0, 1),
    "noise": lambda x: np.clip(x + np.random.default_rng(0).normal(0, 0.06, x.shape).astype(np.float32), 0, 1),
}


class CountingTools:
    """The registry, with every tool call counted (the budget the methods are compared at)."""

    def __init__(self, tools):
        self.tools, self.calls = tools, 0

    def call(self, *args, **kwargs):
        self.calls += 1
        return self.tools.call(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tools, name)

    def __len__(self):
        return len(self.tools)


def fidelity(img: np.ndarray, clean: np.ndarray) -> float:
    """How close to the clean original: 1 - mean absolute difference (structure ignores tone)."""
    return 1.0 - float(np.abs(img - clean).mean())


def random_search(img, tools, reward, calls: int, seed: int = 0):
    rng, perceiver = random.Random(seed), RulePerceiver()
    best, best_score, state = img, reward.score(img, img).total, img
    while tools.calls < calls:
        options = perceiver.propose(image_statistics(state), 6, tools.names())
        if not options:
            break
        call = rng.choice(options)
        state = tools.call(call.tool, state, call.params)[0]
        s = reward.score(state, img).total
        if s > best_score:
            best, best_score = state, s
        if rng.random() < 0.34:  # restart from the input now and then
            state = img
    return best, best_score


def main() -> None:
    classic = default_registry().subset(categories=["classic"])
    reward = ClassicReward()
    print(reward.describe())
    rows, wins, budgets = [], {"mcts": 0, "greedy": 0, "random": 0}, {"mcts": [], "greedy": [], "random": []}
    t0 = time.perf_counter()
    for name in PHOTOS:
        clean = resize_longest(as_image(getattr(data, name)()), 384)
        for label, degrade in DEGRADATIONS.items():
            bad = degrade(clean).astype(np.float32)
            tools = CountingTools(classic)
            m = mcts_enhance(bad, tools, reward, MCTSSettings(simulations=16, depth=2, max_steps=3, preview_side=192))
            budget = tools.calls
            tools = CountingTools(classic)
            per_step = max(1, budget // 3 - 2)  # 3 steps of K candidates + 2 full-resolution re-runs
            g = enhance(bad, tools, reward, EnhanceSettings(max_steps=3, candidates=per_step, preview_side=192))
            g_calls = tools.calls
            tools = CountingTools(classic)
            r_img, r_score = random_search(bad, tools, reward, budget)
            for k, v in (("mcts", budget), ("greedy", g_calls), ("random", tools.calls)):
                budgets[k].append(v)
            scores = {"mcts": m.score_after, "greedy": g.score_after, "random": r_score}
            wins[max(scores, key=scores.get)] += 1
            rows.append((name, label, m.score_before, scores, fidelity(bad, clean),
                         {"mcts": fidelity(m.image, clean), "greedy": fidelity(g.image, clean), "random": fidelity(r_img, clean)},
                         structure_similarity(clean, m.image)))
    print(f"{'photo':<10}{'degradation':<15}{'reward before':>14}{'mcts':>8}{'greedy':>8}{'random':>8}"
          f"{'fid. before':>12}{'mcts':>8}{'greedy':>8}{'random':>8}")
    for name, label, before, sc, fb, fa, _ in rows:
        print(f"{name:<10}{label:<15}{before:>14.3f}{sc['mcts']:>8.3f}{sc['greedy']:>8.3f}{sc['random']:>8.3f}"
              f"{fb:>12.3f}{fa['mcts']:>8.3f}{fa['greedy']:>8.3f}{fa['random']:>8.3f}")
    for k in ("mcts", "greedy", "random"):
        print(f"mean reward after, {k:<6}: {statistics.mean(r[3][k] for r in rows):.3f}; "
              f"mean fidelity after: {statistics.mean(r[5][k] for r in rows):.3f}; best on {wins[k]} of {len(rows)}; "
              f"tool calls mean {statistics.mean(budgets[k]):.0f} (max {max(budgets[k])})")
    print("per degradation, mean fidelity after (mcts / greedy / random):")
    for label in DEGRADATIONS:
        sel = [r for r in rows if r[1] == label]
        print(f"  {label:<15}" + " / ".join(f"{statistics.mean(r[5][k] for r in sel):.3f}"
                                            for k in ("mcts", "greedy", "random")))
    print(f"mean reward before: {statistics.mean(r[2] for r in rows):.3f}; "
          f"mean fidelity before: {statistics.mean(r[4] for r in rows):.3f}; wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
