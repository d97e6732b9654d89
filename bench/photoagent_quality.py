"""Benchmark (issue 6 evidence, first cut): MCTS vs greedy (depth 1) vs random actions, at a matched
budget of tool calls, on real photos with known degradations.

For each photo x degradation: the classic reward before/after and the structure similarity to the
clean original before/after. Random search applies random perceiver proposals and keeps the best
sequence seen within the same number of tool calls MCTS used.
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


def fidelity(img: np.ndarray, clean: np.ndarray) -> float:
    """How close to the clean original: 1 - mean absolute difference (structure ignores tone)."""
    return 1.0 - float(np.abs(img - clean).mean())


def random_search(img, tools, reward, calls: int, seed: int = 0):
    rng, perceiver = random.Random(seed), RulePerceiver()
    best, best_score, state, used = img, reward.score(img, img).total, img, 0
    while used < calls:
        options = perceiver.propose(image_statistics(state), 6, tools.names())
        if not options:
            break
        call = rng.choice(options)
        state = tools.call(call.tool, state, call.params)[0]
        used += 1
        s = reward.score(state, img).total
        if s > best_score:
            best, best_score = state, s
        if rng.random() < 0.34:  # restart from the input now and then
            state = img
    return best, best_score


def main() -> None:
    tools = default_registry().subset(categories=["classic"])
    reward = ClassicReward()
    rows, wins = [], {"mcts": 0, "greedy": 0, "random": 0}
    t0 = time.perf_counter()
    for name in PHOTOS:
        clean = resize_longest(as_image(getattr(data, name)()), 384)
        for label, degrade in DEGRADATIONS.items():
            bad = degrade(clean).astype(np.float32)
            m = mcts_enhance(bad, tools, reward, MCTSSettings(simulations=16, depth=2, max_steps=3, preview_side=192))
            calls = m.simulations * 2 + 6  # rollouts (<= depth calls each) + full-resolution re-runs, roughly
            g = enhance(bad, tools, reward, EnhanceSettings(max_steps=3, candidates=8, preview_side=192))
            r_img, r_score = random_search(bad, tools, reward, calls)
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
              f"mean fidelity after: {statistics.mean(r[5][k] for r in rows):.3f}; best on {wins[k]} of {len(rows)}")
    print(f"mean reward before: {statistics.mean(r[2] for r in rows):.3f}; "
          f"mean fidelity before: {statistics.mean(r[4] for r in rows):.3f}; wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
