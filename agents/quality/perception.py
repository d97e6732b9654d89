"""The rule perceiver: what a photo needs, read from its statistics, and the atomic actions that would give it.

It reads the same statistics as the reward, guesses the scene (black-and-white, night, low-key, high-key, warm
light, general) and proposes actions only for clear defects, each at a few strengths computed from the measurement.
Intent is not a defect: a dark night scene with its lights intact, or an indoor photo in warm light, gets no
proposal. Every check it made, with its value, threshold and verdict, goes in ``Perception.findings`` so the trace
says why an edit was or was not proposed. The checks and their proposals are the defects' own (``defects/``, one
module each), walked in the registry's order. PhotoAgent's search, the rule brain and the loops' autonomous plans
all read it; the vision perceiver (agents/photoagent/perceiver.py) answers the same questions with a model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..records import ToolCall
from .defects import Finding, diagnose, excess
from .defects.cast import cast_direction
from .defects.noise import NOISE_SIGMA
from .defects.tones import LIFTED_BLACK
from .kernel import estimate_kernel


@dataclass(frozen=True)
class Perception:
    scene: str
    findings: tuple[Finding, ...] = ()
    actions: tuple[ToolCall, ...] = ()
    source: str = "rules"

    def as_dict(self) -> dict[str, Any]:
        return {"scene": self.scene, "source": self.source, "findings": [f.line() for f in self.findings],
                "actions": [a.as_dict() for a in self.actions]}


@dataclass(frozen=True)
class Memory:
    """One executed action and what came of it, fed back to the perceiver."""

    action: ToolCall
    gain: float  # reward change at full resolution
    kept: bool

    def line(self) -> str:
        return f"{self.action.label()}: {'kept' if self.kept else 'reverted'} ({self.gain:+.3f})"


def guess_scene(stats: Mapping[str, float]) -> str:
    """The scene's kind from its statistics (the VLM perceiver names it from the picture instead)."""
    if stats.get("is_gray"):
        return "black-and-white"
    if stats["mean_luma"] < 0.15 and stats["white_level"] > 0.5:
        return "night"
    if stats["mean_luma"] < 0.3 and stats["white_level"] > 0.6:
        return "low-key"
    if stats["mean_luma"] > 0.65 and stats["black_level"] < LIFTED_BLACK:
        return "high-key"
    if cast_direction(stats) == "warm" and stats["colour_cast"] > 0.08:
        return "warm light"
    return "general"


class _Perceiver:
    """What the perceivers share: ``perceive`` returns a Perception, ``propose`` just its actions."""

    expensive = False  # True: each call costs a model request, so the search asks within perceiver_calls per step

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None) -> Perception:
        raise NotImplementedError

    def propose(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                crops: Sequence[np.ndarray] | None = None) -> list[ToolCall]:
        return list(self.perceive(stats, k, allowed, tried, image=image, memory=memory, crops=crops).actions)


class RulePerceiver(_Perceiver):
    """Deterministic: the same statistics give the same proposals in the same order.

    Cheap, so the search asks it at every state it expands. Actions that were executed and reverted
    (memory) are not proposed again. A photo with no clear defect gets no proposal at all.
    """

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None,
                 kernel: Callable[[], Mapping[str, Any] | None] | None = None) -> Perception:
        """``kernel``: how to get the photo's blur kernel where the caller keeps it (the search estimates it once per
        step); without it the kernel is estimated here, from ``crops``."""
        allowed = set(allowed)
        tried = set(tried) | {m.action.key() for m in memory if not m.kept}
        scene = guess_scene(stats)
        findings, per_defect = [], []
        # the kernel is estimated only for a photo that is not noisy (noise hides it), and only when deconvolve may be
        # used; whatever its fine detail reads, since a motion blur can leave that looking sharp
        # (nor blotchy or posterised: smooth colour blotches and the steps between too few levels put lines of their
        # own in the cepstrum)
        measure = ("deconvolve" in allowed and stats.get("noise_sigma", 0.0) <= NOISE_SIGMA
                   and excess(stats, "blotches") == 0 and excess(stats, "posterisation") == 0)
        blur = (kernel() if kernel is not None else estimate_kernel(crops)) if measure else None
        for finding, calls in diagnose(stats, scene, blur):
            findings.append(finding)
            usable = [c for c in calls if c.tool in allowed and c.key() not in tried]
            if usable:
                per_defect.append(usable)
        # interleave the defects' proposals, so K actions cover every defect before a second strength of one
        out, seen = [], set()
        for rank in range(max((len(c) for c in per_defect), default=0)):
            for calls in per_defect:
                if rank < len(calls) and calls[rank].key() not in seen and len(out) < k:
                    seen.add(calls[rank].key())
                    out.append(calls[rank])
        return Perception(scene, tuple(findings), tuple(out))
