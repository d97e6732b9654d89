"""CCA's discriminator: a caption of the original, the request's Yes/No questions, routed to the plan's subtasks by
word overlap and answered on an edited image, compiled into a report with suggestions."""
from __future__ import annotations

import asyncio
import re
from typing import Callable

import numpy as np

from ...tools.spec import ToolRegistry
from .. import schemas
from ..brain import Brain, BrainRequest
from ..quality.metrics import image_statistics
from ..records import EditRequest, Feedback, Plan, Question, Suggestion
from .asking import Where, ask, prompt


def sees_images(brain: Brain) -> bool:
    """Whether a brain can describe a photo (a VLM); the rule brain only measures statistics."""
    return bool(getattr(brain, "vision", False))


async def describe(brain: Brain, image: np.ndarray, where: Where) -> str:
    """A caption of the original (LLaVA's role in CCA), for a request that came without one."""
    req = BrainRequest(role="caption", system=prompt("caption"), text="Caption this photo.", schema=schemas.CAPTION,
                       images=[image], context={})
    return str((await ask(brain, req, where, "caption the original")).data["caption"]).strip()


async def write_questions(brain: Brain, request: EditRequest, tools: ToolRegistry, image: np.ndarray,
                          where: Where) -> list[Question]:
    """CCA's measurement questions, written once per request from the instruction and the caption (never from a
    plan), so both generators and every round are graded on the same questions."""
    req = BrainRequest(
        role="questions", system=prompt("questions"),
        text=f"Request: {request.instruction or request.mood or 'improve the photo'}\nCaption of the original: "
             f"{request.caption or '(unknown)'}",
        schema=schemas.QUESTIONS,
        context={"request": request, "tools": tools.specs(), "stats": image_statistics(image),
                 "input_size": image.shape[1::-1]},
        check=lambda data: next((f"question {i} is empty; write the question, or leave it out"
                                 for i, q in enumerate(data["questions"]) if not q["text"].strip()), None))
    raw = (await ask(brain, req, where, "write Yes/No questions for the request")).data["questions"]
    return [Question(text=q["text"], part=str(q.get("part") or "").strip(), check=q.get("check") or {}) for q in raw]


_WORD = re.compile(r"[a-z0-9]+")
_FILLER = frozenset("the and with more less make image photo picture bit little some than into from that this".split())


def _stem(word: str) -> str:
    for suffix in ("ening", "ness", "ing", "est", "er", "en", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _FILLER}


def _overlap(a: str, b: str) -> float:
    """Shared content words over the shorter text's count: 'warmer' and 'warm the light' overlap fully."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else 0.0


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def route_questions(questions: list[Question], plan_: Plan) -> list[Question]:
    """Fresh, unanswered copies of the request's questions, each pointed at the subtask of this plan that does
    its part (None: the whole request, or a part no subtask does)."""
    routed = []
    for q in questions:
        copy = q.unanswered()
        if q.part and plan_.subtasks:
            exact = [s for s in plan_.subtasks if _same(s.goal, q.part)]
            best = exact[0] if exact else max(plan_.subtasks, key=lambda s: _overlap(q.part, s.goal))
            copy.subtask = best.index if exact or _overlap(q.part, best.goal) >= 0.5 else None
        routed.append(copy)
    return routed


def aesthetic_rater(tools: ToolRegistry | None) -> Callable[[np.ndarray], float] | None:
    """The LAION aesthetic predictor (1..10) when the toolbox's model folders hold it, else None."""
    from ...tools.scorers import AestheticScorer

    scorer = AestheticScorer(tools.runtime if tools is not None else None)
    if scorer.unavailable():
        return None
    return lambda img: min(10.0, max(0.0, scorer.measure(img, "")[0]))


async def discriminate(brain: Brain, request: EditRequest, plan_: Plan, before: np.ndarray, after: np.ndarray,
                       where: Where, questions: list[Question],
                       aesthetic: Callable[[np.ndarray], float] | None = None) -> Feedback:
    """The request's questions answered on the edited image, plus an overall quality score (the brain's rating,
    averaged with the aesthetic predictor's when it is there), compiled into a report with suggestions."""
    asked = route_questions(questions, plan_)  # word overlap: what the rule brain answers with
    subtasks = plan_.subtasks
    a_req = BrainRequest(
        role="answers", system=prompt("answers"),
        text=("The plan's subtasks:\n" + "\n".join(f"{s.index}. {s.goal} ({s.tool})" for s in subtasks) + "\n\n"
              if subtasks else "") + "Questions:\n" + "\n".join(f"{i}. {q.text}" for i, q in enumerate(asked)),
        schema=schemas.answers_schema(len(asked), len(subtasks)), images=[before, after],
        context={"questions": asked})
    data = (await ask(brain, a_req, where, "answer the questions on the edited image")).data
    for q, a in zip(asked, data["answers"]):
        q.answer, q.explanation = a["answer"], a.get("explanation", "")
        q.direction = a.get("direction") if q.answer == "no" else None
        if subtasks:  # the discriminator says which subtask the question checks (CCA: its LLM splits the report)
            named = int(a.get("subtask", -1))
            q.subtask = subtasks[named].index if 0 <= named < len(subtasks) else None
    quality = float(data["quality"])
    if aesthetic is not None:
        rating = await asyncio.to_thread(aesthetic, after)
        where.trace.add("answers", where.agent, f"overall quality: brain {quality:.1f}, aesthetic predictor "
                                                f"{rating:.1f}", round=where.round,
                        scores={"brain_quality": quality, "aesthetic": rating})
        quality = round((quality + rating) / 2.0, 3)
    fb = Feedback(score=0.0, questions=asked)
    judged = [q for q in asked if q.answer != "unknown"]
    fb.score = round(0.7 * 10.0 * fb.yes_fraction() + 0.3 * quality if judged else quality, 3)
    fb.positive = "; ".join(q.text for q in asked if q.answer == "yes")
    fb.negative = "; ".join(f"{q.text} no: {q.explanation}" for q in asked if q.answer == "no")
    _compile_report(fb, plan_, quality)
    return fb


def _compile_report(fb: Feedback, plan_: Plan, quality: float) -> None:
    """CCA's report: each subtask's answers, and what to change next (the paper's 'suggest changing the tool')."""
    for s in plan_.subtasks:
        mine = [q for q in fb.questions if q.subtask == s.index]
        if not mine:
            continue
        fb.per_subtask[s.index] = "; ".join(f"{q.answer}: {q.explanation}" for q in mine)
        failed = [q for q in mine if q.answer == "no"]
        if failed:
            fb.suggestions.append(Suggestion(
                "adjust", f"'{s.goal}' ({s.tool}) is not done yet ({failed[0].explanation or failed[0].text}): change "
                          "its parameters, or plan it with another tool", s.goal, s.tool))
    for q in fb.questions:
        covered = any(_overlap(q.part, u) >= 0.5 for u in plan_.unsupported)
        if q.part and q.subtask is None and q.answer != "yes" and not covered:
            fb.suggestions.append(Suggestion("add", f"'{q.part}' is in no subtask: add one for it", q.part))
    if quality < 5.0:
        fb.suggestions.append(Suggestion("gentler", f"the result looks unnatural (quality {quality:.1f}/10): use "
                                                    "gentler settings"))
