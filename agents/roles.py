"""The roles: planner, executor, critic (discriminator and expert), aggregator, competitor, perceiver.

Each role renders its prompt file, puts the same inputs in ``context`` for the rule brain,
asks its brain for data fitting its schema, turns that data into records, validates every
tool call against the tool specs, and records one trace step.
"""
from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, Callable

import numpy as np

from ..tools.spec import ToolCallError, ToolRegistry
from . import schemas
from .brain import Brain, BrainAnswer, BrainRequest
from .records import (Candidate, Critique, EditRequest, Feedback, HistoryContext, Plan, Question, Subtask, ToolCall,
                      check_chain)
from .reward import image_statistics
from .trace import Trace

PROMPTS = Path(__file__).resolve().parent / "prompts"


@functools.lru_cache(maxsize=None)
def _template(name: str) -> Template:
    return Template((PROMPTS / f"{name}.md").read_text())


def prompt(name: str, **values: Any) -> str:
    return _template(name).safe_substitute({k: str(v) for k, v in values.items()}).strip()


@dataclass
class Where:
    """Where a role is called from: the trace it writes to and its place in a loop."""

    trace: Trace
    agent: str
    round: int | None = None
    subtask: int | None = None
    attempt: int | None = None
    should_stop: Callable[[], None] | None = None

    def at(self, **kw: Any) -> "Where":
        return Where(**{**self.__dict__, **kw})


async def interruptible(call, should_stop: Callable[[], None] | None, poll_s: float = 0.1):
    """Await ``call`` while checking ``should_stop`` every ``poll_s``: when it raises (the user pressed Cancel),
    the call is cancelled at once instead of running to the end of a slow request."""
    if should_stop is None:
        return await call
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            should_stop()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _ask(brain: Brain, request: BrainRequest, where: Where, action: str) -> BrainAnswer:
    if where.should_stop:
        where.should_stop()
    start = time.perf_counter()
    request.agent = where.agent
    answer = await interruptible(brain.ask(request), where.should_stop)
    where.trace.add(request.role, where.agent, action, started=start, round=where.round, subtask=where.subtask,
                    attempt=where.attempt, inputs={"brain": brain.name, "text": request.text[:600]},
                    outputs={**answer.data, **({"notes": answer.notes} if answer.notes else {})},
                    tokens=answer.tokens, cost=round(answer.cost, 6),
                    preview=request.images[-1] if request.images else None)  # what the role looked at
    return answer


# -- planner ------------------------------------------------------------------------------

async def plan(brain: Brain, request: EditRequest, tools: ToolRegistry, image: np.ndarray, where: Where,
               history: HistoryContext | None = None, previous: Plan | None = None, own_feedback: Feedback | None = None,
               rival_plan: Plan | None = None, rival_feedback: Feedback | None = None) -> Plan:
    reflection = ""
    if previous is not None:
        reflection = prompt("reflection", own_plan=previous.summary(),
                            own_feedback=_feedback_text(own_feedback), rival_plan=rival_plan.summary() if rival_plan else "(none)",
                            rival_feedback=_feedback_text(rival_feedback))
    req = BrainRequest(
        role="planner", system=prompt("planner", tools=tools.planner_catalogue()),
        text=prompt("planner_user", instruction=request.instruction or "(none: improve the photo)", mode=request.mode,
                    mood=f"({request.mood})" if request.mood else "", caption=request.caption or "(unknown)",
                    history=(history or HistoryContext()).render(), reflection=reflection),
        schema=schemas.plan_schema(tools.names()), images=[image],
        context={"request": request, "tools": tools.specs(), "stats": image_statistics(image), "previous": previous,
                 "own_feedback": own_feedback, "rival_plan": rival_plan, "rival_feedback": rival_feedback})
    data = (await _ask(brain, req, where, "plan")).data
    subtasks = [Subtask(index=i, goal=s["goal"], tool=s["tool"], rationale=s.get("rationale", ""),
                        depends_on=[d for d in s.get("depends_on", []) if d < i]) for i, s in enumerate(data["subtasks"])]
    return Plan(subtasks=subtasks, unsupported=list(data.get("unsupported", [])), notes=data.get("notes", ""))


def _feedback_text(fb: Feedback | None) -> str:
    if fb is None:
        return "(none)"
    parts = [f"score {fb.score:.1f}/10"]
    if fb.negative:
        parts.append(f"problems: {fb.negative}")
    if fb.positive:
        parts.append(f"good: {fb.positive}")
    parts += [f"subtask {k}: {v}" for k, v in fb.per_subtask.items()]
    return "; ".join(parts)


# -- executor -----------------------------------------------------------------------------

async def execute(brain: Brain, subtask: Subtask, tools: ToolRegistry, image: np.ndarray, where: Where,
                  history: HistoryContext | None = None, previous: list[ToolCall] | None = None,
                  feedback: dict[str, Any] | None = None) -> list[ToolCall]:
    """The executor sees only its subtask's tool manual, and returns a validated tool chain."""
    spec = tools.get(subtask.tool)  # a tool outside the toolbox: ToolCallError naming the allowed ones
    prev_params = previous[0].params if previous else None
    req = BrainRequest(
        role="executor", system=prompt("executor", manual=spec.manual()),
        text=prompt("executor_user", goal=subtask.goal, previous=prev_params if prev_params is not None else "(first attempt)",
                    feedback=_subtask_feedback_text(feedback), history=(history or HistoryContext()).render()),
        schema=schemas.chain_schema(spec), images=[image],
        context={"goal": subtask.goal, "spec": spec, "previous": prev_params, "feedback": feedback})
    answer = await _ask(brain, req, where, f"execute subtask {subtask.index}: {subtask.tool}")
    chain = [ToolCall.from_dict(step) for step in answer.data["steps"]]
    try:
        check_chain(chain)
    except ValueError as err:
        raise ToolCallError(f"{brain.name} returned an invalid tool chain: {err}") from None
    validated = []
    for call in chain:
        clean, notes = tools.get(call.tool).validate(call.params)
        if notes:
            where.trace.add("executor", where.agent, "clamped: " + "; ".join(notes), round=where.round,
                            subtask=where.subtask, attempt=where.attempt, outputs={"notes": notes})
        validated.append(ToolCall(call.tool, clean, call.rationale, call.source))
    negative = str((feedback or {}).get("negative") or "").strip()
    if negative:
        validated = [_avoiding(tools, call, negative, where) for call in validated]
    return validated


def _avoiding(tools: ToolRegistry, call: ToolCall, negative: str, where: Where) -> ToolCall:
    """The last attempt's negative feedback added to a generative step's negative prompt (IMAGAgent: F_neg is
    written to be usable as one), whatever the executor put there."""
    if "negative_prompt" not in {p.name for p in tools.get(call.tool).params}:
        return call
    parts = [p.strip() for p in f"{call.params.get('negative_prompt') or ''},{negative}".replace(";", ",").split(",")]
    merged = ", ".join(dict.fromkeys(p for p in parts if p))
    where.trace.add("executor", where.agent, f"{call.tool}: the last attempt's negative feedback joins its negative "
                                             "prompt", round=where.round, subtask=where.subtask, attempt=where.attempt,
                    outputs={"negative_prompt": merged})
    return ToolCall(call.tool, {**call.params, "negative_prompt": merged}, call.rationale, call.source)


def _subtask_feedback_text(fb: dict[str, Any] | None) -> str:
    if not fb:
        return "(none yet)"
    return "; ".join(f"{k}: {v}" for k, v in fb.items() if v not in ("", None))


def run_chain(tools: ToolRegistry, chain: list[ToolCall], image: np.ndarray) -> np.ndarray:
    """Run a validated chain in process; a step edits the input or an earlier step's output, and
    its mask parameters may read earlier steps (e.g. ground "the dog" -> grow -> blur outside it)."""
    outputs: list[np.ndarray] = []
    for call in chain:
        src = image if call.source == "input" else outputs[int(call.source.split(":")[1])]
        out, _, _ = tools.call(call.tool, src, call.params, refs=outputs)
        outputs.append(out)
    if chain and tools.get(chain[-1].tool).returns == "mask":
        raise ToolCallError(f"the chain ends with {chain[-1].tool}, which makes a mask; add a step that uses it "
                            "(e.g. edit_region with mask='step:N')")
    return outputs[-1] if outputs else image


# -- critic: CCA discriminator ----------------------------------------------------------------

async def discriminate(brain: Brain, request: EditRequest, plan_: Plan, before: np.ndarray, after: np.ndarray,
                       where: Where) -> Feedback:
    """Yes/No questions from the request and caption, answered on the edited image, plus a quality
    score; compiled into a report split per subtask."""
    q_req = BrainRequest(
        role="questions", system=prompt("questions"),
        text=f"Request: {request.instruction or request.mood or 'improve the photo'}\nCaption of the original: "
             f"{request.caption or '(unknown)'}\nSubtasks: {plan_.summary()}",
        schema=schemas.QUESTIONS, context={"request": request, "plan": plan_, "input_size": before.shape[1::-1]})
    raw = (await _ask(brain, q_req, where, "write Yes/No questions")).data["questions"]
    questions = [Question(text=q["text"], subtask=q.get("subtask"), check=q.get("check") or {}) for q in raw]
    a_req = BrainRequest(
        role="answers", system=prompt("answers"),
        text="Questions:\n" + "\n".join(f"{i}. {q.text}" for i, q in enumerate(questions)),
        schema=schemas.ANSWERS, images=[before, after], context={"questions": questions})
    data = (await _ask(brain, a_req, where, "answer the questions on the edited image")).data
    for q, a in zip(questions, data["answers"]):
        q.answer, q.explanation = a["answer"], a.get("explanation", "")
    quality = float(data["quality"])
    fb = Feedback(score=0.0, questions=questions)
    judged = [q for q in questions if q.answer != "unknown"]
    fb.score = round(0.7 * 10.0 * fb.yes_fraction() + 0.3 * quality if judged else quality, 3)
    fb.positive = "; ".join(q.text for q in questions if q.answer == "yes")
    fb.negative = "; ".join(f"{q.text} no: {q.explanation}" for q in questions if q.answer == "no")
    for s in plan_.subtasks:
        mine = [q for q in questions if q.subtask == s.index]
        if mine:
            fb.per_subtask[s.index] = "; ".join(f"{q.answer}: {q.explanation}" for q in mine)
    return fb


def subtask_feedback(fb: Feedback | None, index: int) -> dict[str, Any] | None:
    """The part of a discriminator report that concerns one subtask, for its executor."""
    if fb is None:
        return None
    mine = [q for q in fb.questions if q.subtask == index and q.answer != "unknown"]
    if not mine:  # e.g. merged expert critiques: their negative points say what to change
        return {"score": fb.score, "note": fb.per_subtask.get(index, ""), "negative": fb.negative}
    ok = all(q.answer == "yes" for q in mine)
    return {"score": 10.0 if ok else 3.0, "note": fb.per_subtask.get(index, ""),
            "negative": "" if ok else "; ".join(q.explanation for q in mine if q.answer == "no") + "; not enough"}


# -- critic: IMAGAgent expert, and the aggregator -------------------------------------------------

async def critique(brain: Brain, expert: str, subtask: Subtask, before: np.ndarray, after: np.ndarray,
                   where: Where) -> Critique:
    rubric = f"expert_{expert}" if (PROMPTS / f"expert_{expert}.md").is_file() else "expert_any"  # a custom panel
    req = BrainRequest(role="expert", system=prompt("expert", expert=expert, rubric=prompt(rubric)),
                       text=f"Subtask: {subtask.goal} (tool {subtask.tool})", schema=schemas.EXPERT,
                       images=[before, after], context={"expert": expert, "subtask": subtask})
    data = (await _ask(brain, req, where, f"expert {expert} on subtask {subtask.index}")).data
    return Critique(expert=expert, score=float(data["score"]), positive=data["positive"], negative=data["negative"],
                    subtask=subtask.index, judged=bool(data.get("judged", True)))


def verdict(critiques: list[Critique]) -> tuple[float, bool]:
    """IMAGAgent's S: the mean score of the experts who could judge, and whether the subtask was judged at all.

    Only an intent expert can say whether the edit did what was asked: when the panel has one and it could
    not judge, quality and fidelity alone do not make the subtask done.
    """
    judged = [c for c in critiques if c.judged]
    intent = [c for c in critiques if c.expert == "intent"]
    is_judged = bool(judged) and (not intent or any(c.judged for c in intent))
    return (round(sum(c.score for c in judged) / len(judged), 3) if judged else 0.0), is_judged


async def aggregate(brain: Brain, critiques: list[Critique], where: Where) -> Feedback:
    """The aggregator brain merges the critiques' text; the score is ``verdict``, computed here, not asked for."""
    if not critiques:
        raise ValueError("the aggregator needs at least one critique")
    score, judged = verdict(critiques)
    req = BrainRequest(role="aggregator", system=prompt("aggregator"),
                       text="\n".join(f"- {c.expert}: " + (f"score {c.score:.1f}" if c.judged else "could not judge")
                                      + f"; positive: {c.positive or '-'}; negative: {c.negative or '-'}"
                                      for c in critiques),
                       schema=schemas.AGGREGATE, context={"critiques": critiques})
    data = (await _ask(brain, req, where, f"aggregate {len(critiques)} critiques")).data
    return Feedback(score=score, positive=data["positive"], negative=data["negative"], experts=list(critiques),
                    judged=judged)


# -- quality competitor ---------------------------------------------------------------------

async def compete(brain: Brain, candidates: list[Candidate], min_score: float, where: Where) -> tuple[int, bool, str]:
    rows = [{"score": c.feedback.score if c.feedback else 0.0,
             "yes_fraction": c.feedback.yes_fraction() if c.feedback else 0.0,
             "satisfied": bool(c.feedback and c.feedback.satisfied(min_score))} for c in candidates]
    schema = {**schemas.COMPETE, "properties": {**schemas.COMPETE["properties"],
                                                "best": {"type": "integer", "minimum": 0, "maximum": len(candidates) - 1}}}
    req = BrainRequest(role="competitor", system=prompt("competitor"),
                       text="\n".join(f"{i}. {c.agent} (round {c.round}): {c.plan.summary()}; {_feedback_text(c.feedback)}"
                                      for i, c in enumerate(candidates)),
                       schema=schema, images=[c.image for c in candidates],
                       context={"candidates": rows, "min_score": min_score})
    data = (await _ask(brain, req, where, f"pick the best of {len(candidates)} candidates")).data
    best, stop, reason = int(data["best"]), bool(data["stop"]), data.get("reason", "")
    missing = candidates[best].plan.unsupported
    if stop and missing:  # a request with a part no tool could do is not satisfied, whatever the brain says
        stop, reason = False, f"{reason}; not done: {'; '.join(missing)}".lstrip("; ")
        where.trace.add("competitor", where.agent, f"no early stop: part of the request is not done ({'; '.join(missing)})",
                        round=where.round, outputs={"unsupported": list(missing)})
    return best, stop, reason


# -- perceiver ----------------------------------------------------------------------------

async def perceive(brain: Brain, image: np.ndarray, tools: ToolRegistry, k: int, where: Where, mood: str = "",
                   tried: tuple[str, ...] = (), memory: tuple[str, ...] = ()) -> tuple[str, list[ToolCall]]:
    """The scene the brain names and its validated actions (possibly none: a good photo needs nothing)."""
    text = "Propose actions for this photo."
    if memory:  # PhotoAgent's memory: what was executed and what came of it
        text += "\nAlready executed (do not repeat what was reverted):\n" + "\n".join(f"- {m}" for m in memory)
    req = BrainRequest(role="perceiver",
                       system=prompt("perceiver", k=k, tools=tools.planner_catalogue(),
                                     mood_text=f" toward the mood '{mood}'" if mood else ""),
                       text=text, schema=schemas.perceive_schema(tools.specs(), k),
                       images=[image], context={"stats": image_statistics(image), "tools": tools.specs(), "k": k,
                                                "mood": mood, "tried": tried, "memory": memory})
    data = (await _ask(brain, req, where, "propose actions")).data
    calls = []
    for action in data["actions"]:
        try:
            clean, _ = tools.get(action["tool"]).validate(action.get("params"))
        except ToolCallError as err:
            where.trace.add("perceiver", where.agent, f"dropped an invalid action: {err}", round=where.round)
            continue
        calls.append(ToolCall(action["tool"], clean, action.get("rationale", "")))
    return str(data.get("scene", "")).strip(), calls


__all__ = ["Where", "aggregate", "compete", "critique", "discriminate", "execute", "perceive", "plan", "prompt",
           "run_chain", "subtask_feedback", "verdict"]
