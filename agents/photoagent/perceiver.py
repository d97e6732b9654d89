"""PhotoAgent's vision perceiver: a vision brain names the scene and proposes actions, the rule perceiver
(agents/quality/perception.py) standing in when it fails, and the perceiver node's call.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...tools.spec import ToolCallError, ToolRegistry
from .. import schemas
from ..brain import Brain, BrainError, BrainRequest, close_brains, run_blocking
from ..records import ToolCall
from ..quality.perception import Memory, Perception, RulePerceiver, _Perceiver, guess_scene
from ..quality.metrics import image_statistics
from ..roles.asking import Where, ask, prompt
from ..trace import Trace


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
