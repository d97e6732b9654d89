"""The two instruction-driven loops, in pure Python: CCA rounds and IMAGAgent's closed loop.

Both are bounded (rounds, attempts), record every decision in one trace, run independent
brain calls concurrently (the two generators; the expert panel), and call ``should_stop``
between steps so a user can interrupt them.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, TypeVar

import numpy as np

from ..tools.errors import shown_by_name
from ..tools.spec import ToolCallError, ToolRegistry
from . import roles
from .brain import Brain, BrainError, InvalidAnswerError, close_brains
from .records import (Attempt, Candidate, EditRequest, ExecutorFeedback, Feedback, HistoryContext, Plan, Question,
                      Subtask, ToolCall)
from .roles import Where
from .trace import Trace

T = TypeVar("T")


async def attempted(step: Awaitable[T]) -> tuple[T | None, str]:
    """Run a step whose failure fails one attempt or candidate: (its result, "") or (None, why). What must stop
    the run (an unreachable endpoint, a cancel) is re-raised; see ``attempt_error``."""
    try:
        return await step, ""
    except Exception as err:  # noqa: BLE001 - sorted by attempt_error: a failed attempt, or re-raised
        why = attempt_error(err)
        if why is None:
            raise
        return None, why


@shown_by_name
class LoopFailed(RuntimeError):
    """Nothing at all succeeded in a loop: every attempt or candidate failed. The message quotes the last failure,
    which names the endpoint or the tool."""


def attempt_error(err: BaseException) -> str | None:
    """Why one attempt (or candidate) failed, when ``err`` fails just that: a brain that never gave a valid answer,
    an invalid chain, a tool that raised at run time (a mask of the wrong size, out of memory, a model's error).
    None when the run itself must stop: an endpoint that cannot be reached, a cancel."""
    if isinstance(err, BrainError) and not isinstance(err, InvalidAnswerError):
        return None
    if isinstance(err, (InvalidAnswerError, ToolCallError, ValueError, RuntimeError, MemoryError, OSError)):
        return f"{type(err).__name__}: {err}"
    return None


@dataclass
class Generator:
    """One CCA generator agent: a planner and a tool executor, each with its own brain."""

    name: str
    planner: Brain
    executor: Brain


@dataclass(frozen=True)
class CCASettings:
    rounds: int = 5  # M
    early_stop: bool = True
    restart_from_original: bool = True  # False: each round continues from the best result so far
    min_score: float = 7.0  # the best candidate satisfies the request at this score with every check passed
    keep_best_on_brain_error: bool = False  # a brain fails mid-loop: False fails the run; True ends it with the best so far

    def __post_init__(self):
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")


@dataclass
class CCAResult:
    image: np.ndarray
    best: Candidate
    rounds: int
    tool_calls: int
    candidates: list[Candidate]
    stopped_early: bool
    trace: Trace


@dataclass
class CCAState:
    """Everything a CCA loop carries from one round to the next (so a round can run in a fresh node)."""

    trace: Trace
    history: HistoryContext = field(default_factory=HistoryContext)
    last: dict[str, Candidate] = field(default_factory=dict)
    best: Candidate | None = None
    every: list[Candidate] = field(default_factory=list)
    rounds_run: int = 0
    questions: list[Question] | None = None  # the discriminator's, written once for the request in round 0
    caption: str = ""  # written by a vision discriminator when the request came without one
    stopped: bool = False
    error: str = ""  # why the loop ended early when a brain failed (keep_best_on_brain_error)
    started: float = field(default_factory=time.perf_counter)

    def done(self, settings: CCASettings) -> bool:
        return self.stopped or bool(self.error) or self.rounds_run >= settings.rounds


def cca_start(generators: list[Generator], settings: CCASettings) -> CCAState:
    if len(generators) < 1:
        raise ValueError("CCA needs at least one generator (the paper uses two)")
    return CCAState(Trace(title=f"CCA: {len(generators)} generators x up to {settings.rounds} rounds"))


@dataclass
class RoundPlans:
    """A CCA round after its plan step: what its execute step needs, in process or as Executor nodes."""

    round: int
    request: EditRequest  # with the caption the discriminator wrote, when it wrote one
    base: np.ndarray = field(repr=False)  # what this round edits: the original, or the best so far
    plans: dict[str, Plan] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # generators whose planner failed: why


def _rival(state: CCAState, generators: list[Generator], gen: Generator) -> Candidate | None:
    others = [state.last[o.name] for o in generators if o.name != gen.name and o.name in state.last]
    return max(others, key=lambda c: c.feedback.score if c.feedback else 0.0) if others else None


async def _round_setup(state: CCAState, image: np.ndarray, request: EditRequest, discriminator: Brain,
                       settings: CCASettings, should_stop) -> tuple[RoundPlans, Where]:
    rnd = state.rounds_run
    judge = Where(state.trace, "discriminator", round=rnd, should_stop=should_stop)
    if state.questions is None:
        state.caption = await cca_caption(discriminator, request, image, judge)
    if state.caption:
        request = replace(request, caption=state.caption)
    base = image if settings.restart_from_original or state.best is None else state.best.image
    return RoundPlans(rnd, request, base), judge


async def _plan_one(state: CCAState, work: RoundPlans, tools: ToolRegistry, generators: list[Generator],
                    gen: Generator, should_stop) -> Plan:
    """CCA's planner step for one generator: reflect on its own result and learn from the rival's."""
    own, rival = state.last.get(gen.name), _rival(state, generators, gen)
    return await roles.plan(gen.planner, work.request, tools, work.base,
                            Where(state.trace, gen.name, round=work.round, should_stop=should_stop), state.history,
                            previous=own.plan if own else None, own_feedback=own.feedback if own else None,
                            rival_plan=rival.plan if rival else None, rival_feedback=rival.feedback if rival else None)


async def cca_execute(state: CCAState, work: RoundPlans, tools: ToolRegistry, gen: Generator,
                      should_stop=None) -> Candidate:
    """CCA's execute step for one generator, in process: each subtask's chain, fed the matching subtask's feedback
    and chain from its own last round (by goal, then tool; never by index)."""
    plan, own, image, chains = work.plans[gen.name], state.last.get(gen.name), work.base, []
    where = Where(state.trace, gen.name, round=work.round, should_stop=should_stop)
    for sub in plan.subtasks:
        previous, fb = (roles.earlier_attempt(own.plan, own.chains, own.feedback, sub) if own is not None
                        else (None, None))
        chain = await roles.execute(gen.executor, sub, tools, image, where.at(subtask=sub.index), state.history,
                                    previous, fb)
        image = await asyncio.to_thread(roles.run_chain, tools, chain, image)
        chains.append(chain)
    return Candidate(agent=gen.name, round=work.round, plan=plan, chains=chains, image=image)


def failed_candidate(state: CCAState, work: RoundPlans, agent: str, why: str,
                     chains: list[list[ToolCall]] | None = None) -> Candidate:
    """A generator that failed this round: scored 0, never picked, and told why next round."""
    state.trace.add("loop", "cca", f"round {work.round}: {agent} failed: {why}", round=work.round,
                    outputs={"error": why})
    return Candidate(agent, work.round, work.plans.get(agent, Plan()), chains or [], work.base,
                     Feedback(score=0.0, error=why))


async def cca_plan(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                   generators: list[Generator], discriminator: Brain, settings: CCASettings,
                   should_stop=None) -> RoundPlans:
    """A round's plan step: in round 0 the caption, then the request's questions beside both planners."""
    work, judge = await _round_setup(state, image, request, discriminator, settings, should_stop)
    questions = _questions(state, discriminator, work, tools, image, judge)
    *plans, state.questions = await asyncio.gather(
        *(attempted(_plan_one(state, work, tools, generators, g, should_stop)) for g in generators), questions)
    work.plans = {g.name: p for g, (p, _) in zip(generators, plans) if p is not None}
    work.failed = {g.name: why for g, (_, why) in zip(generators, plans) if why}
    return work


async def cca_judge(state: CCAState, image: np.ndarray, work: RoundPlans, tools: ToolRegistry,
                    candidates: list[Candidate], discriminator: Brain, competitor: Brain, settings: CCASettings,
                    should_stop=None) -> CCAState:
    """A round's judge and decide steps: the discriminator answers the request's questions on every candidate,
    the report is compiled, and the competitor keeps the best (of this round and the memory) and may stop."""
    rnd, trace = work.round, state.trace
    judge = Where(trace, "discriminator", round=rnd, should_stop=should_stop)
    aesthetic = roles.aesthetic_rater(tools)
    ran = [c for c in candidates if not (c.feedback and c.feedback.error)]  # failed candidates keep their feedback
    feedbacks = await asyncio.gather(*(
        roles.discriminate(discriminator, work.request, c.plan, image, c.image, judge, state.questions, aesthetic)
        for c in ran))
    for c, fb in zip(ran, feedbacks):
        c.feedback = fb
    roles.suggest_other_tools(ran, judge)
    for c in candidates:
        state.last[c.agent] = c
        state.history.add("candidate", f"round {rnd} {c.agent}: " + (f"failed: {c.feedback.error}" if c.feedback.error
                                                                      else c.plan.summary()),
                          score=c.feedback.score, image=None if c.feedback.error else c.image)
    state.every.extend(candidates)
    pool = ran + ([state.best] if state.best is not None else [])
    if not pool:  # every generator failed and nothing earlier succeeded: the next round tries again
        state.rounds_run = rnd + 1
        trace.add("loop", "cca", f"round {rnd}: every generator failed; nothing to pick yet", round=rnd)
        return state
    pick, stop, reason = await roles.compete(competitor, pool, settings.min_score,
                                             Where(trace, "competitor", round=rnd, should_stop=should_stop))
    state.best = best = pool[pick]
    state.rounds_run = rnd + 1
    trace.add("loop", "cca", f"round {rnd}: best is {best.agent} (round {best.round}); {reason}", round=rnd,
              scores={"best": best.feedback.score if best.feedback else 0.0},
              outputs={"tool_calls_so_far": sum(c.tool_calls() for c in state.every)}, preview=best.image)
    if stop and settings.early_stop:
        state.stopped = True
        trace.add("loop", "cca", f"stop early after round {rnd}: the best result satisfies the request", round=rnd)
    return state


async def cca_round(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                    generators: list[Generator], discriminator: Brain, competitor: Brain, settings: CCASettings,
                    should_stop: Callable[[], None] | None = None) -> CCAState:
    """One round in process: each generator plans and executes (the two concurrently, with the questions written
    beside them in round 0), then the judge and decide steps."""
    work, judge = await _round_setup(state, image, request, discriminator, settings, should_stop)

    async def generate(gen: Generator) -> Candidate:
        work.plans[gen.name] = await _plan_one(state, work, tools, generators, gen, should_stop)
        return await cca_execute(state, work, tools, gen, should_stop)

    async def generate_or_fail(gen: Generator) -> Candidate:
        cand, why = await attempted(generate(gen))
        return cand if cand is not None else failed_candidate(state, work, gen.name, why)

    *cands, state.questions = await asyncio.gather(*(generate_or_fail(g) for g in generators),
                                                   _questions(state, discriminator, work, tools, image, judge))
    return await cca_judge(state, image, work, tools, list(cands), discriminator, competitor, settings, should_stop)


async def _questions(state: CCAState, discriminator: Brain, work: RoundPlans, tools: ToolRegistry, image: np.ndarray,
                     where: Where) -> list[Question]:
    """The request's questions: written in round 0 (beside the planners), the same ones after."""
    if state.questions is not None:
        return state.questions
    return await roles.write_questions(discriminator, work.request, tools, image, where)


async def cca_caption(discriminator: Brain, request: EditRequest, image: np.ndarray, where: Where) -> str:
    """A caption of the original when the request has none and the discriminator can see (LLaVA's role in CCA)."""
    if request.caption.strip() or not roles.sees_images(discriminator):
        return ""
    return await roles.describe(discriminator, image, where)


async def or_keep_best(state: CCAState | "ClosedLoopState", keep: bool, step: Awaitable[T], what: str) -> T | None:
    """Run a loop step; when a brain fails in it (the endpoint died, ...) and ``keep`` says so, the loop ends with
    what it has (CCA: the best result of the earlier rounds; the closed loop: the subtasks done) and the error in
    the trace, and None is returned. Without anything done yet it fails."""
    try:
        return await step
    except BrainError as err:
        has_result = state.best is not None if isinstance(state, CCAState) else True
        if not (keep and has_result):
            raise
        state.error = f"{what} failed: {err}"
        kept = (f"the best so far ({state.best.agent}, round {state.best.round})" if isinstance(state, CCAState)
                else f"the {len(state.accepted)} subtask(s) done")
        state.trace.add("loop", "cca" if isinstance(state, CCAState) else "imagagent",
                        f"stop: a brain failed in {what}; keeping {kept}", outputs={"error": str(err)})
        return None


async def cca_round_or_keep_best(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                                 generators: list[Generator], discriminator: Brain, competitor: Brain,
                                 settings: CCASettings, should_stop: Callable[[], None] | None = None) -> CCAState:
    """A round; when a brain fails and the settings say so, the loop ends with the best result of the earlier
    rounds and the error in the trace. Without an earlier result it fails."""
    await or_keep_best(state, settings.keep_best_on_brain_error,
                       cca_round(state, image, request, tools, generators, discriminator, competitor, settings,
                                 should_stop), f"round {state.rounds_run}")
    return state


def cca_summary(rounds: int, tool_calls: int, stopped_early: bool, best: Candidate | Any, started: float,
                mode: str) -> dict[str, Any]:
    """The CCA trace's summary, the same keys whichever runner ran the rounds."""
    return {"rounds": rounds, "tool_calls": tool_calls, "stopped_early": stopped_early,
            "best": {"agent": best.agent, "round": best.round, "score": best.feedback.score if best.feedback else None,
                     "plan": best.plan.summary()},
            "unsupported": best.plan.unsupported, "mode": mode, "wall_s": round(time.perf_counter() - started, 3)}


def cca_result(state: CCAState, mode: str = "in-process") -> CCAResult:
    best = state.best
    if best is None:
        last = next((c.feedback.error for c in reversed(state.every) if c.feedback and c.feedback.error), "no candidate")
        raise LoopFailed(f"CCA edited nothing: every generator failed in all {state.rounds_run} round(s). The last "
                         f"failure: {last}. Fix what it names (the endpoint, the model, the tool or its model file) "
                         "and run again.")
    calls = sum(c.tool_calls() for c in state.every)
    state.trace.summary = cca_summary(state.rounds_run, calls, state.stopped, best, state.started, mode)
    if state.error:
        state.trace.summary["error"] = state.error
    return CCAResult(best.image, best, state.rounds_run, calls, state.every, state.stopped, state.trace)


async def run_cca(image: np.ndarray, request: EditRequest, tools: ToolRegistry, generators: list[Generator],
                  discriminator: Brain, competitor: Brain, settings: CCASettings | None = None,
                  should_stop: Callable[[], None] | None = None,
                  on_round: Callable[[int, int, Candidate], None] | None = None) -> CCAResult:
    settings = settings or CCASettings()
    try:
        state = cca_start(generators, settings)
        while not state.done(settings):
            await cca_round_or_keep_best(state, image, request, tools, generators, discriminator, competitor, settings,
                                         should_stop)
            if on_round:
                on_round(state.rounds_run - 1, settings.rounds, state.best)
        return cca_result(state)
    finally:
        await close_brains(*(b for g in generators for b in (g.planner, g.executor)), discriminator, competitor)


# -- IMAGAgent's closed loop --------------------------------------------------------------------

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


def expert_panel(experts: list[Brain], settings: ClosedLoopSettings) -> list[tuple[str, Brain]]:
    if len(experts) not in (1, len(settings.experts)):
        raise ValueError(f"give one brain for all experts or one per expert ({len(settings.experts)})")
    return list(zip(settings.experts, experts if len(experts) > 1 else experts * len(settings.experts)))


async def closed_loop_start(image: np.ndarray, request: EditRequest, tools: ToolRegistry, planner: Brain,
                            settings: ClosedLoopSettings, should_stop: Callable[[], None] | None = None) -> ClosedLoopState:
    trace = Trace(title=f"IMAGAgent closed loop: up to {settings.max_attempts} attempts per subtask")
    history = HistoryContext()
    the_plan = await roles.plan(planner, request, tools, image, Where(trace, "imagagent", should_stop=should_stop), history)
    history.add("plan", the_plan.summary())
    return ClosedLoopState(trace, the_plan, image, history)


async def closed_loop_execute(state: ClosedLoopState, tools: ToolRegistry, executor: Brain, settings: ClosedLoopSettings,
                              should_stop=None) -> tuple[list[ToolCall] | None, np.ndarray | None, str]:
    """The execute step of the next attempt, in process: IMAGAgent's orchestrator writes a chain (the planner's
    tool is a suggestion; it may choose another) from the last attempt's typed feedback, and it runs. Returns
    (chain, result, "") or, when the attempt failed, (the chain if one was written, None, why)."""
    sub, last = state.subtask(), (state.tries[-1] if state.tries else None)
    w = Where(state.trace, "imagagent", subtask=sub.index, attempt=len(state.tries), should_stop=should_stop)
    chain, why = await attempted(roles.execute(
        executor, sub, tools, state.current, w, state.history, last.chain if last else None,
        attempt_feedback(last.feedback, settings.accept_score) if last else None, any_tool=True))
    if chain is None:
        return None, None, why
    out, why = await attempted(asyncio.to_thread(roles.run_chain, tools, chain, state.current))
    return chain, out, why


async def closed_loop_judge(state: ClosedLoopState, chain: list[ToolCall], out: np.ndarray, experts: list[Brain],
                            aggregator: Brain, settings: ClosedLoopSettings, should_stop=None) -> Attempt:
    """The judge step: the expert panel (concurrently) and the aggregator on one attempt; it enters C."""
    sub = state.subtask()
    w = Where(state.trace, "imagagent", subtask=sub.index, attempt=len(state.tries), should_stop=should_stop)
    critiques = await asyncio.gather(*(roles.critique(b, name, sub, state.current, out, w)
                                       for name, b in expert_panel(experts, settings)))
    feedback = await roles.aggregate(aggregator, list(critiques), w)
    attempt = Attempt(subtask=sub.index, number=len(state.tries), chain=chain, feedback=feedback, image=out)
    state.tries.append(attempt)
    record_attempt(state.history, sub.index, attempt.number, chain, feedback, out)
    return attempt


def closed_loop_failed(state: ClosedLoopState, why: str, chain: list[ToolCall] | None = None) -> Attempt:
    """An attempt that did not run (an invalid chain, a tool that raised): scored 0, its error in the trace and,
    for the next attempt, in C and the executor's feedback; the loop goes on."""
    sub = state.subtask()
    attempt = Attempt(subtask=sub.index, number=len(state.tries), chain=list(chain or []),
                      feedback=Feedback(score=0.0, error=why), image=state.current)
    state.tries.append(attempt)
    state.trace.add("loop", "imagagent", f"subtask {sub.index} attempt {attempt.number} failed: {why}",
                    subtask=sub.index, attempt=attempt.number, outputs={"error": why})
    state.history.add("attempt", f"subtask {sub.index} attempt {attempt.number} failed: {why}", score=0.0)
    return attempt


def closed_loop_retry(state: ClosedLoopState, settings: ClosedLoopSettings) -> bool:
    """The decide step: another attempt when the last was judged, below tau_sr, and attempts are left (an
    attempt no expert could judge is not retried: the next could not be judged either)."""
    last = state.tries[-1]
    return last.feedback.judged and last.score < settings.accept_score and len(state.tries) < settings.max_attempts


def closed_loop_finish_subtask(state: ClosedLoopState, settings: ClosedLoopSettings) -> None:
    """The finish step of a subtask: keep the best attempt (accepted at tau_sr when judged) and move on."""
    sub, tries = state.subtask(), state.tries
    ran = [a for a in tries if not a.feedback.error]
    best = max(ran or tries, key=lambda a: a.score)
    ok = bool(ran) and best.feedback.judged and best.score >= settings.accept_score
    if not ran:
        state.failed.append(sub.index)
    elif not best.feedback.judged:
        state.unjudged.append(sub.index)
    verdict = ("failed: every attempt failed; the image stays as it was, as" if not ran
               else f"unjudged: no expert could tell whether '{sub.goal}' was done; keeping" if not best.feedback.judged
               else "accept" if ok else "keep the best of")
    state.trace.add("loop", "imagagent", f"subtask {sub.index}: {verdict} attempt "
                                         f"{best.number} (score {best.score:.1f})", subtask=sub.index,
                    scores={"score": best.score}, outputs={"chain": [c.as_dict() for c in best.chain]},
                    preview=best.image)
    record_choice(state.history, sub.index, best.number, len(tries), best.score, best.feedback.judged, ok)
    state.current = best.image
    state.attempts.extend(tries)
    state.tries = []
    state.accepted.append(ok)


async def closed_loop_subtask(state: ClosedLoopState, tools: ToolRegistry, executor: Brain, experts: list[Brain],
                              aggregator: Brain, settings: ClosedLoopSettings,
                              should_stop: Callable[[], None] | None = None,
                              on_step: Callable[[int, int, str], None] | None = None) -> ClosedLoopState:
    """The next subtask in process: up to tau_it attempts (execute, judge, decide), then keep the best."""
    sub, total = state.subtask(), len(state.plan.subtasks)
    while True:
        if on_step:
            on_step(sub.index, total, f"subtask {sub.index + 1}/{total}, attempt {len(state.tries) + 1}")
        chain, out, why = await closed_loop_execute(state, tools, executor, settings, should_stop)
        if why:
            closed_loop_failed(state, why, chain)
        else:
            await closed_loop_judge(state, chain, out, experts, aggregator, settings, should_stop)
        if not closed_loop_retry(state, settings):
            break
    closed_loop_finish_subtask(state, settings)
    return state


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


async def closed_loop_subtask_or_keep(state: ClosedLoopState, tools: ToolRegistry, executor: Brain, experts: list[Brain],
                                      aggregator: Brain, settings: ClosedLoopSettings,
                                      should_stop: Callable[[], None] | None = None, on_step=None) -> ClosedLoopState:
    """A subtask; when a brain fails and the settings say so, the loop ends keeping the subtasks already done
    (the image as it was before this one) with the error in the trace."""
    index = len(state.accepted)
    done = await or_keep_best(state, settings.keep_best_on_brain_error,
                              closed_loop_subtask(state, tools, executor, experts, aggregator, settings, should_stop,
                                                  on_step), f"subtask {index}")
    if done is None:
        state.tries = []  # the failed subtask's attempts are not kept
    return state


def closed_loop_summary(plan_: Plan, accepted: list[bool], unjudged: list[int], attempts: int, tool_calls: int,
                        started: float, mode: str, failed: list[int] | None = None) -> dict[str, Any]:
    """The closed loop trace's summary, the same keys whichever runner ran the subtasks."""
    return {"subtasks": len(plan_.subtasks), "accepted": accepted, "unjudged": unjudged, "failed": failed or [],
            "attempts": attempts,
            "tool_calls": tool_calls, "unsupported": plan_.unsupported, "plan": plan_.summary(), "mode": mode,
            "wall_s": round(time.perf_counter() - started, 3)}


def closed_loop_result(state: ClosedLoopState, mode: str = "in-process") -> ClosedLoopResult:
    if state.plan.subtasks and len(state.failed) == len(state.accepted) == len(state.plan.subtasks):
        last = next(a.feedback.error for a in reversed(state.attempts) if a.feedback and a.feedback.error)
        raise LoopFailed(f"the closed loop edited nothing: every attempt at every subtask failed. The last failure: "
                         f"{last}. Fix what it names (the endpoint, the model, the tool or its model file) and run "
                         "again.")
    calls = sum(len(a.chain) for a in state.attempts)
    state.trace.summary = closed_loop_summary(state.plan, state.accepted, state.unjudged, len(state.attempts), calls,
                                              state.started, mode, state.failed)
    if state.error:
        state.trace.summary["error"] = state.error
    return ClosedLoopResult(state.current, state.plan, state.attempts, state.accepted, calls, state.history, state.trace,
                            state.unjudged, state.failed)


async def run_closed_loop(image: np.ndarray, request: EditRequest, tools: ToolRegistry, planner: Brain, executor: Brain,
                          experts: list[Brain], aggregator: Brain, settings: ClosedLoopSettings | None = None,
                          should_stop: Callable[[], None] | None = None,
                          on_step: Callable[[int, int, str], None] | None = None) -> ClosedLoopResult:
    """Plan once; per subtask up to tau_it attempts judged by the expert panel and the aggregator."""
    settings = settings or ClosedLoopSettings()
    try:
        expert_panel(experts, settings)
        state = await closed_loop_start(image, request, tools, planner, settings, should_stop)
        while not state.done():
            await closed_loop_subtask_or_keep(state, tools, executor, experts, aggregator, settings, should_stop, on_step)
        return closed_loop_result(state)
    finally:
        await close_brains(planner, executor, *experts, aggregator)
