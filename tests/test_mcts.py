"""The MCTS planner: finds a known best sequence that greedy misses, respects its budgets, caches."""
from __future__ import annotations

import numpy as np
import pytest

from edit_agents.agents.enhance import EnhanceSettings, enhance
from edit_agents.agents.mcts import MCTSSettings, mcts_enhance
from edit_agents.agents.records import ToolCall
from edit_agents.agents.reward import Score
from edit_agents.tools import ToolRegistry, ToolSpec, default_registry

# A toy world: the image is one gray value. From 0.30, "a" gives 0.50 (the best single step, a dead end),
# "b" gives 0.45 (worse at first), and from 0.45 "c" gives 1.00 (the best state). Greedy takes a and stops.
# A move made from any other state falls into a sink (0.0, reward -1), as over-edits do.
VALUES = {0.3: 0.0, 0.5: 0.2, 0.45: 0.1, 1.0: 1.0, 0.0: -1.0}


def move(frm: float, to: float):
    def run(img):
        return np.full_like(img, to if abs(float(img.mean()) - frm) < 1e-3 else 0.0)
    return run


TOY = ToolRegistry([ToolSpec(n, f"Toy move {n}.", "Toy.", (), move(f, t)) for n, f, t in
                    (("a", 0.3, 0.5), ("b", 0.3, 0.45), ("c", 0.45, 1.0))])


class ToyReward:
    def score(self, img, original=None):
        v = round(float(img.mean()), 2)
        return Score(total=VALUES.get(v, 0.0), components={}, raw={"value": v})


class AllMoves:
    def propose(self, stats, k, allowed, tried=()):
        return [ToolCall(n) for n in ("a", "b", "c")][:k]


def start():
    return np.full((8, 8, 3), 0.3, np.float32)


def test_mcts_finds_the_best_sequence_that_greedy_misses():
    settings = MCTSSettings(simulations=40, depth=2, top_k=1, max_steps=3, min_gain=0.01, preview_side=8, seed=1)
    result = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves())
    assert [a.tool for a in result.actions] == ["b", "c"] and result.score_after == 1.0
    greedy = enhance(start(), TOY, ToyReward(), EnhanceSettings(top_k=1, min_gain=0.01, preview_side=8), perceiver=AllMoves())
    assert [a.tool for a in greedy.actions] == ["a"] and greedy.score_after == pytest.approx(0.2)
    tree = result.trees[0]
    assert tree["visits"] == 40 and max(tree["children"], key=lambda c: c["visits"])["action"] == "b()"


def test_budgets_and_cache():
    settings = MCTSSettings(simulations=15, depth=2, max_steps=2, preview_side=8)
    result = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves())
    assert result.simulations <= 15 * 2 and result.cache_hits > 0
    assert result.trace.summary["cache_hits"] == result.cache_hits
    quick = mcts_enhance(start(), TOY, ToyReward(), MCTSSettings(simulations=100000, time_budget_s=0.05, max_steps=1,
                                                                 preview_side=8), perceiver=AllMoves())
    assert quick.simulations < 100000  # the time budget ended the search


def test_mcts_on_real_photos(photos):
    tools = default_registry().subset(categories=["classic"])
    dark = photos["coffee"] * 0.45 + 0.05
    result = mcts_enhance(dark, tools, settings=MCTSSettings(simulations=12, max_steps=2))
    assert result.score_after > result.score_before + 0.1 and result.actions
    good = mcts_enhance(photos["astronaut"], tools, settings=MCTSSettings(simulations=12, max_steps=2))
    assert len(good.actions) <= 1 and np.abs(good.image - photos["astronaut"]).mean() < 0.03
    with pytest.raises(ValueError, match="simulations"):
        MCTSSettings(simulations=0)
