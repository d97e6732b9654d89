"""The rule brain's executor role: parameters from the manual's defaults, moved by numbers and direction words
in the goal, then by typed feedback; a ground -> mask_grow -> tool chain when the goal names what to find."""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ...tools.spec import ToolSpec
from .words import inpaint_target, kept_subject, parse_angle, parse_aspect, parse_size, wants_less

if TYPE_CHECKING:
    from .brain import RuleBrain

STEP = math.sqrt(2.0)  # feedback moves a strength by this factor: two "too weak" rounds double it (CFG 4 -> 8)


def strength_params(spec: ToolSpec) -> list:
    """The numeric parameters with a neutral value: the ones feedback and boldness scale."""
    return [p for p in spec.params if p.type in ("float", "int") and p.neutral is not None]


def initial_params(spec: ToolSpec, goal: str) -> dict[str, Any]:
    """The manual's defaults, moved by what the goal says (numbers, direction words, named formats)."""
    params = spec.defaults()
    low = goal.lower()
    strengths = strength_params(spec)
    if spec.name == "resize" and parse_size(goal):
        params["longest_side"] = parse_size(goal)
        if "square" in low:
            params["mode"] = "square"
    elif spec.name == "rotate":
        params["angle"] = parse_angle(goal)
    elif spec.name == "crop_aspect":
        aspect = parse_aspect(goal)
        params["aspect"] = aspect if aspect in spec.param("aspect").choices else "1:1"
    elif spec.name == "flip":
        params["direction"] = "vertical" if "vertical" in low or "upside" in low else "horizontal"
    elif spec.name == "exposure" and (m := re.search(r"(\d+(?:\.\d+)?)\s*stops?", low)):
        params["stops"] = float(m.group(1))
    elif strengths and (m := re.search(r"(\d+(?:\.\d+)?)\s*%", low)):
        p = strengths[0]
        params[p.name] = p.neutral + float(m.group(1)) / 100.0
    if spec.name == "highlights_shadows" and "highlight" in low:
        params.update({"highlights": 0.4, "shadows": 0.0})
    if spec.name == "temperature_tint" and ("tint" in low or "magenta" in low or "green" in low) and "warm" not in low:
        params.update({"temperature": 0.0, "tint": -0.2 if "green" in low else 0.2})
    if any(p.name == "prompt" for p in spec.params) and not params.get("prompt"):
        target = inpaint_target(goal)
        params["prompt"] = target[1] if target else goal
    if spec.moves is not None and spec.moves.follows_wording and wants_less(goal):
        for p in strengths:
            params[p.name] = p.neutral - (params[p.name] - p.neutral)
    return params


def adjust_params(spec: ToolSpec, previous: dict[str, Any], direction: str) -> tuple[dict[str, Any], str]:
    """CCA's executor reflection: move the strength parameters the way the typed feedback says."""
    factor, why = {"reverse": (-1.0, "reversed: the feedback says it went the wrong way"),
                   "less": (1 / STEP, "weakened: the feedback says it was too strong"),
                   "more": (STEP, "strengthened: the feedback says the effect was not enough"),
                   "keep": (1.0, "kept: the feedback says these parameters worked")}[direction]
    params = dict(previous)
    for p in strength_params(spec):
        if p.name in params and isinstance(params[p.name], (int, float)):
            value = p.neutral + (params[p.name] - p.neutral) * factor
            params[p.name] = min(max(value, p.minimum), p.maximum)
    return params, why


def masked_chain(spec: ToolSpec, goal: str, params: dict, why: str, helpers: set[str]) -> list[dict]:
    """ground -> mask_grow -> the tool, when it takes a mask and the goal names what to find: 'replace the sky
    with a sunset' grounds the sky; 'blur the background (behind the dog)' grounds the subject to keep."""
    mask = next((p for p in spec.params if p.type == "mask"), None)
    target = inpaint_target(goal)
    found = target[0] if target else kept_subject(goal)
    if found is None and spec.name == "edit_region" and "background" in goal.lower():
        found = "the main subject"  # kept sharp; everything else is the background
    if mask is None or "ground" not in helpers or found is None:
        return [{"tool": spec.name, "params": params, "rationale": why}]
    steps = [{"tool": "ground", "params": {"text": found}, "rationale": f"find {found}"}]
    if "mask_grow" in helpers:
        steps.append({"tool": "mask_grow", "params": {"pixels": 8}, "source": "step:0",
                      "rationale": "cover its edges"})
    params = {**params, mask.name: f"step:{len(steps) - 1}"}
    if spec.name == "edit_region":
        params["inside"] = False  # the found subject is kept; the edit goes around it
    steps.append({"tool": spec.name, "params": params, "rationale": f"{why}; where: {found}"})
    return steps


def execute(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The executor role: a first try scaled by the brain's boldness, or the previous try moved by feedback."""
    spec: ToolSpec = ctx["spec"]
    previous, feedback = ctx.get("previous"), ctx.get("feedback")  # an ExecutorFeedback: typed, not prose
    if previous is not None and feedback is not None:
        params, why = adjust_params(spec, previous, feedback.direction)
    else:
        params, why = initial_params(spec, ctx["goal"]), "parameters from the manual's defaults and the goal's wording"
        if brain.boldness != 1.0:
            for p in strength_params(spec):
                value = p.neutral + (params[p.name] - p.neutral) * brain.boldness
                params[p.name] = min(max(value, p.minimum), p.maximum)
    return {"steps": masked_chain(spec, ctx["goal"], params, why, {h.name for h in ctx.get("helpers", [])})}, [why]
