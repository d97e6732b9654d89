"""The planner: the request (and, after a round, its own and its rival's feedback) as a plan of subtasks, each
with its tool."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...tools.spec import ToolRegistry
from .. import schemas
from ..brain import Brain, BrainRequest
from ..quality.metrics import image_statistics
from ..records import EditRequest, Feedback, HistoryContext, Plan, Subtask
from .asking import Where, ask, prompt, with_history


async def plan(brain: Brain, request: EditRequest, tools: ToolRegistry, image: np.ndarray, where: Where,
               history: HistoryContext | None = None, previous: Plan | None = None, own_feedback: Feedback | None = None,
               rival_plan: Plan | None = None, rival_feedback: Feedback | None = None, identity: str = "") -> Plan:
    """The planner's step. ``identity``: who plans, when several do (CCA's generators), so that they do not send
    one model the same request."""
    reflection = ""
    if previous is not None:
        reflection = prompt("reflection", own_plan=previous.summary(),
                            own_feedback=feedback_for_prompt(own_feedback), rival_plan=rival_plan.summary() if rival_plan else "(none)",
                            rival_feedback=feedback_for_prompt(rival_feedback))
    tools = tools.runnable()  # a planner is never offered a model tool that cannot run here

    def text(h: HistoryContext) -> str:
        return prompt("planner_user", instruction=request.instruction or "(none: improve the photo)",
                      mode=request.mode, mood=f"({request.mood})" if request.mood else "",
                      caption=request.caption or "(unknown)", history=h.render(),
                      reflection=reflection) + (f"\n{identity}" if identity else "")

    req = with_history(BrainRequest(
        role="planner", system=prompt("planner", tools=tools.planner_catalogue()), text="",
        schema=schemas.plan_schema(tools.names()), check=_plan_problem, repair=_drop_forward_dependencies,
        context={"request": request, "tools": tools.specs(), "stats": image_statistics(image), "previous": previous,
                 "own_feedback": own_feedback, "rival_plan": rival_plan, "rival_feedback": rival_feedback}),
        history, text, image)
    data = (await ask(brain, req, where, "plan", preview=image)).data
    subtasks = [Subtask(index=i, goal=s["goal"], tool=s["tool"], rationale=s.get("rationale", ""),
                        depends_on=[d for d in s.get("depends_on", []) if d < i]) for i, s in enumerate(data["subtasks"])]
    return Plan(subtasks=subtasks, unsupported=list(data.get("unsupported", [])), notes=data.get("notes", ""))


def _drop_forward_dependencies(data: dict[str, Any]) -> list[str]:
    """A subtask can depend only on earlier ones: a dependency on itself or a later one says nothing that can be
    done (the plan runs in order), so it is dropped with a note instead of re-asking."""
    notes = []
    for i, sub in enumerate(data.get("subtasks") or []):
        deps = sub.get("depends_on") if isinstance(sub, dict) else None
        if isinstance(deps, list):
            later = [d for d in deps if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d < i]
            kept = list(dict.fromkeys(d for d in deps if d not in later))  # a repeat says nothing more
            if later:
                notes.append(f"subtask {i} depended on {later}, not earlier subtasks: dropped")
            if kept != deps:
                sub["depends_on"] = kept
    return notes


def _plan_problem(data: dict[str, Any]) -> str | None:
    for i, s in enumerate(data["subtasks"]):
        if not str(s["goal"]).strip():
            return f"subtask {i} has an empty goal; say what it should do, or leave the subtask out"
    return None


def feedback_for_prompt(fb: Feedback | None) -> str:
    """Feedback as one line of a brain's prompt (the planner's reflection, the competitor's candidates)."""
    if fb is None:
        return "(none)"
    parts = [f"score {fb.score:.1f}/10"]
    if fb.error:
        parts.append(f"failed: {fb.error}")
    if fb.negative:
        parts.append(f"problems: {fb.negative}")
    if fb.positive:
        parts.append(f"good: {fb.positive}")
    parts += [f"subtask {k}: {v}" for k, v in fb.per_subtask.items()]
    parts += [f"suggestion: {s.text}" for s in fb.suggestions]
    return "; ".join(parts)
