"""The rule brain's perceiver role: actions from the mood's words and the photo's statistics.

The statistics' checks are the perceiver's the brain was given (PhotoAgent's rule perceiver, by default), and
so is the scene guess: this package reads no perceiver of its own.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .brain import RuleBrain

MOODS = {  # mood words -> (tool, params)
    ("warm", "cosy", "cozy", "golden", "sunny", "nostalgic"): ("temperature_tint", {"temperature": 0.3}),
    ("cool", "calm", "cold", "serene", "wintry"): ("temperature_tint", {"temperature": -0.3}),
    ("dramatic", "moody", "punchy", "bold"): ("contrast", {"amount": 0.3}),
    ("vivid", "vibrant", "lively", "happy"): ("vibrance", {"amount": 0.4}),
    ("vintage", "retro", "old"): ("sepia", {"strength": 0.5}),
    ("cinematic", "film"): ("split_toning", {"shadow_hue": 200.0, "highlight_hue": 35.0, "strength": 0.35}),
    ("dreamy", "soft"): ("gaussian_blur", {"sigma": 1.5}),
    ("bright", "airy", "light"): ("exposure", {"stops": 0.4}),
    ("dark", "gloomy", "night"): ("exposure", {"stops": -0.4}),
    ("focused", "intimate"): ("vignette", {"amount": 0.35}),
}


def propose(brain: RuleBrain, stats: dict, allowed: list[str], k: int, mood: str, tried) -> list[dict]:
    """Up to k actions: the mood's first, then the given perceiver's for the statistics' defects."""
    actions = []
    low = mood.lower()
    for words, (tool, params) in MOODS.items():
        if tool in allowed and any(re.search(rf"\b{w}\b", low) for w in words):
            actions.append({"tool": tool, "params": dict(params), "rationale": f"mood '{mood}'"})
    if "white_level" in stats:  # statistics of the reward (the perceiver's checks read them)
        actions += [{"tool": c.tool, "params": dict(c.params), "rationale": c.rationale}
                    for c in brain.perceiver.propose(stats, k, allowed, tried)]
    return actions[:k]


def perceive(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The perceiver role: the scene and the proposed actions."""
    stats = ctx["stats"]
    scene = brain.scene(stats)
    actions = propose(brain, stats, [t.name for t in ctx["tools"]], ctx["k"], ctx.get("mood", ""), ctx.get("tried", ()))
    return {"scene": scene, "actions": actions}, []
