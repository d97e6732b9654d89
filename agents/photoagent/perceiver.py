"""PhotoAgent's perceivers: what a photo needs, and the atomic actions that would give it.

The rule perceiver (offline) reads the same statistics as the reward, guesses the scene
(black-and-white, night, low-key, high-key, warm light, general) and proposes actions only for
clear defects, each at a few strengths computed from the measurement. Intent is not a defect:
a dark night scene with its lights intact, or an indoor photo in warm light, gets no proposal.
Every check it made, with its value, threshold and verdict, goes in ``Perception.findings`` so
the trace says why an edit was or was not proposed. The checks and their proposals are the defects' own
(agents/quality/defects/, one module each), walked in the registry's order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...tools.spec import ToolCallError, ToolRegistry
from .. import schemas
from ..brain import Brain, BrainError, BrainRequest, close_brains, run_blocking
from ..records import ToolCall
from ..quality.defects import Finding, diagnose, excess
from ..quality.defects.cast import cast_direction
from ..quality.defects.noise import NOISE_SIGMA
from ..quality.defects.tones import LIFTED_BLACK
from ..quality.kernel import estimate_kernel
from ..quality.metrics import image_statistics
from ..roles.asking import Where, ask, prompt
from ..trace import Trace


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


class BrainPerceiver(_Perceiver):
    """PhotoAgent's VLM perceiver: a vision brain looks at the photo, names the scene and proposes K actions.

    Autonomous ("make it better") or mood-guided (``mood``). It sees the memory of executed actions and
    their outcomes. The search asks it at each newly expanded state, up to the MCTS Planner's
    ``perceiver_calls`` per step (the user's budget: each call is a VLM request); past the budget a state reuses the proposals of
    its nearest asked ancestor. Proposals are validated against the tool specs; invalid ones are dropped
    and noted in the trace. When the brain fails (unreachable, or no valid answer within its retries), the
    rule perceiver proposes for the rest of the run, and the trace says so: the search goes on.
    """

    expensive = True

    def __init__(self, brain: Any, tools: Any, mood: str = "", trace: Trace | None = None, agent: str = "photoagent"):
        self.brain, self.tools, self.mood = brain, tools, mood
        self.trace = trace or Trace()
        self.agent = agent
        self.calls = 0
        self.fallback: RulePerceiver | None = None  # once the brain has failed

    def perceive(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = (), *,
                 image: np.ndarray | None = None, memory: Sequence[Memory] = (),
                 crops: Sequence[np.ndarray] | None = None) -> Perception:
        if image is None:
            raise ValueError("the VLM perceiver needs the image")
        if self.fallback is None:
            try:
                return self._ask(stats, k, allowed, tried, image, memory)
            except BrainError as err:
                self.fallback = RulePerceiver()
                self.trace.add("perceiver", self.agent, f"the vision brain failed ({err}); the rule perceiver "
                               "proposes from here on", outputs={"fallback": "rules", "error": str(err)})
        seen = self.fallback.perceive(stats, k, allowed, tried, image=image, memory=memory, crops=crops)
        return replace(seen, source="rules (the vision brain failed)")

    def _ask(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str],
             image: np.ndarray, memory: Sequence[Memory]) -> Perception:
        """One call to the brain: its scene and validated actions."""
        allowed = set(allowed)
        tools = self.tools.subset([n for n in self.tools.names() if n in allowed])

        async def go():
            try:
                return await brain_perceive(self.brain, image, tools, k, Where(self.trace, self.agent), mood=self.mood,
                                      tried=tuple(tried), memory=tuple(m.line() for m in memory))
            finally:
                await close_brains(self.brain)

        self.calls += 1
        scene, calls = run_blocking(go)
        return Perception(scene or guess_scene(stats), (), tuple(calls), source="vision brain")


# -- the vision perceiver's request ------------------------------------------------------------

def _actions_problem(tools: ToolRegistry) -> Callable[[dict[str, Any]], str | None]:
    def problem(data: dict[str, Any]) -> str | None:
        for i, action in enumerate(data["actions"]):
            try:
                tools.get(action["tool"]).validate(action.get("params"))
            except ToolCallError as err:
                return f"action {i}: {err}"
        return None
    return problem


async def brain_perceive(brain: Brain, image: np.ndarray, tools: ToolRegistry, k: int, where: Where, mood: str = "",
                   tried: tuple[str, ...] = (), memory: tuple[str, ...] = ()) -> tuple[str, list[ToolCall]]:
    """The scene the brain names and its validated actions (possibly none: a good photo needs nothing)."""
    # an action edits the photo by itself: a tool that returns a mask is a helper of another tool, and one that
    # needs a mask (inpaint) is left to the loops that chain ground -> mask -> edit
    tools = tools.subset([n for n in tools.names() if tools.get(n).stands_alone])
    text = "Propose actions for this photo."
    if memory:  # PhotoAgent's memory: what was executed and what came of it
        text += "\nAlready executed (do not repeat what was reverted):\n" + "\n".join(f"- {m}" for m in memory)
    req = BrainRequest(role="perceiver",
                       system=prompt("perceiver", k=k, tools=tools.brief_catalogue(),
                                     mood_text=f" toward the mood '{mood}'" if mood else ""),
                       text=text, schema=schemas.perceive_schema(tools.specs(), k), check=_actions_problem(tools),
                       images=[image], context={"stats": image_statistics(image), "tools": tools.specs(), "k": k,
                                                "mood": mood, "tried": tried, "memory": memory})
    data = (await ask(brain, req, where, "propose actions")).data
    calls = []
    for action in data["actions"]:
        try:
            clean, _ = tools.get(action["tool"]).validate(action.get("params"))
        except ToolCallError as err:
            where.trace.add("perceiver", where.agent, f"dropped an invalid action: {err}", round=where.round)
            continue
        calls.append(ToolCall(action["tool"], clean, action.get("rationale", "")))
    return str(data.get("scene", "")).strip(), calls
