"""Feedback between rounds: the part of a report that concerns one subtask, found in an earlier plan by what it
does, and CCA's suggestion of another tool when both generators' results look the same."""
from __future__ import annotations

import numpy as np

from ..records import Candidate, ExecutorFeedback, Feedback, Plan, Subtask, Suggestion, ToolCall
from .asking import Where
from .discriminator import _overlap, _same


def match_subtask(earlier: Plan, sub: Subtask) -> Subtask | None:
    """The subtask of an earlier plan that did what ``sub`` does: the same goal, else the same tool, else the goal
    with most words in common. Feedback is routed by this after re-planning, never by index."""
    same_goal = [s for s in earlier.subtasks if _same(s.goal, sub.goal)]
    if same_goal:
        return same_goal[0]
    same_tool = [s for s in earlier.subtasks if s.tool == sub.tool]
    if same_tool:
        return max(same_tool, key=lambda s: _overlap(s.goal, sub.goal))
    best = max(earlier.subtasks, key=lambda s: _overlap(s.goal, sub.goal), default=None)
    return best if best is not None and _overlap(best.goal, sub.goal) >= 0.5 else None


def alike(a: np.ndarray, b: np.ndarray, tolerance: float = 0.01) -> bool:
    """Whether two results look the same: same size, mean absolute difference under ``tolerance``."""
    return a.shape == b.shape and float(np.abs(a.astype(np.float32) - b.astype(np.float32)).mean()) < tolerance


def suggest_other_tools(candidates: list[Candidate], where: Where) -> int:
    """CCA: when the generators' results look the same and a subtask still fails, the discriminator suggests
    another tool for it. Returns how many suggestions it added."""
    if len(candidates) < 2 or not all(alike(candidates[0].image, c.image) for c in candidates[1:]):
        return 0
    added = 0
    for c in candidates:
        for s in c.plan.subtasks:
            if c.feedback and any(q.subtask == s.index and q.answer == "no" for q in c.feedback.questions):
                text = (f"'{s.goal}': both generators' results look the same and it is still not done: try another "
                        f"tool than {s.tool}")
                c.feedback.suggestions.append(Suggestion("another_tool", text, s.goal, s.tool))
                c.feedback.per_subtask[s.index] = f"{c.feedback.per_subtask.get(s.index, '')}; {text}".lstrip("; ")
                added += 1
    if added:
        where.trace.add("discriminator", where.agent, "the generators' results look the same: suggest another tool "
                                                      "for what still fails", round=where.round,
                        outputs={"suggestions": added})
    return added


def subtask_feedback(fb: Feedback | None, index: int) -> ExecutorFeedback | None:
    """The part of a report that concerns one subtask of the plan the report judged, typed for its executor:
    - answered questions that check this subtask (CCA): "keep" when every one is a yes, else the first "no"'s
      direction ("more" when it gave none) and why;
    - IMAGAgent's merged expert critiques (no questions: they judge this very subtask), or a failed attempt: the
      experts' direction ("more" when none said), their positive note, and their negative points to keep out
      (``avoid``, which joins a generative step's negative prompt);
    - a CCA report in which no answered question checks this subtask (its questions checked others or could not
      tell, it has none, or the candidate could not be judged at all): no push and nothing to avoid. Direction "keep" (the
      executor keeps its parameters), the report's score and a note; never the other subtasks' failures, which
      would steer a diffusion editor away from what this subtask asks."""
    if fb is None:
        return None
    mine = [q for q in fb.questions if q.subtask == index and q.answer != "unknown"]
    note = fb.per_subtask.get(index, "")
    if not mine and (fb.error or (fb.experts and not fb.questions)):  # about this subtask: push and avoid as told
        return ExecutorFeedback(fb.direction or "more", fb.score, note or fb.positive, fb.negative, failed=fb.error)
    if not mine:  # nobody faulted this subtask: "more" would push it harder, another's failures steer it away
        why = (fb.negative if not fb.judged else "") or "no question of the report checked this subtask"
        return ExecutorFeedback("keep", fb.score, note or f"{why}: nothing to change on its account")
    failed = [q for q in mine if q.answer == "no"]
    if not failed:
        return ExecutorFeedback("keep", 10.0, note)
    return ExecutorFeedback(next((q.direction for q in failed if q.direction), "more"), 3.0,
                            note or "; ".join(q.explanation for q in failed))


def earlier_attempt(plan_: Plan | None, chains: list[list[ToolCall]], fb: Feedback | None,
                    sub: Subtask) -> tuple[list[ToolCall] | None, ExecutorFeedback | None]:
    """The chain and the feedback of the earlier plan's subtask that matches ``sub`` (by goal, then tool). The
    chain is offered only when it used the same tool: another tool's parameters mean nothing to this one.
    ``chains`` follow ``plan_``'s subtasks in order (one per subtask run), so the chain is found by the subtask's
    place in that plan, not by its index: IMAGAgent's Executor nodes get a one-subtask plan whose subtask keeps
    its index in the whole plan (subtask 2 at place 0)."""
    if plan_ is None:
        return None, None
    old = match_subtask(plan_, sub)
    place = next((i for i, s in enumerate(plan_.subtasks) if s is old), len(chains))
    if old is None or place >= len(chains):
        return None, None
    return (chains[place] if old.tool == sub.tool else None), subtask_feedback(fb, old.index)
