"""The rule brain's critic roles for CCA's discriminator: the request's Yes/No questions, and their answers
measured on the photos ("unknown" for what a rule critic cannot judge)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...tools.spec import ToolSpec
from ..quality.measure import check as run_check
from ..quality.measure import measure
from ..records import EditRequest
from .checks import RESHAPING, intent_check, question_text
from .planner import autonomous_plan, match_tool
from .words import split_clauses

if TYPE_CHECKING:
    from .brain import RuleBrain


def questions(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """Questions from the request alone: one per clause (checked with the tool that would do it), or, with no
    instruction, one per defect the photo's statistics show; plus whether the content is kept."""
    request: EditRequest = ctx["request"]
    tools: list[ToolSpec] = ctx["tools"]
    size = ctx.get("input_size")
    if request.mode == "instructed":
        parts = [(clause, match_tool(clause, tools)) for clause in split_clauses(request.instruction, tools)]
        parts = [(clause, spec.name if spec else "") for clause, spec in parts]
    else:
        parts = [(s["goal"], s["tool"]) for s in autonomous_plan(brain, ctx, tools)[0]["subtasks"]]
    asked = []
    for part, tool in parts:
        chk = intent_check(tool, part, size) if tool else {}
        asked.append({"text": question_text(tool, part, chk), "part": part, "check": chk})
    if not any(tool in RESHAPING for _, tool in parts):  # a crop or rotation changes structure on purpose
        asked.append({"text": "Is the content of the original image preserved?", "part": "",
                      "check": {"metric": "structure", "min": 0.75}})
    return {"questions": asked}, []


def answers(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The answers, each measured by its question's check, and the edited photo's own quality (the reward's)."""
    before, after = images[0], images[-1]
    mb, ma = measure(before), measure(after)
    out = []
    for q in ctx["questions"]:
        ans, why, achieved = run_check(q.check, mb, ma, before, after) if q.check else (
            "unknown", "a rule critic cannot judge this; connect a VLM brain", 0.0)
        out.append({"answer": ans, "explanation": why,
                    **({"direction": "reverse" if achieved < 0 else "more"} if ans == "no" else {}),
                    # which subtask the question checks: by word overlap (roles.route_questions), the
                    # rule brain's only way; a model brain reads the plan
                    "subtask": -1 if q.subtask is None else q.subtask})
    quality = max(0.0, min(10.0, 10.0 * brain.reward.score(after).total))  # the edited photo's own quality
    return {"answers": out, "quality": round(quality, 3)}, []
