"""CCA (Collaborative Competitive Agents), in pure Python: two generator agents edit the photo every round, a
discriminator asks and answers the request's questions on both results, a quality competitor keeps the best
and may stop early.

A round is three steps: ``plan_round`` (in round 0 the caption and the questions beside both planners),
the execute step (wherever the runner puts it: ``execute_in_process`` or an Executor node per generator),
and ``after_round`` (judge, decide, stop or go on), which takes what the execute step produced. ``next_step``
says which step follows from the state and the last step's outcome; ``advance`` takes the steps, leaving an
execute step to a runner that runs it elsewhere, so both runners drive one machine. The roles' own work is in
``roles/``; what the loops share is in ``loop.py``.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

import numpy as np

from ..tools.spec import ToolRegistry
from . import roles
from .brain import Brain
from .loop import Executed, LoopFailed, attempted, close_cast, execute_or_fail, or_keep_best, raise_brain_error
from .records import Candidate, EditRequest, Feedback, HistoryContext, Plan, Question, ToolCall
from .roles.asking import Where
from .rule_brain import RuleBrain
from .rule_default import offline_brain
from .trace import Trace

AGENT = "cca"
BOLDER = 1.6  # the second generator's rule brain, when it gets the default: bolder, so the two compete
# generator 2's model brains, when it gets the default: the first's sampling made hotter (see ``hotter``). Chosen,
# not measured: 0.5 is a clear step; 0.7 is where chat models vary their answers (a greedy 0 becomes it); above
# 1.2 a small local model's JSON answers break more often, costing re-asks
HOTTER_BY, HOT_FLOOR, HOT_CAP = 0.5, 0.7, 1.2
SECOND_SEED = 2  # generator 2's seed when generator 1's brain sends none: its own, fixed, so a rerun samples alike


def second_temperature(first: float) -> float:
    """Generator 2's temperature from generator 1's: 0.5 hotter, at least 0.7, at most 1.2, and never cooler than
    the first (a first already above 1.2 is kept)."""
    return round(max(first, min(max(first + HOTTER_BY, HOT_FLOOR), HOT_CAP)), 3)


def hotter(brain: Brain) -> Brain:
    """Generator 2's variant of a model brain: the same endpoint and model, sampling at ``second_temperature`` of
    the first's with the first's seed + 1 (``SECOND_SEED`` when the first has none). A brain that cannot be
    resampled (the rule brain, a brain of the user's own without ``resampled``) is returned as it is.

    Why: the paper's two generators run the same models and differ only by chance, in their plans and results; at
    the Brain's default temperature (0.2 for endpoints, 0 for local models) and one seed, two generators sharing
    one model answered alike, so the competition had nothing to choose from."""
    resample, config = getattr(brain, "resampled", None), getattr(brain, "config", None)
    if resample is None or config is None:
        return brain
    seed = getattr(config, "seed", None)
    return resample(second_temperature(float(getattr(config, "temperature", 0.0) or 0.0)),
                    SECOND_SEED if seed is None else seed + 1)


def _sampling(brain: Brain) -> str:
    config = getattr(brain, "config", None)
    seed = getattr(config, "seed", None)
    return f"temperature {getattr(config, 'temperature', 0.0):g}, seed {'none' if seed is None else seed}"


@dataclass
class Generator:
    """One CCA generator agent: a planner and a tool executor, each with its own brain."""

    name: str
    planner: Brain
    executor: Brain


@dataclass
class CCACast:
    """Who plays which role in a CCA run: the generators, the discriminator and the quality competitor."""

    generators: list[Generator]
    discriminator: Brain
    competitor: Brain
    notes: list[str] = field(default_factory=list)  # how the defaults were made, for the trace

    def __post_init__(self):
        if len(self.generators) < 1:
            raise ValueError("CCA needs at least one generator (the paper uses two)")

    @classmethod
    def of(cls, planner: Brain | None = None, executor: Brain | None = None, generator_2: Brain | None = None,
           discriminator: Brain | None = None, competitor: Brain | None = None) -> "CCACast":
        """Two generators from the roles a user connects, with the defaults: the planner is the rule brain; the
        executors are the planner; the discriminator is the planner and the competitor the discriminator.
        Generator 2 is ``generator_2`` (planner and executor) when one is given. Otherwise it is generator 1 made
        to differ, as the paper's two generators differ by sampling: its executor is a bolder rule brain
        (``BOLDER``) when generator 1's is the rule brain, else generator 1's executor sampled hotter with its own
        seed (``hotter``); its planner is generator 1's planner sampled hotter too, as the paper (§3.3) puts the
        generators' first differences in their plans, which vary by chance; or the same rule planner, which cannot
        sample."""
        planner = planner or offline_brain()
        executor = executor or planner
        discriminator = discriminator or planner
        notes = []
        if generator_2 is not None:
            planner_2 = executor_2 = generator_2
        else:
            planner_2 = hotter(planner)
            executor_2 = (executor.with_boldness(BOLDER) if isinstance(executor, RuleBrain)
                          else planner_2 if executor is planner else hotter(executor))
            pairs = ([("planner and executor", planner, planner_2)] if executor_2 is planner_2 else
                     [("planner", planner, planner_2), ("executor", executor, executor_2)])
            for role, first, second in pairs:
                if second is not first and not isinstance(second, RuleBrain):
                    notes.append(f"generator-2's {role} samples hotter than generator-1's so that the two differ: "
                                 f"{_sampling(second)} against {_sampling(first)}")
        return cls([Generator("generator-1", planner, executor), Generator("generator-2", planner_2, executor_2)],
                   discriminator, competitor or discriminator, notes)

    def brains(self) -> list[Brain]:
        return [b for g in self.generators for b in (g.planner, g.executor)] + [self.discriminator, self.competitor]


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
    bests: list[np.ndarray] = field(default_factory=list, repr=False)  # the best after each round

    def text(self) -> str:
        """One line on the run, the same whichever runner ran the rounds."""
        best = self.best
        return (f"{self.rounds} round(s), {self.tool_calls} tool calls, best: {best.agent} round {best.round}, score "
                f"{best.feedback.score:.1f}" + (" (stopped early)" if self.stopped_early else "")
                + (f"; not done: {'; '.join(best.plan.unsupported)}" if best.plan.unsupported else "")
                + (f"; stopped: {self.trace.summary['error']}" if "error" in self.trace.summary else "")
                + (f"; {self.trace.summary['not_judged']}" if "not_judged" in self.trace.summary else ""))


@dataclass
class CCAState:
    """Everything a CCA loop carries from one round to the next (so a round can run in a fresh node)."""

    trace: Trace
    history: HistoryContext = field(default_factory=HistoryContext)
    last: dict[str, Candidate] = field(default_factory=dict)
    best: Candidate | None = None
    every: list[Candidate] = field(default_factory=list)
    bests: list[np.ndarray] = field(default_factory=list, repr=False)  # the best after each round
    rounds_run: int = 0
    questions: list[Question] | None = None  # the discriminator's, written once for the request in round 0
    caption: str = ""  # written by a vision discriminator when the request came without one
    stopped: bool = False
    error: str = ""  # why the loop ended early when a brain failed (keep_best_on_brain_error)
    started: float = field(default_factory=time.perf_counter)

    def done(self, settings: CCASettings) -> bool:
        return self.stopped or bool(self.error) or self.rounds_run >= settings.rounds

    def has_result(self) -> bool:
        return self.best is not None

    def kept(self) -> str:
        return f"the best so far ({self.best.agent}, round {self.best.round})"


def start(cast: CCACast, settings: CCASettings) -> CCAState:
    state = CCAState(Trace(title=f"CCA: {len(cast.generators)} generators x up to {settings.rounds} rounds"))
    for note in cast.notes:
        state.trace.add("loop", AGENT, note)
    return state


@dataclass
class RoundPlans:
    """A CCA round after its plan step: what its execute step needs, in process or as Executor nodes."""

    round: int
    request: EditRequest  # with the caption the discriminator wrote, when it wrote one
    base: np.ndarray = field(repr=False)  # what this round edits: the original, or the best so far
    plans: dict[str, Plan] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # generators whose planner failed: why


def _rival(state: CCAState, cast: CCACast, gen: Generator) -> Candidate | None:
    others = [state.last[o.name] for o in cast.generators if o.name != gen.name and o.name in state.last]
    return max(others, key=lambda c: c.feedback.score if c.feedback else 0.0) if others else None


async def _plan_one(state: CCAState, work: RoundPlans, tools: ToolRegistry, cast: CCACast, gen: Generator,
                    should_stop, differ_from: tuple[str, Plan] | None = None) -> Plan:
    """CCA's planner step for one generator: reflect on its own result and learn from the rival's. With
    ``differ_from`` (a rival's name and its plan this round, which the first plan repeated), the planner is told
    that plan and asked for one that differs from it."""
    own, rival = state.last.get(gen.name), _rival(state, cast, gen)
    others = len(cast.generators) - 1
    identity = (f"You are {gen.name}, one of {len(cast.generators)} generator agents competing on this request: make "
                "your own plan; a rival's plan and feedback, when shown, are to learn from, not to copy.") if others else ""
    if differ_from is not None:
        name, same = differ_from
        identity += (f"\nYour first plan this round was the same as {name}'s plan this round: {same.summary()}. Two "
                     "generators running one plan compete on nothing: make a plan that differs from it (another tool "
                     "for a subtask, another order, or another split of the request) while still serving the "
                     "request; repeat a subtask only where no other tool can do it.")
    return await roles.plan(gen.planner, work.request, tools, work.base,
                            Where(state.trace, gen.name, round=work.round, should_stop=should_stop), state.history,
                            previous=own.plan if own else None, own_feedback=own.feedback if own else None,
                            rival_plan=rival.plan if rival else None, rival_feedback=rival.feedback if rival else None,
                            identity=identity)


async def caption(discriminator: Brain, request: EditRequest, image: np.ndarray, where: Where) -> str:
    """A caption of the original when the request has none and the discriminator can see (LLaVA's role in CCA)."""
    if request.caption.strip() or not roles.sees_images(discriminator):
        return ""
    return await roles.describe(discriminator, image, where)


async def _questions(state: CCAState, discriminator: Brain, work: RoundPlans, tools: ToolRegistry, image: np.ndarray,
                     where: Where) -> list[Question]:
    """The request's questions: written in round 0 (beside the planners), the same ones after."""
    if state.questions is not None:
        return state.questions
    questions, why = await attempted(roles.write_questions(discriminator, work.request, tools, image, where))
    if why:  # judged on quality alone, every round: the questions are written once
        state.trace.add("loop", AGENT, f"no questions: the discriminator could not write them ({why}); candidates "
                                       "are judged on their quality alone", round=work.round, outputs={"error": why})
        return []
    return questions


async def plan_round(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry, cast: CCACast,
                     settings: CCASettings, should_stop=None) -> RoundPlans:
    """A round's plan step: in round 0 the caption, then the request's questions beside every planner; then a
    plan identical to an earlier generator's is planned once more (``_differ``). A planner that fails fails its
    generator's candidate; a brain that must stop the run raises."""
    rnd = state.rounds_run
    judge = Where(state.trace, "discriminator", round=rnd, should_stop=should_stop)
    if state.questions is None:
        state.caption, why = await attempted(caption(cast.discriminator, request, image, judge))
        if why:  # a role's failure is noted, not the run's end: the request goes on without a caption
            state.caption = ""
            state.trace.add("loop", AGENT, f"no caption: the discriminator failed ({why})", round=rnd,
                            outputs={"error": why})
    if state.caption:
        request = replace(request, caption=state.caption)
    base = image if settings.restart_from_original or state.best is None else state.best.image
    work = RoundPlans(rnd, request, base)
    *plans, state.questions = await asyncio.gather(
        *(attempted(_plan_one(state, work, tools, cast, g, should_stop)) for g in cast.generators),
        _questions(state, cast.discriminator, work, tools, image, judge))
    work.plans = {g.name: p for g, (p, _) in zip(cast.generators, plans) if p is not None}
    work.failed = {g.name: why for g, (_, why) in zip(cast.generators, plans) if why}
    await _differ(state, work, tools, cast, should_stop)
    return work


def _subtasks(plan: Plan) -> list[tuple[str, str]]:
    return [(s.tool, " ".join(s.goal.lower().split())) for s in plan.subtasks]


async def _differ(state: CCAState, work: RoundPlans, tools: ToolRegistry, cast: CCACast, should_stop) -> None:
    """A plan identical to an earlier generator's plan of the same round (the same subtasks: tools and goals, in
    order; an empty plan is never compared) is noted in the trace and planned once more, the planner told the
    rival's plan to differ from. A second identical plan is kept, and the trace says so; so is the first when the
    re-plan fails (it failed only this re-plan) or when the planner is the rule brain, which answers one request
    with one plan."""
    rnd, trace = work.round, state.trace
    for i, gen in enumerate(cast.generators):
        plan = work.plans.get(gen.name)
        same = next((g.name for g in cast.generators[:i] if g.name in work.plans and plan is not None
                     and plan.subtasks and _subtasks(work.plans[g.name]) == _subtasks(plan)), None)
        if same is None:
            continue
        rival = work.plans[same]
        if isinstance(gen.planner, RuleBrain):
            trace.add("loop", AGENT, f"round {rnd}: {gen.name}'s plan is the same as {same}'s; not planned again: the "
                                     "rule planner answers one request with one plan", round=rnd, outputs={"same_as": same, "plan": plan.summary()})
            continue
        trace.add("loop", AGENT, f"round {rnd}: {gen.name}'s plan is the same as {same}'s ({plan.summary()}); "
                                 "planned once more, told to differ from it", round=rnd,
                  outputs={"same_as": same, "plan": plan.summary()})
        again, why = await attempted(_plan_one(state, work, tools, cast, gen, should_stop, (same, rival)))
        if why:
            trace.add("loop", AGENT, f"round {rnd}: {gen.name}'s second plan failed ({why}); its first is kept",
                      round=rnd, outputs={"error": why})
        elif _subtasks(again) == _subtasks(rival):
            work.plans[gen.name] = again
            trace.add("loop", AGENT, f"round {rnd}: {gen.name}'s second plan is the same as {same}'s again; kept: "
                                     "both generators run one plan this round", round=rnd,
                      outputs={"same_as": same, "plan": again.summary()})
        else:
            work.plans[gen.name] = again


async def _execute(state: CCAState, work: RoundPlans, tools: ToolRegistry, gen: Generator,
                   should_stop) -> tuple[list[list[ToolCall]], np.ndarray]:
    plan, own, image, chains = work.plans[gen.name], state.last.get(gen.name), work.base, []
    where = Where(state.trace, gen.name, round=work.round, should_stop=should_stop)
    for sub in plan.subtasks:
        previous, fb = (roles.earlier_attempt(own.plan, own.chains, own.feedback, sub) if own is not None
                        else (None, None))
        chain = await roles.execute(gen.executor, sub, tools, image, where.at(subtask=sub.index), state.history,
                                    previous, fb)
        image = await asyncio.to_thread(roles.run_chain, tools, chain, image)
        chains.append(chain)
    return chains, image


async def execute_in_process(state: CCAState, work: RoundPlans, tools: ToolRegistry, cast: CCACast,
                             should_stop=None) -> dict[str, Executed]:
    """The round's execute step in process, every generator that planned at once: each subtask's chain, fed the
    matching subtask's feedback and chain from its own last round (by goal, then tool; never by index)."""
    todo = [g for g in cast.generators if g.name in work.plans]
    done = await asyncio.gather(*(execute_or_fail(_execute(state, work, tools, g, should_stop)) for g in todo))
    return {g.name: e for g, e in zip(todo, done)}


def failed_candidate(state: CCAState, work: RoundPlans, agent: str, why: str,
                     chains: list[list[ToolCall]] | None = None) -> Candidate:
    """A generator that failed this round: scored 0, never picked, and told why next round."""
    state.trace.add("loop", AGENT, f"round {work.round}: {agent} failed: {why}", round=work.round,
                    outputs={"error": why})
    return Candidate(agent, work.round, work.plans.get(agent, Plan()), chains or [], work.base,
                     Feedback(score=0.0, error=why))


async def _judge(state: CCAState, image: np.ndarray, work: RoundPlans, tools: ToolRegistry,
                 candidates: list[Candidate], cast: CCACast, settings: CCASettings, should_stop) -> None:
    """The judge and decide steps: the discriminator answers the request's questions on every candidate, the
    report is compiled, and the competitor keeps the best (of this round and the memory) and may stop."""
    rnd, trace = work.round, state.trace
    judge = Where(trace, "discriminator", round=rnd, should_stop=should_stop)
    aesthetic = roles.aesthetic_rater(tools)
    ran = [c for c in candidates if not (c.feedback and c.feedback.error)]  # failed candidates keep their feedback
    verdicts = await asyncio.gather(*(attempted(
        roles.discriminate(cast.discriminator, work.request, c.plan, image, c.image, judge, state.questions, aesthetic))
        for c in ran))
    for c, (fb, why) in zip(ran, verdicts):
        if why:  # the discriminator could not judge this candidate: it stays in the running, unjudged, at 0
            fb = Feedback(score=0.0, judged=False, negative=f"not judged: {why}")
            trace.add("loop", AGENT, f"round {rnd}: {c.agent} not judged: {why}", round=rnd, outputs={"error": why})
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
        trace.add("loop", AGENT, f"round {rnd}: every generator failed; nothing to pick yet", round=rnd)
        return
    picked, why = await attempted(roles.compete(cast.competitor, pool, settings.min_score,
                                                Where(trace, "competitor", round=rnd, should_stop=should_stop)))
    if why:  # the competitor failed: the highest judged score is kept, and the loop does not stop on it
        pick = max(range(len(pool)), key=lambda i: (pool[i].feedback.judged, pool[i].feedback.score))
        stop, reason = False, f"the competitor failed ({why}); kept the highest judged score"
        trace.add("loop", AGENT, f"round {rnd}: {reason}", round=rnd, outputs={"error": why})
    else:
        pick, stop, reason = picked
    state.best = best = pool[pick]
    state.rounds_run = rnd + 1
    trace.add("loop", AGENT, f"round {rnd}: best is {best.agent} (round {best.round}); {reason}", round=rnd,
              scores={"best": best.feedback.score if best.feedback else 0.0},
              outputs={"tool_calls_so_far": sum(c.tool_calls() for c in state.every)}, preview=best.image)
    if stop and settings.early_stop:
        state.stopped = True
        trace.add("loop", AGENT, f"stop early after round {rnd}: the best result satisfies the request", round=rnd)


async def after_round(state: CCAState, image: np.ndarray, work: RoundPlans, tools: ToolRegistry, cast: CCACast,
                      settings: CCASettings, executed: dict[str, Executed], should_stop=None) -> bool:
    """The rest of a round, from what its execute step produced: a generator whose planner or execute step
    failed is a failed candidate; a brain that failed stops the loop (or keeps the best); the rest are judged
    and the competitor decides. Returns whether the loop is done."""
    what = f"round {work.round}"
    errors = [e.error for e in executed.values() if e.error is not None]
    if errors:
        await or_keep_best(state, settings.keep_best_on_brain_error, raise_brain_error(errors[0]), what, AGENT)
        return True
    candidates = []
    for g in cast.generators:
        e = executed.get(g.name)
        if e is not None and not e.failed:
            candidates.append(Candidate(g.name, work.round, work.plans[g.name], e.chains, e.image))
        else:
            candidates.append(failed_candidate(state, work, g.name, e.failed if e is not None else work.failed[g.name],
                                               e.chains if e is not None else None))
    await or_keep_best(state, settings.keep_best_on_brain_error,
                       _judge(state, image, work, tools, candidates, cast, settings, should_stop), what, AGENT)
    if state.best is not None and state.rounds_run > len(state.bests):
        state.bests.append(state.best.image)
    return state.done(settings)


async def plan_or_keep_best(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                            cast: CCACast, settings: CCASettings, should_stop=None) -> RoundPlans | None:
    """The plan step; None when a brain failed in it and the loop keeps its best (then it is done)."""
    return await or_keep_best(state, settings.keep_best_on_brain_error,
                               plan_round(state, image, request, tools, cast, settings, should_stop),
                               f"round {state.rounds_run}", AGENT)


# -- the loop as a state machine: the next step from the state and the last step's outcome ---------------------

StepKind = Literal["plan", "execute", "judge", "finish"]


@dataclass(frozen=True)
class Step:
    """What a CCA runner does next: plan a round, execute its plans (``work``), judge what was executed
    (``executed``), or finish (``result``)."""

    kind: StepKind
    work: RoundPlans | None = None
    executed: dict[str, Executed] = field(default_factory=dict)


FIRST = Step("plan")


def next_step(state: CCAState, settings: CCASettings, last: Step, outcome: Any) -> Step:
    """The step after ``last``, from its outcome: a plan step's ``RoundPlans`` (None: a brain failed and the loop
    keeps its best), an execute step's ``Executed`` per generator, a judge step's "the loop is done". A round
    whose every planner failed has nothing to execute: it is judged at once (every candidate failed)."""
    if last.kind == "plan":
        if outcome is None:
            return Step("finish")
        return Step("execute", outcome) if outcome.plans else Step("judge", outcome)
    if last.kind == "execute":
        return Step("judge", last.work, outcome)
    if last.kind == "judge":
        return Step("finish") if outcome or state.done(settings) else FIRST
    raise ValueError(f"no step follows {last.kind!r}")


async def advance(state: CCAState, step: Step, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                  cast: CCACast, settings: CCASettings, should_stop=None, *, in_process: bool = False,
                  one_round: bool = False) -> Step:
    """Take the steps from ``step`` and return the first the runner must take itself: the finish; an execute step
    unless ``in_process`` (then it runs here: ``execute_in_process``); with ``one_round``, whatever follows a
    round's judge step (so a runner can report or hand over between rounds)."""
    while step.kind != "finish":
        if step.kind == "plan":
            outcome = await plan_or_keep_best(state, image, request, tools, cast, settings, should_stop)
        elif step.kind == "execute":
            if not in_process:
                return step
            outcome = await execute_in_process(state, step.work, tools, cast, should_stop)
        else:
            outcome = await after_round(state, image, step.work, tools, cast, settings, step.executed, should_stop)
        last, step = step, next_step(state, settings, step, outcome)
        if one_round and last.kind == "judge":
            break
    return step


async def round_in_process(state: CCAState, image: np.ndarray, request: EditRequest, tools: ToolRegistry,
                           cast: CCACast, settings: CCASettings, should_stop=None) -> bool:
    """One whole round in process. Returns whether the loop is done."""
    step = await advance(state, FIRST, image, request, tools, cast, settings, should_stop, in_process=True,
                         one_round=True)
    return step.kind == "finish"


def summary(rounds: int, tool_calls: int, stopped_early: bool, best: Candidate | Any, started: float,
            mode: str) -> dict[str, Any]:
    """The CCA trace's summary, the same keys whichever runner ran the rounds."""
    return {"rounds": rounds, "tool_calls": tool_calls, "stopped_early": stopped_early,
            "best": {"agent": best.agent, "round": best.round, "score": best.feedback.score if best.feedback else None,
                     "plan": best.plan.summary()},
            "unsupported": best.plan.unsupported, "mode": mode, "wall_s": round(time.perf_counter() - started, 3)}


def result(state: CCAState, mode: str = "in-process") -> CCAResult:
    best = state.best
    if best is None:
        last = next((c.feedback.error for c in reversed(state.every) if c.feedback and c.feedback.error), "no candidate")
        raise LoopFailed(f"CCA edited nothing: every generator failed in all {state.rounds_run} round(s). The last "
                         f"failure: {last}. Fix what it names (the endpoint, the model, the tool or its model file) "
                         "and run again.")
    calls = sum(c.tool_calls() for c in state.every)
    state.trace.summary = summary(state.rounds_run, calls, state.stopped, best, state.started, mode)
    if state.error:
        state.trace.summary["error"] = state.error
    if not best.feedback.judged:
        state.trace.summary["not_judged"] = ("no candidate could be judged: the result is the competitor's pick "
                                             "among unjudged candidates")
    return CCAResult(best.image, best, state.rounds_run, calls, state.every, state.stopped, state.trace,
                     list(state.bests))


async def run_cca(image: np.ndarray, request: EditRequest, tools: ToolRegistry, cast: CCACast,
                  settings: CCASettings | None = None, should_stop: Callable[[], None] | None = None,
                  on_round: Callable[[int, int, Candidate], None] | None = None) -> CCAResult:
    """CCA in process: up to M rounds, each generator planning and executing, the discriminator judging and the
    competitor keeping the best; the cast's brains are closed at the end."""
    settings = settings or CCASettings()
    try:
        state = start(cast, settings)
        while not state.done(settings):
            await round_in_process(state, image, request, tools, cast, settings, should_stop)
            if on_round:
                on_round(state.rounds_run - 1, settings.rounds, state.best)
        return result(state)
    finally:
        await close_cast(cast)
