"""The quality competitor: the best of a round's candidates, and whether the loop may stop early (the stop rule
is the loop's, checked here)."""
from __future__ import annotations

from .. import schemas
from ..brain import Brain, BrainRequest
from ..records import Candidate
from .asking import Where, ask, prompt
from .planner import feedback_for_prompt


async def compete(brain: Brain, candidates: list[Candidate], min_score: float, where: Where) -> tuple[int, bool, str]:
    rows = [{"score": c.feedback.score if c.feedback else 0.0,
             "yes_fraction": c.feedback.yes_fraction() if c.feedback else 0.0,
             "satisfied": bool(c.feedback and c.feedback.satisfied(min_score))} for c in candidates]
    schema = schemas.compete_schema(len(candidates))
    req = BrainRequest(role="competitor", system=prompt("competitor"),
                       text="\n".join(f"{i}. {c.agent} (round {c.round}): {c.plan.summary()}; {feedback_for_prompt(c.feedback)}"
                                      for i, c in enumerate(candidates)),
                       schema=schema, images=[c.image for c in candidates],
                       context={"candidates": rows, "min_score": min_score})
    data = (await ask(brain, req, where, f"pick the best of {len(candidates)} candidates")).data
    best, stop, reason = int(data["best"]), bool(data["stop"]), data.get("reason", "")
    if stop and not rows[best]["satisfied"]:  # the stop rule is the loop's, not the brain's: checked here
        score = rows[best]["score"]
        stop, reason = False, f"{reason}; not stopped: the best scores {score:.1f}, below {min_score:g} or with a no".lstrip("; ")
        where.trace.add("competitor", where.agent, f"no early stop: the best result does not satisfy the request "
                                                   f"(score {score:.1f}, min_score {min_score:g}, every check a yes)",
                        round=where.round, scores={"best": score, "min_score": min_score})
    missing = candidates[best].plan.unsupported
    if stop and missing:  # a request with a part no tool could do is not satisfied, whatever the brain says
        stop, reason = False, f"{reason}; not done: {'; '.join(missing)}".lstrip("; ")
        where.trace.add("competitor", where.agent, f"no early stop: part of the request is not done ({'; '.join(missing)})",
                        round=where.round, outputs={"unsupported": list(missing)})
    return best, stop, reason
