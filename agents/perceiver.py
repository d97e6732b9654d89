"""The rule perceiver (offline): proposes parameterised classic actions from a photo's statistics.

PhotoAgent's perceiver is a VLM that proposes K atomic actions; offline, this one reads
the same statistics the classic reward measures and proposes the edits that address the
weakest of them, in a few strengths each, so the planner can search among them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .reward import IDEAL_CONTRAST, IDEAL_MEAN_LUMA
from .records import ToolCall
from .trace import Trace


@dataclass(frozen=True)
class Memory:
    """One executed action and what came of it, fed back to the perceiver."""

    action: ToolCall
    gain: float  # reward change at full resolution
    kept: bool

    def line(self) -> str:
        return f"{self.action.label()}: {'kept' if self.kept else 'reverted'} ({self.gain:+.3f})"


def _calls(tool: str, param: str, values: Iterable[float], why: str, **fixed) -> list[ToolCall]:
    return [ToolCall(tool, {**fixed, param: round(float(v), 3)}, why) for v in values]


class RulePerceiver:
    """Deterministic: the same statistics give the same proposals in the same order.

    Cheap, so the search asks it at every tree node. Actions that were executed and reverted
    (memory) are not proposed again.
    """

    per_step = False

    def propose(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                image: np.ndarray | None = None, memory: Sequence[Memory] = ()) -> list[ToolCall]:
        allowed = set(allowed)
        tried = set(tried) | {m.action.key() for m in memory if not m.kept}
        ranked: list[tuple[float, ToolCall]] = []

        def add(urgency: float, calls: list[ToolCall]) -> None:
            for i, call in enumerate(calls):
                if call.tool in allowed and call.key() not in tried:
                    ranked.append((urgency - 0.01 * i, call))

        luma, contrast = stats["mean_luma"], stats["rms_contrast"]
        dark = IDEAL_MEAN_LUMA - luma
        if dark > 0.05:
            why = f"mean brightness {luma:.2f} is below {IDEAL_MEAN_LUMA}"
            add(dark * 4, _calls("exposure", "stops", (0.3, 0.6, 1.0), why))
            add(dark * 3.5, _calls("gamma", "gamma", (1.2, 1.45), why))
            add(dark * 3, _calls("highlights_shadows", "shadows", (0.35, 0.7), why, highlights=0.0))
        elif -dark > 0.05:
            why = f"mean brightness {luma:.2f} is above {IDEAL_MEAN_LUMA}"
            add(-dark * 4, _calls("exposure", "stops", (-0.3, -0.6), why))
            add(-dark * 3.5, _calls("gamma", "gamma", (0.85, 0.7), why))
            add(-dark * 3, _calls("highlights_shadows", "highlights", (0.4, 0.8), why, shadows=0.0))
        if contrast < IDEAL_CONTRAST[0]:
            why = f"contrast {contrast:.2f} is below {IDEAL_CONTRAST[0]}"
            gap = (IDEAL_CONTRAST[0] - contrast) * 8
            add(gap + 0.1, [ToolCall("auto_levels", {"clip_percent": 0.5}, why)])
            add(gap, _calls("contrast", "amount", (0.12, 0.25, 0.4), why))
            add(gap * 0.8, _calls("clahe", "clip_limit", (1.5, 2.5), why, tile=8))
        elif contrast > IDEAL_CONTRAST[1]:
            why = f"contrast {contrast:.2f} is above {IDEAL_CONTRAST[1]}"
            add((contrast - IDEAL_CONTRAST[1]) * 8, _calls("contrast", "amount", (-0.15, -0.3), why))
        if stats["clip_bright"] > 0.02:
            add(stats["clip_bright"] * 10, _calls("highlights_shadows", "highlights", (0.4,), "highlights are clipped", shadows=0.0))
        if stats["clip_dark"] > 0.02:
            add(stats["clip_dark"] * 10, _calls("highlights_shadows", "shadows", (0.4,), "shadows are crushed", highlights=0.0))
        if not stats.get("is_gray"):
            if stats["colour_cast"] > 0.06:
                why = f"colour cast {stats['colour_cast']:.2f}"
                add(stats["colour_cast"] * 3, _calls("white_balance", "strength", (0.4, 0.8), why))
            if stats["colourfulness"] < 0.14:
                why = f"colourfulness {stats['colourfulness']:.2f} is low"
                add((0.14 - stats["colourfulness"]) * 5 + 0.05, _calls("vibrance", "amount", (0.25, 0.5), why))
                add((0.14 - stats["colourfulness"]) * 4, _calls("saturation", "amount", (0.15,), why))
        if stats["noise_sigma"] > 0.012:
            add(stats["noise_sigma"] * 20, _calls("denoise", "strength", (0.3, 0.6), f"noise sigma {stats['noise_sigma']:.3f}"))
        elif stats["sharpness"] < 0.06:
            add(0.05, _calls("sharpen", "amount", (0.4,), f"sharpness {stats['sharpness']:.3f} is low", radius=1.5))
        # Mild generic polish so a decent photo still has options to weigh (rejected if not better).
        add(0.01, [ToolCall("contrast", {"amount": 0.08}, "gentle polish"),
                   ToolCall("vibrance", {"amount": 0.15}, "gentle polish")])
        ranked.sort(key=lambda item: -item[0])
        seen: set[str] = set()
        out: list[ToolCall] = []
        for _, call in ranked:
            if call.key() not in seen:
                seen.add(call.key())
                out.append(call)
            if len(out) >= k:
                break
        return out


class BrainPerceiver:
    """PhotoAgent's VLM perceiver: a vision brain looks at the photo and proposes K parameterised actions.

    Autonomous ("make it better") or mood-guided (``mood``). It sees the memory of executed actions and
    their outcomes. A VLM call is slow, so the search asks it once per step, at the root; deeper tree
    nodes and rollouts reuse those proposals. Proposals are validated against the tool specs; invalid
    ones are dropped and noted in the trace.
    """

    per_step = True

    def __init__(self, brain: Any, tools: Any, mood: str = "", trace: Trace | None = None, agent: str = "photoagent"):
        self.brain, self.tools, self.mood = brain, tools, mood
        self.trace = trace or Trace()
        self.agent = agent
        self.calls = 0

    def propose(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                image: np.ndarray | None = None, memory: Sequence[Memory] = ()) -> list[ToolCall]:
        from .brain import close_brains, run_blocking
        from .roles import Where, perceive

        if image is None:
            raise ValueError("the VLM perceiver needs the image")
        allowed = set(allowed)
        tools = self.tools.subset([n for n in self.tools.names() if n in allowed])

        async def go():
            try:
                return await perceive(self.brain, image, tools, k, Where(self.trace, self.agent), mood=self.mood,
                                      tried=tuple(tried), memory=tuple(m.line() for m in memory))
            finally:
                await close_brains(self.brain)

        self.calls += 1
        return run_blocking(go)
