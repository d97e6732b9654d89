"""The reward as both improve loops use it: a ``Scorer`` decides which candidates are held to the quality readings.

A tone or colour curve (ToolSpec.pointwise) moves BRISQUE, NIQE and the JPEG grid's step although it adds no
artefact; the classic reward therefore scores a candidate with curves among its edits held to the readings of the
same edits without them (Reward.score's held_readings), unless the photo is dark (reward.holds_curves). Only the
Scorer knows whether its reward takes held readings, so no loop asks what kind of reward it has. The rest of this
module is what a candidate is scored with: the photo's own posterisation reading and the restorations' models.
"""
from __future__ import annotations

from concurrent.futures import Executor
from typing import Iterable, Mapping

import numpy as np

from ...tools.imageops import resize_longest
from ...tools.spec import ToolRegistry
from ..records import ToolCall
from ..quality.reward import ClassicReward, holds_curves
from ..quality.metrics import quality_readings

FORWARD_SIDE = 256  # the restorations' models run on a copy this long: the preservation term reads 128 px


class Scorer:
    """A reward with the loops' one question about it answered here: which candidates are held to which readings."""

    def __init__(self, reward):
        self.reward = reward
        # only a ClassicReward takes held readings and a spare thread (a reward of the user's own may not)
        self.classic = isinstance(reward, ClassicReward)

    def pool(self, pool: Executor | None) -> dict:
        """The reward's ``pool`` keyword: the search's spare thread, for a reward that takes one."""
        return {"pool": pool} if pool is not None and self.classic else {}

    def holds(self, tools: ToolRegistry, calls: Iterable[ToolCall], readings: Mapping[str, float]) -> bool:
        """Whether a candidate made by ``calls`` from a photo with these raw statistics is held to the quality readings
        without its curves: a curve among the calls, a reward that takes held readings, a photo that is not dark."""
        return self.classic and any(tools.get(c.tool).pointwise for c in calls) and holds_curves(readings)

    def kept(self, tools: ToolRegistry, score, image: np.ndarray, calls: Iterable[ToolCall]):
        """The score a kept photo (``image``, made by ``calls``) carries into the next step: where a curve was kept,
        with the photo's own readings (as_it_is), else ``score`` as it was."""
        if self.classic and any(tools.get(c.tool).pointwise for c in calls):
            return as_it_is(self.reward, score, image)
        return score


def as_it_is(reward: ClassicReward, score, image: np.ndarray):
    """``score`` of a kept photo (``image``) with the photo's own BRISQUE, NIQE and grid step. A step that kept a tone
    or colour curve was scored held to the readings without it (Reward.score's held_readings); the next step's
    candidates are measured as they are, so the curve's change of the readings must count for them no more than it
    did for it."""
    return reward.with_readings(score, quality_readings(image))


def without_curves(tools: ToolRegistry, calls) -> list[ToolCall]:
    """``calls`` without the tone and colour curves among them (ToolSpec.pointwise)."""
    return [c for c in calls if not tools.get(c.tool).pointwise]


def photo_levels(levels: float | None, calls: Iterable[ToolCall]) -> dict[str, float]:
    """Posterisation is read on the photo as it came, not on an edit of it: a tone edit that stretches an 8-bit photo
    spreads its levels apart as posterisation does, and an 8-bit and a 16-bit copy of a photo would then be edited
    apart. Only after an edit that fills the levels in (deband) is the result read afresh. ``levels``: the photo's
    own reading (None: read every image afresh); ``calls``: the edits made to it."""
    return {} if levels is None or any(c.tool == "deband" for c in calls) else {"level_step": levels}


def through_forward_models(tools: ToolRegistry, calls, img: np.ndarray, scale: float = 1.0) -> np.ndarray | None:
    """``img``, the result of ``calls`` on the photo (``scale`` times its size), with the restorations among them
    undone again by their own models of the defect (``ToolSpec.forward``: a deconvolution's kernel blurs again), on a
    copy at most FORWARD_SIDE long: the photo they say they were given. The reward's preservation term reads this
    beside the result (reward.preserved), so a restoration is charged a quarter of the detail it brings back. None
    when no call has such a model."""
    models = [(spec, call.params) for call in calls
              if call.tool in tools.names() and (spec := tools.get(call.tool)).forward is not None]
    if not models:
        return None
    small = resize_longest(img, FORWARD_SIDE)
    at = scale * max(small.shape[:2]) / max(img.shape[:2])
    seen = None
    for spec, params in reversed(models):  # the last edit is undone first
        clean, _ = spec.validate(params)
        out = spec.forward(small, spec.at_scale(clean, at))
        if out is not None:
            small = seen = out
    return seen


def model_reading(tools: ToolRegistry, calls, img: np.ndarray, scale: float = 1.0) -> dict:
    """The reward's ``as_input`` keyword for ``img`` made by ``calls`` (through_forward_models), or none at all
    when no call has a model: a reward of the user's own need not know the keyword until a restoration is used."""
    seen = through_forward_models(tools, calls, img, scale)
    return {} if seen is None else {"as_input": seen}
