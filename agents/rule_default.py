"""The rule brain as shipped: given the classic reward, the rule perceiver and its scene guess (agents/quality/).

The one place that wires them, so ``agents/rule_brain`` imports neither; the loops' no-argument defaults, the
nodes and the benchmarks build their rule brains here.
"""
from __future__ import annotations

from .quality.perception import RulePerceiver, guess_scene
from .quality.reward import ClassicReward
from .rule_brain import RuleBrain


def offline_brain(boldness: float = 1.0) -> RuleBrain:
    """A rule brain with the classic reward and the rule perceiver (a new reward each, as before the split)."""
    return RuleBrain(ClassicReward(), RulePerceiver(), guess_scene, boldness)
