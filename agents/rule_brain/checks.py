"""What a rule critic can measure of a subtask: the check (metric and direction or target) and its question.

Shared by the planner (which tool moves the same measure), the discriminator's questions and the experts.
"""
from __future__ import annotations

import functools
from typing import Any

from ...tools.spec import Moves, ToolSpec
from ..quality.metrics import METRICS
from .words import parse_angle, parse_aspect, parse_size, wants_less

RESHAPING = {"crop", "crop_aspect", "rotate", "flip", "expand_canvas", "resize"}


@functools.lru_cache(maxsize=1)
def built_in_moves() -> dict[str, Moves]:
    """What each built-in tool moves, from its spec (the critics' context names tools, not specs)."""
    from ...tools import default_registry

    tools = default_registry()
    return {name: tools.get(name).moves for name in tools.names() if tools.get(name).moves is not None}


def moves_of(tool: str | ToolSpec) -> Moves | None:
    """What a tool (a spec, or a built-in tool's name) moves, or None."""
    if isinstance(tool, ToolSpec):
        return tool.moves
    return built_in_moves().get(tool)


def intent_check(tool: str, goal: str, input_size: tuple[int, int] | None = None) -> dict[str, Any]:
    """The measurable effect a subtask asks for, or {} when a rule critic cannot measure it."""
    low = goal.lower()
    moves = moves_of(tool)
    if moves is not None:
        direction = moves.direction
        if tool == "highlights_shadows" and "highlight" in low:
            direction = "down"
        if moves.follows_wording and wants_less(goal):
            direction = "down" if direction == "up" else "up"
        return {"metric": moves.metric, "direction": direction}
    if tool == "grayscale":
        return {"metric": "is_gray"}
    if tool == "crop_aspect":
        aspect = parse_aspect(goal) or "1:1"
        w, h = (float(x) for x in aspect.split(":"))
        return {"metric": "aspect", "target": w / h}
    if tool == "resize":
        size = parse_size(goal)
        return {"metric": "longest_side", "target": size} if size else {}
    if tool == "rotate" and input_size and abs(parse_angle(goal) % 180) == 90:
        return {"metric": "width", "target": input_size[1]}
    if tool == "flip":
        return {"metric": "mirrored", "direction": "vertical" if "vertical" in low or "upside" in low else "horizontal"}
    return {}


def question_text(tool: str, goal: str, chk: dict[str, Any]) -> str:
    """The Yes/No question that a check answers, in words."""
    metric = chk.get("metric")
    if metric in METRICS and METRICS[metric].more:
        more, less = METRICS[metric].more, METRICS[metric].less
        return f"Is the edited image {more if chk['direction'] == 'up' else less} than the original?"
    if metric == "is_gray":
        return "Is the edited image black and white?"
    if metric == "aspect":
        return f"Does the edited image have an aspect ratio of {chk['target']:.3g}?"
    if metric == "longest_side":
        return f"Is the edited image's longest side {chk['target']:.0f} pixels?"
    if metric == "width":
        return "Is the edited image rotated by a right angle (width and height swapped)?"
    if metric == "mirrored":
        return f"Is the edited image mirrored {chk['direction']}ly?"
    return f"Was this done: {goal}?"
