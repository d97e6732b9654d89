"""IMAGAgent's closed loop, in pure Python: plan once; per subtask up to tau_it attempts, each judged by a panel of
experts and an aggregator, accepted at tau_sr or the best kept; the history C feeds every step.

An attempt is two steps: the execute step (wherever the runner puts it: ``execute_in_process`` or an Executor
node) and ``after_attempt`` (judge, then retry, move to the next subtask, or finish), which takes what the
execute step produced. ``next_step`` says which step follows from the state and the last step's outcome;
``advance`` takes the steps, leaving an execute step to a runner that runs it elsewhere, so both runners drive one
machine. The roles' own work is in ``roles/``; what the loops share is in ``loop.py``.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np

from ..tools.spec import ToolRegistry
from . import roles
from .brain import Brain
from .loop import Executed, LoopFailed, attempted, close_cast, execute_or_fail, or_keep_best, raise_brain_error
from .records import (Attempt, Critique, EditRequest, ExecutorFeedback, Feedback, HistoryContext, Plan, Subtask,
                      ToolCall)
from .roles.asking import Where
from .rule_brain import RuleBrain
from .rule_default import offline_brain
from .trace import Trace

AGENT = "imagagent"


@dataclass(frozen=True)
class ClosedLoopSettings:
    max_attempts: int = 3  # tau_it
    accept_score: float = 7.0  # tau_sr
    experts: tuple[str, ...] = ("intent", "quality", "fidelity")
    keep_best_on_brain_error: bool = False  # a brain fails mid-loop: False fails the run; True keeps the subtasks done

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not self.experts:
            raise ValueError("the critic panel needs at least one expert")


@dataclass
class IMAGAgentCast:
    """Who plays which role in a closed loop: the planner, the executor (orchestrator), the experts (one brain
    for all, or one per expert) and the aggregator."""

    planner: Brain
    executor: Brain
    experts: list[Brain]
    aggregator: Brain
    notes: list[str] = field(default_factory=list)  # how the defaults were made, for the trace

    @classmethod
    def of(cls, planner: Brain | None = None, executor: Brain | None = None, experts: list[Brain | None] = (),
           aggregator: Brain | None = None) -> "IMAGAgentCast":
        """The cast from the roles a user connects, with the defaults: the planner is the rule brain, and every
        other role (each expert too) the planner. So a panel left unconnected is one model asked three times
        (each with its expert's emphasis), where the paper's panel is three different VLMs (Qwen-VL-Max,
        Doubao-Seed-1.6-Vision, Doubao-Seed-1.6) and its ablation puts that panel ahead of a single expert; the
        trace says so. Give ``experts`` one brain each to follow the paper."""
        planner = planner or offline_brain()
        shared = [i for i, b in enumerate(experts) if b is None] if experts else [0]
        who = ("the experts use" if len(shared) == max(len(experts), 1)
               else f"the experts of input(s) {', '.join(str(i + 1) for i in shared)} use")
        notes = [] if isinstance(planner, RuleBrain) or not shared else [  # the rule brain is no model to vary
            f"{who} the planner's brain ({planner.name}): one model asked once per expert, where the paper's panel "
            "is three different models; connect a Brain to each expert input to give each its own"]
        return cls(planner, executor or planner, [b or planner for b in experts] or [planner], aggregator or planner,
                   notes)

    def panel(self, settings: ClosedLoopSettings) -> list[tuple[str, Brain]]:
        """(expert, brain) for every expert of the settings."""
        if len(self.experts) not in (1, len(settings.experts)):
            raise ValueError(f"give one brain for all experts or one per expert ({len(settings.experts)})")
        brains = self.experts if len(self.experts) > 1 else self.experts * len(settings.experts)
        return list(zip(settings.experts, brains))

    def brains(self) -> list[Brain]:
        return [self.planner, self.executor, *self.experts, self.aggregator]


@dataclass
class ClosedLoopResult:
    image: np.ndarray
    plan: Plan
    attempts: list[Attempt]
    accepted: list[bool]  # per subtask: reached accept_score
    tool_calls: int
    history: HistoryContext
    trace: Trace = field(repr=False, default_factory=Trace)
    unjudged: list[int] = field(default_factory=list)  # subtasks no expert could judge (never accepted)
    failed: list[int] = field(default_factory=list)  # subtasks whose every attempt failed (left undone)

    def text(self) -> str:
        """One line on the run, the same whichever runner ran the attempts."""
        out = f"{len(self.plan.subtasks)} subtask(s), {len(self.attempts)} attempt(s), accepted {self.accepted}"
        if self.unjudged:
            out += f"; not judged (no expert could tell whether they were done): subtask(s) {self.unjudged}"
        if self.failed:
            out += f"; failed (every attempt failed, left undone): subtask(s) {self.failed}"
        if self.plan.unsupported:
            out += f"; cannot do: {'; '.join(self.plan.unsupported)}"
        if "error" in self.trace.summary:
            out += f"; stopped: {self.trace.summary['error']}"
        return out


@dataclass
class ClosedLoopState:
    """What the closed loop carries between subtasks (so each subtask can run in a fresh node)."""

    trace: Trace
    plan: Plan
    current: np.ndarray = field(repr=False)
    history: HistoryContext = field(default_factory=HistoryContext)
    attempts: list[Attempt] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)
    unjudged: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)  # subtasks whose every attempt failed (left undone)
    tries: list[Attempt] = field(default_factory=list)  # the current subtask's attempts so far
    error: str = ""  # why the loop ended early when a brain failed (keep_best_on_brain_error)
    started: float = field(default_factory=time.perf_counter)

    def done(self) -> bool:
        return bool(self.error) or len(self.accepted) >= len(self.plan.subtasks)

    def subtask(self) -> Subtask:
        """The subtask being worked on."""
        return self.plan.subtasks[len(self.accepted)]

    def has_result(self) -> bool:
        return True  # the subtasks done so far, or the photo as it was

    def kept(self) -> str:
        return f"the {len(self.accepted)} subtask(s) done"


async def start(image: np.ndarray, request: EditRequest, tools: ToolRegistry, cast: IMAGAgentCast,
                settings: ClosedLoopSettings, should_stop: Callable[[], None] | None = None) -> ClosedLoopState:
    """The plan step (once, before any subtask)."""
    cast.panel(settings)
    trace = Trace(title=f"IMAGAgent closed loop: up to {settings.max_attempts} attempts per subtask")
    history = HistoryContext()
    for note in cast.notes:
        trace.add("loop", AGENT, note)
    the_plan = await roles.plan(cast.planner, request, tools, image, Where(trace, AGENT, should_stop=should_stop),
                                history)
    history.add("plan", the_plan.summary())
    return ClosedLoopState(trace, the_plan, image, history)


def _where(state: ClosedLoopState, should_stop) -> Where:
    return Where(state.trace, AGENT, subtask=state.subtask().index, attempt=len(state.tries), should_stop=should_stop)


async def execute_in_process(state: ClosedLoopState, tools: ToolRegistry, cast: IMAGAgentCast,
                             settings: ClosedLoopSettings, should_stop=None) -> Executed:
    """The next attempt's execute step, in process: IMAGAgent's orchestrator writes a chain (the planner's tool is
    a suggestion; it may choose another) from the last attempt's typed feedback, and it runs."""
    sub, last = state.subtask(), (state.tries[-1] if state.tries else None)
    written: list[list[ToolCall]] = []

    async def step() -> tuple[list[list[ToolCall]], np.ndarray]:
        chain = await roles.execute(cast.executor, sub, tools, state.current, _where(state, should_stop),
                                    state.history, last.chain if last else None,
                                    attempt_feedback(last.feedback, settings.accept_score) if last else None,
                                    any_tool=True)
        written.append(chain)
        if repeat_of(state.tries, chain) is not None:  # not run: ``after_attempt`` ends the subtask
            return [chain], state.current
        return [chain], await asyncio.to_thread(roles.run_chain, tools, chain, state.current)

    executed = await execute_or_fail(step())
    if executed.failed:
        executed.chains = written  # the chain, when one was written before a tool raised
    return executed


async def _judge(state: ClosedLoopState, chain: list[ToolCall], out: np.ndarray, cast: IMAGAgentCast,
                 settings: ClosedLoopSettings, should_stop) -> Attempt:
    """The judge step: the expert panel (concurrently) and the aggregator on one attempt; it enters C."""
    sub, w = state.subtask(), _where(state, should_stop)
    panel = cast.panel(settings)
    answers = await asyncio.gather(*(attempted(roles.critique(b, name, sub, state.current, out, w)) for name, b in panel))
    critiques = []
    for (name, _), (critique, why) in zip(panel, answers):
        if why:  # an expert that could not answer could not judge: the others still do
            critique = Critique(expert=name, score=0.0, negative=f"could not judge: {why}", subtask=sub.index,
                                judged=False)
            state.trace.add("loop", AGENT, f"subtask {sub.index}: expert {name} failed ({why}); not judged by it",
                            subtask=sub.index, attempt=len(state.tries), outputs={"error": why})
        critiques.append(critique)
    feedback, why = await attempted(roles.aggregate(cast.aggregator, critiques, w))
    if why:  # S is computed in code anyway; the experts' own words stand in for the merged text
        feedback = roles.merged(critiques, "; ".join(c.positive for c in critiques if c.positive),
                                "; ".join(c.negative for c in critiques if c.negative))
        state.trace.add("loop", AGENT, f"subtask {sub.index}: the aggregator failed ({why}); the experts' text is "
                                       "kept as it is", subtask=sub.index, attempt=len(state.tries),
                        outputs={"error": why})
    attempt = Attempt(subtask=sub.index, number=len(state.tries), chain=chain, feedback=feedback, image=out)
    state.tries.append(attempt)
    record_attempt(state.history, sub.index, attempt.number, chain, feedback, out)
    return attempt


def _failed(state: ClosedLoopState, why: str, chain: list[ToolCall]) -> Attempt:
    """An attempt that did not run (an invalid chain, a tool that raised): scored 0, its error in the trace and,
    for the next attempt, in C and the executor's feedback; the loop goes on."""
    sub = state.subtask()
    attempt = Attempt(subtask=sub.index, number=len(state.tries), chain=list(chain),
                      feedback=Feedback(score=0.0, error=why), image=state.current)
    state.tries.append(attempt)
    state.trace.add("loop", AGENT, f"subtask {sub.index} attempt {attempt.number} failed: {why}",
                    subtask=sub.index, attempt=attempt.number, outputs={"error": why})
    state.history.add("attempt", f"subtask {sub.index} attempt {attempt.number} failed: {why}", score=0.0)
    return attempt


def repeat_of(tries: list[Attempt], chain: list[ToolCall]) -> int | None:
    """The earlier attempt whose chain this one repeats (same tools, parameters and sources), or None. The same
    chain on the same photo gives the same image and the same verdict: it is neither run nor judged again."""
    key = [c.key() for c in chain]
    return next((a.number for a in tries if [c.key() for c in a.chain] == key), None)


def _retry(state: ClosedLoopState, settings: ClosedLoopSettings) -> bool:
    """The decide step: another attempt when the last was judged, below tau_sr, and attempts are left (an
    attempt no expert could judge is not retried: the next could not be judged either)."""
    last = state.tries[-1]
    return last.feedback.judged and not last.feedback.accepts(settings.accept_score) \
        and len(state.tries) < settings.max_attempts


def _finish_subtask(state: ClosedLoopState, settings: ClosedLoopSettings) -> None:
    """The finish step of a subtask: keep the best attempt (accepted at tau_sr when judged) and move on."""
    sub, tries = state.subtask(), state.tries
    ran = [a for a in tries if not a.feedback.error]
    best = max(ran or tries, key=lambda a: a.score)
    ok = bool(ran) and best.feedback.accepts(settings.accept_score)
    if not ran:
        state.failed.append(sub.index)
    elif not best.feedback.judged:
        state.unjudged.append(sub.index)
    verdict = ("failed: every attempt failed; the image stays as it was, as" if not ran
               else f"unjudged: no expert could tell whether '{sub.goal}' was done; keeping" if not best.feedback.judged
               else "accept" if ok
               else "keep the best (the intent was judged not carried out, so not accepted) of"
               if best.feedback.done is False else "keep the best of")
    state.trace.add("loop", AGENT, f"subtask {sub.index}: {verdict} attempt "
                                   f"{best.number} (score {best.score:.1f})", subtask=sub.index,
                    scores={"score": best.score}, outputs={"chain": [c.as_dict() for c in best.chain]},
                    preview=best.image)
    record_choice(state.history, sub.index, best.number, len(tries), best.score, best.feedback.judged, ok)
    state.current = best.image
    state.attempts.extend(tries)
    state.tries = []
    state.accepted.append(ok)


async def after_attempt(state: ClosedLoopState, executed: Executed, cast: IMAGAgentCast,
                        settings: ClosedLoopSettings, should_stop=None) -> None:
    """The rest of an attempt, from what its execute step produced: a failed attempt scores 0 and the loop goes
    on; a brain that failed stops the loop (or keeps the subtasks done); otherwise the panel judges it. Then
    another attempt, the next subtask (the best attempt kept), or the end: ``state.done()`` says which."""
    keep, what = settings.keep_best_on_brain_error, f"subtask {len(state.accepted)}"
    if executed.error is not None:
        judged = await or_keep_best(state, keep, raise_brain_error(executed.error), what, AGENT)
    elif executed.failed:
        judged = _failed(state, executed.failed, executed.chain())
    elif (earlier := repeat_of(state.tries, executed.chain())) is not None:
        sub = state.subtask()
        state.trace.add("loop", AGENT, f"subtask {sub.index}: attempt {len(state.tries)} would repeat attempt "
                                       f"{earlier} ({', '.join(c.label() for c in executed.chain())}); not run or "
                                       "judged again, the subtask ends with its best attempt",
                        subtask=sub.index, attempt=len(state.tries), outputs={"repeat_of": earlier})
        _finish_subtask(state, settings)
        return
    else:
        judged = await or_keep_best(state, keep, _judge(state, executed.chain(), executed.image, cast, settings,
                                                        should_stop), what, AGENT)
    if judged is None:
        state.tries = []  # the failed subtask's attempts are not kept
    elif not _retry(state, settings):
        _finish_subtask(state, settings)


# -- the loop as a state machine: the next step from the state and the last step's outcome ---------------------

StepKind = Literal["plan", "execute", "judge", "finish"]


@dataclass(frozen=True)
class Step:
    """What a closed-loop runner does next: plan (``start``, once), execute the current subtask's next attempt,
    judge what it produced (``executed``), or finish (``result``)."""

    kind: StepKind
    executed: Executed | None = None


PLANNED = Step("plan")


def next_step(state: ClosedLoopState, last: Step, outcome: Executed | None = None) -> Step:
    """The step after ``last``: an execute step's ``Executed`` is judged; after the plan or a judge step (which
    retried, moved on or stopped the loop: ``after_attempt``), the next attempt, or the finish when done."""
    if last.kind == "execute":
        return Step("judge", outcome)
    if last.kind in ("plan", "judge"):
        return Step("finish") if state.done() else Step("execute")
    raise ValueError(f"no step follows {last.kind!r}")


async def advance(state: ClosedLoopState, step: Step, tools: ToolRegistry, cast: IMAGAgentCast,
                  settings: ClosedLoopSettings, should_stop: Callable[[], None] | None = None, *,
                  in_process: bool = False, on_step: Callable[[int, int, str], None] | None = None) -> Step:
    """Take the steps from ``step`` and return the first the runner must take itself: the finish, or an execute
    step; with ``in_process``, execute steps run here (``on_step`` told before each) until the subtask that was
    current is kept, so a runner can report or hand over between subtasks."""
    index, total = len(state.accepted), len(state.plan.subtasks)
    while step.kind != "finish":
        outcome = None
        if step.kind == "execute":
            if not in_process or len(state.accepted) != index:
                return step
            if on_step:
                on_step(state.subtask().index, total,
                        f"subtask {state.subtask().index + 1}/{total}, attempt {len(state.tries) + 1}")
            outcome = await execute_in_process(state, tools, cast, settings, should_stop)
        elif step.kind == "judge":
            await after_attempt(state, step.executed, cast, settings, should_stop)
        step = next_step(state, step, outcome)
    return step


async def subtask_in_process(state: ClosedLoopState, tools: ToolRegistry, cast: IMAGAgentCast,
                             settings: ClosedLoopSettings, should_stop: Callable[[], None] | None = None,
                             on_step: Callable[[int, int, str], None] | None = None) -> None:
    """The next subtask in process: attempts (execute, judge, decide) until it is kept or the loop ends."""
    await advance(state, next_step(state, PLANNED), tools, cast, settings, should_stop, in_process=True,
                  on_step=on_step)


def attempt_feedback(feedback: Feedback, accept_score: float) -> ExecutorFeedback:
    """The merged verdict on the last attempt, typed for the next: the experts' direction (or, when none said,
    keep at tau_sr and more below it), the score, what to push further and what to keep out."""
    direction = feedback.direction or ("keep" if feedback.score >= accept_score else "more")
    return ExecutorFeedback(direction, feedback.score, feedback.positive, feedback.negative, failed=feedback.error)


def record_attempt(history: HistoryContext, subtask: int, number: int, chain: list[ToolCall], feedback: Feedback,
                   image: np.ndarray) -> None:
    """IMAGAgent's C gains an attempt: its chain and reasoning, both sides of its feedback, a thumbnail of it."""
    reasons = "; ".join(dict.fromkeys(c.rationale for c in chain if c.rationale))
    history.add("attempt", f"subtask {subtask} attempt {number}: {', '.join(c.label() for c in chain)}"
                           + (f"; reasoning: {reasons[:300]}" if reasons else "")
                           + f"; positive: {feedback.positive or '-'}; negative: {feedback.negative or '-'}",
                score=feedback.score, image=image)


def record_choice(history: HistoryContext, subtask: int, number: int, tries: int, score: float, judged: bool,
                  accepted: bool) -> None:
    """...and the result kept for a subtask (its thumbnail is the attempt's, already in C)."""
    verdict = "accepted" if accepted else "kept the best, not accepted," if judged else "kept, not judged,"
    history.add("result", f"subtask {subtask}: {verdict} attempt {number} of {tries}", score=score)


def summary(plan_: Plan, accepted: list[bool], unjudged: list[int], attempts: int, tool_calls: int,
            started: float, mode: str, failed: list[int] | None = None) -> dict[str, Any]:
    """The closed loop trace's summary, the same keys whichever runner ran the subtasks."""
    return {"subtasks": len(plan_.subtasks), "accepted": accepted, "unjudged": unjudged, "failed": failed or [],
            "attempts": attempts,
            "tool_calls": tool_calls, "unsupported": plan_.unsupported, "plan": plan_.summary(), "mode": mode,
            "wall_s": round(time.perf_counter() - started, 3)}


def result(state: ClosedLoopState, mode: str = "in-process") -> ClosedLoopResult:
    if state.plan.subtasks and len(state.failed) == len(state.accepted) == len(state.plan.subtasks):
        last = next(a.feedback.error for a in reversed(state.attempts) if a.feedback and a.feedback.error)
        raise LoopFailed(f"the closed loop edited nothing: every attempt at every subtask failed. The last failure: "
                         f"{last}. Fix what it names (the endpoint, the model, the tool or its model file) and run "
                         "again.")
    calls = sum(len(a.chain) for a in state.attempts)
    state.trace.summary = summary(state.plan, state.accepted, state.unjudged, len(state.attempts), calls,
                                  state.started, mode, state.failed)
    if state.error:
        state.trace.summary["error"] = state.error
    return ClosedLoopResult(state.current, state.plan, state.attempts, state.accepted, calls, state.history, state.trace,
                            state.unjudged, state.failed)


async def run_closed_loop(image: np.ndarray, request: EditRequest, tools: ToolRegistry, cast: IMAGAgentCast,
                          settings: ClosedLoopSettings | None = None,
                          should_stop: Callable[[], None] | None = None,
                          on_step: Callable[[int, int, str], None] | None = None) -> ClosedLoopResult:
    """Plan once; per subtask up to tau_it attempts judged by the expert panel and the aggregator; the cast's
    brains are closed at the end."""
    settings = settings or ClosedLoopSettings()
    try:
        state = await start(image, request, tools, cast, settings, should_stop)
        while not state.done():
            await subtask_in_process(state, tools, cast, settings, should_stop, on_step)
        return result(state)
    finally:
        await close_cast(cast)
