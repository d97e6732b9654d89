"""The roles: planner, executor, critic (discriminator and expert), aggregator, competitor, perceiver.

Each role renders its prompt file, puts the same inputs in ``context`` for the rule brain,
asks its brain for data fitting its schema, turns that data into records, validates every
tool call against the tool specs, and records one trace step.
"""
from __future__ import annotations

import asyncio
import functools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, Callable

import numpy as np

from ..tools.spec import ToolCallError, ToolRegistry, ToolSpec
from . import schemas
from .brain import Brain, BrainAnswer, BrainRequest
from .records import (Candidate, Critique, Direction, EditRequest, ExecutorFeedback, Feedback, HistoryContext, Plan,
                      Question, Subtask, Suggestion, ToolCall, check_chain)
from .quality.metrics import image_statistics
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


async def ask(brain: Brain, request: BrainRequest, where: Where, action: str,
              preview: np.ndarray | None = None) -> BrainAnswer:
    """Ask a brain for one role's answer (interruptible), recording it in the trace."""
    if where.should_stop:
        where.should_stop()
    start = time.perf_counter()
    request.agent = where.agent
    request.on_text = lambda text: where.trace.live(request.role, where.agent, text)
    answer = await interruptible(brain.ask(request), where.should_stop)
    where.trace.add(request.role, where.agent, action, started=start, round=where.round, subtask=where.subtask,
                    attempt=where.attempt,
                    inputs={"brain": brain.name, "text": request.text[:600], "images": len(request.images),
                            **({"prompt_tokens": answer.prompt_tokens} if answer.prompt_tokens else {})},
                    outputs={**answer.data, **({"notes": answer.notes} if answer.notes else {})},
                    tokens=answer.tokens, cost=round(answer.cost, 6),
                    preview=preview if preview is not None else request.images[-1] if request.images else None)
    return answer


# -- planner ------------------------------------------------------------------------------

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


def with_history(req: BrainRequest, history: HistoryContext | None, text: Callable[[HistoryContext], str],
                 image: np.ndarray, *, then: Callable[[], str | None] | None = None) -> BrainRequest:
    """``req`` with its text and images (the photo, then the history's thumbnails) drawn from ``history``, and a
    ``trim`` that leaves out the history's oldest pieces one by one when the request must fit a context, and
    then whatever ``then`` shortens (it says what, or None)."""
    window = [history or HistoryContext()]

    def show() -> None:
        req.text, req.images = text(window[0]), [image, *window[0].images()]

    def trim() -> str | None:
        smaller = window[0].trimmed()
        if smaller is None:
            return then() if then is not None else None
        window[0], dropped = smaller
        show()
        return dropped

    show()
    req.trim = trim
    return req


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


# -- executor -----------------------------------------------------------------------------

def executor_tools(tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> list[ToolSpec]:
    """The tools an executor may chain: the subtask's tool first; the toolbox's localisation and mask helpers
    when that tool takes a mask (ground -> grow -> inpaint); with ``any_tool`` (IMAGAgent's orchestrator, for
    which the planner's tool is a suggestion) every other tool of the toolbox but graph tools, which run alone."""
    spec = tools.get(subtask.tool)  # a tool outside the toolbox: ToolCallError naming the allowed ones
    takes_mask = any(p.type == "mask" for p in spec.params)
    usable = tools.runnable().specs()
    helpers = [s for s in usable if s.category == "localise" and s.name != spec.name]
    others = [s for s in usable if s.category not in ("localise", "graph") and s.name != spec.name]
    if spec.category == "graph" and not any_tool:
        return [spec]
    return [spec, *(helpers if takes_mask or any_tool else []), *(others if any_tool else [])]


def check_steps(chain: list[ToolCall], tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> None:
    """What a schema cannot say about a chain: each step reads the input or an earlier step; a mask parameter
    names an earlier step that made a mask; an image tool does not edit a mask; the chain ends with an image;
    it does the subtask's own tool (unless the orchestrator may choose); a graph tool runs alone."""
    try:
        check_chain(chain)
    except ValueError as err:
        raise ToolCallError(str(err)) from None
    specs = [tools.get(c.tool) for c in chain]
    for i, (call, spec) in enumerate(zip(chain, specs)):
        if call.source != "input" and spec.returns == "image" and specs[int(call.source[5:])].returns == "mask":
            raise ToolCallError(f"step {i} ({call.tool}) edits {call.source}, which is a mask; let it edit 'input' and "
                                f"pass the mask as a parameter, e.g. mask='{call.source}'")
        for p in spec.params:
            value = call.params.get(p.name)
            if p.type != "mask" or not isinstance(value, str):
                continue
            kind, _, num = value.partition(":")
            if kind != "step" or not num.isdigit() or int(num) >= i or specs[int(num)].returns != "mask":
                made = [f"step:{j}" for j in range(i) if specs[j].returns == "mask"]
                raise ToolCallError(f"step {i} ({call.tool}) takes {p.name}={value!r}, but that is not an earlier step "
                                    f"that makes a mask; use one of {made or 'none yet: add a ground step first'}")
    if specs[-1].returns != "image":
        raise ToolCallError(f"the chain ends with {chain[-1].tool}, which makes a mask; end with a step that uses it")
    if not any_tool and subtask.tool not in {c.tool for c in chain}:
        raise ToolCallError(f"the chain never runs {subtask.tool}, the subtask's tool; the other steps may only "
                            "prepare its mask")
    if len(chain) > 1 and any(s.category == "graph" for s in specs):
        raise ToolCallError("a graph tool runs alone in its chain (it is expanded into ComfyUI nodes); drop the other steps")


def chain_problem(data: dict[str, Any], tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> str | None:
    """What is wrong with an executor's answer beyond its schema (re-asked with this text), or None."""
    try:
        chain = [ToolCall.from_dict(step) for step in data["steps"]]
        check_steps(chain, tools, subtask, any_tool)
        for call in chain:
            tools.get(call.tool).validate(call.params)
    except ToolCallError as err:
        return str(err)
    return None


def _first_step_reads_the_input(data: dict[str, Any]) -> list[str]:
    """The first step has no earlier step to read: whatever step it names, it can only mean the input. (A later
    step naming itself or a later one is ambiguous, so that is re-asked.)"""
    steps = data.get("steps")
    first = steps[0] if isinstance(steps, list) and steps and isinstance(steps[0], dict) else None
    if first is None or first.get("source", "input") == "input":
        return []
    was, first["source"] = first["source"], "input"
    return [f"step 0 read {was!r}; the first step can only read the input"]


def _main_step(chain: list[ToolCall] | None, tool: str) -> ToolCall | None:
    if not chain:
        return None
    return next((c for c in reversed(chain) if c.tool == tool), None)


async def execute(brain: Brain, subtask: Subtask, tools: ToolRegistry, image: np.ndarray, where: Where,
                  history: HistoryContext | None = None, previous: list[ToolCall] | None = None,
                  feedback: ExecutorFeedback | None = None, any_tool: bool = False) -> list[ToolCall]:
    """The executor reads its subtask's tool manual (and its helpers'), and returns a validated tool chain."""
    allowed = executor_tools(tools, subtask, any_tool)
    spec, extra = allowed[0], allowed[1:]
    helpers = [s for s in extra if s.category == "localise"]
    others = [s for s in extra if s.category != "localise"]
    main = _main_step(previous, spec.name)
    shown = (", ".join(c.label() for c in previous) or "(no chain: it failed before one was written)"
             if previous is not None else "(first attempt)")
    # the subtask's tool in full, the others one line each; to fit a small context, past the history, the other
    # lines lose their parameters (the answer's schema still gives them), then their descriptions
    lines = (lambda o: o.brief(), lambda o: f"- {o.name}: {o.description}", lambda o: f"- {o.name}")
    shorter = ["", "the other tools' parameters", "the other tools' descriptions"]
    level = [0]

    def system() -> str:
        line = lines[level[0]]
        return prompt("executor", manual=spec.manual(),
                      helpers=("Helpers that may come before it, to make its mask (pass one as mask='step:N'):\n"
                               + "\n".join(h.brief() for h in helpers)) if helpers else "",
                      others=("The tool above is the planner's suggestion. If it cannot do the subtask (see the "
                              "history), you may use another tool instead:\n"
                              + "\n".join(line(o) for o in others)) if others else "")

    def plainer() -> str | None:
        if not others or level[0] == len(lines) - 1:
            return None
        level[0] += 1
        req.system = system()
        return shorter[level[0]]

    req = with_history(BrainRequest(
        role="executor", system=system(), text="", schema=schemas.chain_schema(allowed),
        context={"goal": subtask.goal, "spec": spec, "helpers": helpers, "previous": main.params if main else None,
                 "feedback": feedback},
        check=lambda data: chain_problem(data, tools, subtask, any_tool), repair=_first_step_reads_the_input),
        history, lambda h: prompt("executor_user", goal=subtask.goal, previous=shown,
                                  feedback=feedback.text() if feedback else "(none yet)", history=h.render()), image,
        then=plainer)
    answer = await ask(brain, req, where, f"execute subtask {subtask.index}: {subtask.tool}", preview=image)
    chain = [ToolCall.from_dict(step) for step in answer.data["steps"]]
    try:
        check_steps(chain, tools, subtask, any_tool)
    except ToolCallError as err:
        raise ToolCallError(f"{brain.name} returned an invalid tool chain: {err}") from None
    validated = []
    for call in chain:
        clean, notes = tools.get(call.tool).validate(call.params)
        if notes:
            where.trace.add("executor", where.agent, "clamped: " + "; ".join(notes), round=where.round,
                            subtask=where.subtask, attempt=where.attempt, outputs={"notes": notes})
        validated.append(ToolCall(call.tool, clean, call.rationale, call.source))
    negative = feedback.avoid.strip() if feedback else ""
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


def aesthetic_rater(tools: ToolRegistry | None) -> Callable[[np.ndarray], float] | None:
    """The LAION aesthetic predictor (1..10) when the toolbox's model folders hold it, else None."""
    from ..tools.scorers import AestheticScorer

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


# -- critic: IMAGAgent expert, and the aggregator -------------------------------------------------

async def critique(brain: Brain, expert: str, subtask: Subtask, before: np.ndarray, after: np.ndarray,
                   where: Where) -> Critique:
    rubric = f"expert_{expert}" if (PROMPTS / f"expert_{expert}.md").is_file() else "expert_any"  # a custom panel
    req = BrainRequest(role="expert", system=prompt("expert", expert=expert, rubric=prompt(rubric)),
                       text=f"Subtask: {subtask.goal} (tool {subtask.tool})", schema=schemas.EXPERT,
                       images=[before, after], context={"expert": expert, "subtask": subtask})
    data = (await ask(brain, req, where, f"expert {expert} on subtask {subtask.index}")).data
    return Critique(expert=expert, score=float(data["score"]), positive=data["positive"], negative=data["negative"],
                    subtask=subtask.index, judged=bool(data.get("judged", True)), direction=data.get("direction"))


UNDONE: tuple[Direction, ...] = ("more", "reverse")  # an expert's word that the subtask was not carried out


def _intent_voices(critiques: list[Critique]) -> list[Critique]:
    """Who can say whether the subtask was carried out: the intent expert when the panel has one and it judged,
    else every judged expert (a custom panel; each scores the shared rubric, semantic alignment included)."""
    judged = [c for c in critiques if c.judged and c.direction]
    intent = [c for c in judged if c.expert == "intent"]
    return intent or ([] if any(c.expert == "intent" for c in critiques) else judged)


def direction_of(critiques: list[Critique]) -> Direction | None:
    """Which way the next attempt should move. Not carried out (the intent expert says "more" or "reverse") comes
    first; otherwise any judged expert's call for a change (a "keep" from one never hides another's "less"); keep
    when every judged expert says so; None when nobody said."""
    voices = _intent_voices(critiques)
    undone = [c.direction for c in voices if c.direction in UNDONE]
    if undone and len(undone) * 2 > len(voices):
        return undone[0]
    judged = [c for c in critiques if c.judged and c.direction]
    change = [c.direction for c in judged if c.direction != "keep" and c.direction not in UNDONE] or \
             [c.direction for c in judged if c.direction != "keep"]
    return change[0] if change else ("keep" if judged else None)


def intent_done(critiques: list[Critique]) -> bool | None:
    """False when the intent was judged not carried out (the intent expert, or most of a custom panel, says
    "more" or "reverse"): IMAGAgent never accepts such a subtask, whatever S. None when nobody said."""
    voices = _intent_voices(critiques)
    if not voices:
        return None
    return sum(c.direction in UNDONE for c in voices) * 2 <= len(voices)


def verdict(critiques: list[Critique]) -> tuple[float, bool]:
    """IMAGAgent's S: the mean score of the experts who could judge, and whether the subtask was judged at all.

    Only an intent expert can say whether the edit did what was asked: when the panel has one and it could
    not judge, quality and fidelity alone do not make the subtask done.
    """
    judged = [c for c in critiques if c.judged]
    intent = [c for c in critiques if c.expert == "intent"]
    is_judged = bool(judged) and (not intent or any(c.judged for c in intent))
    return (round(sum(c.score for c in judged) / len(judged), 3) if judged else 0.0), is_judged


def merged(critiques: list[Critique], positive: str, negative: str) -> Feedback:
    """The panel's verdict on one attempt with the merged text: S, judged, done and the direction, computed."""
    score, judged = verdict(critiques)
    return Feedback(score=score, positive=positive, negative=negative, experts=list(critiques), judged=judged,
                    direction=direction_of(critiques), done=intent_done(critiques))


async def aggregate(brain: Brain, critiques: list[Critique], where: Where) -> Feedback:
    """The aggregator brain merges the critiques' text; the score is ``verdict``, computed here, not asked for."""
    if not critiques:
        raise ValueError("the aggregator needs at least one critique")
    req = BrainRequest(role="aggregator", system=prompt("aggregator"),
                       text="\n".join(f"- {c.expert}: " + (f"score {c.score:.1f}" if c.judged else "could not judge")
                                      + f"; positive: {c.positive or '-'}; negative: {c.negative or '-'}"
                                      for c in critiques),
                       schema=schemas.AGGREGATE, context={"critiques": critiques})
    data = (await ask(brain, req, where, f"aggregate {len(critiques)} critiques")).data
    return merged(critiques, data["positive"], data["negative"])


# -- quality competitor ---------------------------------------------------------------------

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


__all__ = ["Where", "aesthetic_rater", "aggregate", "alike", "compete", "critique", "describe", "direction_of", "discriminate", "intent_done", "merged",
           "earlier_attempt", "execute", "match_subtask", "plan", "prompt", "route_questions", "run_chain",
           "sees_images", "subtask_feedback", "suggest_other_tools", "verdict", "write_questions"]
