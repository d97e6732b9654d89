"""The rule brain itself: a role table, and the reward and perceiver it was given.

``ask`` looks the request's role up in ``ROLES`` (one module per role) and checks the answer against the
request's schema; a role it does not play is an error, never a guess.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping, Protocol

from ..brain import BrainAnswer, BrainError, BrainRequest
from . import aggregator, competitor, critic, executor, expert, perceiver, planner

Role = Callable[["RuleBrain", dict, list], "tuple[dict, list[str]]"]

ROLES: dict[str, Role] = {  # request.role -> the function that answers it
    "planner": planner.plan,
    "executor": executor.execute,
    "questions": critic.questions,
    "answers": critic.answers,
    "expert": expert.judge,
    "aggregator": aggregator.merge,
    "competitor": competitor.pick,
    "perceiver": perceiver.perceive,
}


class Reward(Protocol):
    """What the critic roles need of a reward: ``score(image, reference).total``, higher is better."""

    def score(self, image: Any, reference: Any = None) -> Any: ...


class Perceiver(Protocol):
    """What the perceiver and autonomous planner need: actions (``tool``, ``params``, ``rationale``) for the
    defects the statistics show."""

    def propose(self, stats: Mapping[str, float], k: int, allowed: Iterable[str], tried: Iterable[str] = ()) -> list: ...


class RuleBrain:
    """Deterministic, offline: every role through ``ask``, reading the request's structured context."""

    name = "rule"
    vision = False  # it measures statistics; it cannot describe a photo

    def __init__(self, reward: Reward, perceiver: Perceiver, scene: Callable[[Mapping[str, float]], str],
                 boldness: float = 1.0):
        """``reward`` scores the critics' quality; ``perceiver`` and ``scene`` serve the perceiver role and the
        autonomous plan, given by whoever builds the brain (``rule_default.offline_brain`` gives PhotoAgent's).
        ``boldness`` scales the executor's first-try strengths, so two rule generators can compete with
        different styles (CCA's generators differ by sampling when LLMs drive them)."""
        if not (0.1 <= boldness <= 10.0):
            raise ValueError(f"boldness must be between 0.1 and 10, got {boldness}")
        self.reward = reward
        self.perceiver = perceiver
        self.scene = scene
        self.boldness = boldness
        self.name = "rule" if boldness == 1.0 else f"rule(boldness={boldness:g})"

    def with_boldness(self, boldness: float) -> "RuleBrain":
        """The same brain (its reward and perceiver) with another boldness."""
        return RuleBrain(self.reward, self.perceiver, self.scene, boldness)

    async def ask(self, request: BrainRequest) -> BrainAnswer:
        start = time.perf_counter()
        role = ROLES.get(request.role)
        if role is None:
            raise BrainError(f"the rule brain has no {request.role!r} role")
        data, notes = role(self, request.context, request.images)
        problem = request.problem(data)
        if problem:  # a bug in the rule brain, not model output: say so plainly
            raise BrainError(f"the rule brain's {request.role} answer does not fit its schema: {problem}")
        return BrainAnswer(data=data, brain=self.name, wall_ms=(time.perf_counter() - start) * 1000.0, notes=notes)
