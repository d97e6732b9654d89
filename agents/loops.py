"""The two instruction-driven loops, in pure Python: CCA rounds and IMAGAgent's closed loop.

Both are bounded (rounds, attempts), record every decision in one trace, run independent
brain calls concurrently (the two generators; the expert panel), and call ``should_stop``
between steps so a user can interrupt them.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..tools.spec import ToolRegistry
from . import roles
from .brain import Brain, close_brains
from .records import Attempt, Candidate, EditRequest, Feedback, HistoryContext, Plan, ToolCall
from .roles import Where
from .trace import Trace


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


async def _generate(gen: Generator, request: EditRequest, tools: ToolRegistry, base: np.ndarray, where: Where,
                    history: HistoryContext, own: Candidate | None, rival: Candidate | None) -> Candidate:
    plan = await roles.plan(gen.planner, request, tools, base, where, history,
                            previous=own.plan if own else None, own_feedback=own.feedback if own else None,
                            rival_plan=rival.plan if rival else None, rival_feedback=rival.feedback if rival else None)
    image, chains = base, []
    for sub in plan.subtasks:
        previous = None
        if own is not None:  # the same subtask last round: its parameters and its share of the report
            previous = next((c for s, c in zip(own.plan.subtasks, own.chains) if s.tool == sub.tool), None)
        fb = roles.subtask_feedback(own.feedback, sub.index) if own is not None and previous is not None else None
        chain = await roles.execute(gen.executor, sub, tools, image, where.at(subtask=sub.index), history, previous, fb)
        image = await asyncio.to_thread(roles.run_chain, tools, chain, image)
        chains.append(chain)
    return Candidate(agent=gen.name, round=where.round or 0, plan=plan, chains=chains, image=image)


async def run_cca(image: np.ndarray, request: EditRequest, tools: ToolRegistry, generators: list[Generator],
                  discriminator: Brain, competitor: Brain, settings: CCASettings | None = None,
                  should_stop: Callable[[], None] | None = None,
                  on_round: Callable[[int, int, Candidate], None] | None = None) -> CCAResult:
    try:
        return await _run_cca(image, request, tools, generators, discriminator, competitor, settings, should_stop, on_round)
    finally:
        await close_brains(*(b for g in generators for b in (g.planner, g.executor)), discriminator, competitor)


async def _run_cca(image, request, tools, generators, discriminator, competitor, settings, should_stop, on_round):
    settings = settings or CCASettings()
    if len(generators) < 1:
        raise ValueError("CCA needs at least one generator (the paper uses two)")
    trace = Trace(title=f"CCA: {len(generators)} generators x up to {settings.rounds} rounds")
    history = HistoryContext()
    start = time.perf_counter()
    last: dict[str, Candidate] = {}
    best: Candidate | None = None
    every: list[Candidate] = []
    stopped = False
    rounds_run = 0
    for rnd in range(settings.rounds):
        rounds_run = rnd + 1
        base = image if settings.restart_from_original or best is None else best.image

        def rival_of(g: Generator) -> Candidate | None:
            others = [last[o.name] for o in generators if o.name != g.name and o.name in last]
            return max(others, key=lambda c: c.feedback.score if c.feedback else 0.0) if others else None

        cands = await asyncio.gather(*(
            _generate(g, request, tools, base, Where(trace, g.name, round=rnd, should_stop=should_stop), history,
                      last.get(g.name), rival_of(g)) for g in generators))
        feedbacks = await asyncio.gather(*(
            roles.discriminate(discriminator, request, c.plan, image, c.image,
                               Where(trace, "discriminator", round=rnd, should_stop=should_stop)) for c in cands))
        for c, fb in zip(cands, feedbacks):
            c.feedback = fb
            last[c.agent] = c
            history.add("candidate", f"round {rnd} {c.agent}: {c.plan.summary()}", score=fb.score)
        every.extend(cands)
        pool = list(cands) + ([best] if best is not None else [])
        pick, stop, reason = await roles.compete(competitor, pool, settings.min_score,
                                                 Where(trace, "competitor", round=rnd, should_stop=should_stop))
        best = pool[pick]
        trace.add("loop", "cca", f"round {rnd}: best is {best.agent} (round {best.round}); {reason}", round=rnd,
                  scores={"best": best.feedback.score if best.feedback else 0.0},
                  outputs={"tool_calls_so_far": sum(c.tool_calls() for c in every)})
        if on_round:
            on_round(rnd, settings.rounds, best)
        if stop and settings.early_stop:
            stopped = True
            trace.add("loop", "cca", f"stop early after round {rnd}: the best result satisfies the request", round=rnd)
            break
    assert best is not None
    calls = sum(c.tool_calls() for c in every)
    trace.summary = {"rounds": rounds_run, "tool_calls": calls, "stopped_early": stopped,
                     "best": {"agent": best.agent, "round": best.round, "score": best.feedback.score if best.feedback else None,
                              "plan": best.plan.summary()},
                     "unsupported": best.plan.unsupported, "wall_s": round(time.perf_counter() - start, 3)}
    return CCAResult(best.image, best, rounds_run, calls, every, stopped, trace)


# -- IMAGAgent's closed loop --------------------------------------------------------------------

@dataclass(frozen=True)
class ClosedLoopSettings:
    max_attempts: int = 3  # tau_it
    accept_score: float = 7.0  # tau_sr
    experts: tuple[str, ...] = ("intent", "quality", "fidelity")

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


async def run_closed_loop(image: np.ndarray, request: EditRequest, tools: ToolRegistry, planner: Brain, executor: Brain,
                          experts: list[Brain], aggregator: Brain, settings: ClosedLoopSettings | None = None,
                          should_stop: Callable[[], None] | None = None,
                          on_step: Callable[[int, int, str], None] | None = None) -> ClosedLoopResult:
    """Plan once; per subtask up to tau_it attempts judged by the expert panel and the aggregator."""
    try:
        return await _run_closed_loop(image, request, tools, planner, executor, experts, aggregator, settings,
                                      should_stop, on_step)
    finally:
        await close_brains(planner, executor, *experts, aggregator)


async def _run_closed_loop(image, request, tools, planner, executor, experts, aggregator, settings, should_stop, on_step):
    settings = settings or ClosedLoopSettings()
    if len(experts) not in (1, len(settings.experts)):
        raise ValueError(f"give one brain for all experts or one per expert ({len(settings.experts)})")
    panel = list(zip(settings.experts, experts if len(experts) > 1 else experts * len(settings.experts)))
    trace = Trace(title=f"IMAGAgent closed loop: up to {settings.max_attempts} attempts per subtask")
    history = HistoryContext()
    start = time.perf_counter()
    where = Where(trace, "imagagent", should_stop=should_stop)
    the_plan = await roles.plan(planner, request, tools, image, where, history)
    history.add("plan", the_plan.summary())
    current, attempts, accepted = image, [], []
    for sub in the_plan.subtasks:
        tries: list[Attempt] = []
        previous: list[ToolCall] | None = None
        feedback: Feedback | None = None
        for n in range(settings.max_attempts):
            w = where.at(subtask=sub.index, attempt=n)
            if on_step:
                on_step(sub.index, len(the_plan.subtasks), f"subtask {sub.index + 1}/{len(the_plan.subtasks)}, attempt {n + 1}")
            fb_for_executor = None if feedback is None else {"score": feedback.score, "positive": feedback.positive,
                                                              "negative": feedback.negative}
            chain = await roles.execute(executor, sub, tools, current, w, history, previous, fb_for_executor)
            out = await asyncio.to_thread(roles.run_chain, tools, chain, current)
            critiques = await asyncio.gather(*(roles.critique(b, name, sub, current, out, w) for name, b in panel))
            feedback = await roles.aggregate(aggregator, list(critiques), w)
            attempt = Attempt(subtask=sub.index, number=n, chain=chain, feedback=feedback, image=out)
            tries.append(attempt)
            history.add("attempt", f"subtask {sub.index} attempt {n}: {', '.join(c.label() for c in chain)}; "
                                   f"negative: {feedback.negative or '-'}", score=feedback.score)
            previous = chain
            if feedback.score >= settings.accept_score:
                break
        best = max(tries, key=lambda a: a.score)
        ok = best.score >= settings.accept_score
        trace.add("loop", "imagagent", f"subtask {sub.index}: {'accept' if ok else 'keep the best of'} attempt "
                                       f"{best.number} (score {best.score:.1f})", subtask=sub.index,
                  scores={"score": best.score}, outputs={"chain": [c.as_dict() for c in best.chain]})
        current = best.image
        attempts.extend(tries)
        accepted.append(ok)
    calls = sum(len(a.chain) for a in attempts)
    trace.summary = {"subtasks": len(the_plan.subtasks), "accepted": accepted, "attempts": len(attempts),
                     "tool_calls": calls, "unsupported": the_plan.unsupported, "plan": the_plan.summary(),
                     "wall_s": round(time.perf_counter() - start, 3)}
    return ClosedLoopResult(current, the_plan, attempts, accepted, calls, history, trace)
