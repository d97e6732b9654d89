"""CCA rounds whose execute step runs as Executor nodes, for toolboxes with graph tools.

Graph tools run as expanded ComfyUI nodes, which an in-process loop cannot do mid-round. So the CCA Loop
runs every step of a round as the in-process loop does (``agents/loops.py``: plan, judge, decide, finish),
and only the execute step is expanded: one Executor node per generator (which expands graph tools), then a
Round End node that judges, decides, and plans and expands the next round or finishes. The typed loop
state travels through ``resume``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from comfy_api.latest import io

from ..agents.brain import Brain, BrainError, close_brains
from ..agents.loops import (CCASettings, CCAState, Generator, RoundPlans, cca_judge, cca_plan, cca_result,
                            failed_candidate, or_keep_best)
from ..agents.records import Candidate, EditRequest, Handoff
from ..agents.trace import Trace
from ..tools.spec import ToolRegistry
from .apply_tools import RESUME
from .common import node_id, present, stream
from .convert import arrays_to_image_batch
from .types import CATEGORY, FEEDBACK, PLAN, TRACE, internal_node

RESUME_TIP = "Internal: set by the CCA Loop's expansion; leave unconnected."
MODE = "executor nodes"


@dataclass
class CCARun:
    """What every round of one CCA Loop run shares: its inputs and the brains, worked out once by the node."""

    image: np.ndarray = field(repr=False)
    request: EditRequest
    tools: ToolRegistry
    toolbox: object
    generators: list[Generator]
    discriminator: Brain
    competitor: Brain
    settings: CCASettings
    bests: list[np.ndarray] = field(default_factory=list, repr=False)

    def brains(self) -> list[Brain]:
        return [b for g in self.generators for b in (g.planner, g.executor)] + [self.discriminator, self.competitor]


def as_handoff(c: Candidate, request: EditRequest) -> Handoff:
    return Handoff(request, c.plan, c.chains, c.image, c.feedback, c.agent, c.round)


def expand_round(graph, run: CCARun, state: CCAState, work: RoundPlans) -> io.NodeOutput:
    """The execute step of a round as one Executor node per generator that planned, then a Round End."""
    base = arrays_to_image_batch([work.base])
    executed = []
    for g in run.generators:
        if g.name not in work.plans:
            continue  # its planner failed: the Round End adds it as a failed candidate
        own = state.last.get(g.name)
        plan = Handoff(work.request, work.plans[g.name], round=work.round, agent=g.name, history=state.history,
                       in_loop=True, keep_going=run.settings.keep_best_on_brain_error)
        executed.append(graph.node("EditAgentsExecutor", id=f"r{work.round}.{g.name}.execute", **present(
            image=base, plan=plan, brain=g.executor, toolbox=run.toolbox,
            feedback=as_handoff(own, work.request) if own is not None else None, trace=state.trace,
            rerun_every_time=True)))
    links = {}
    for i, node in enumerate(executed[:2], 1):
        links.update({f"executed_{i}": node.out(1), f"trace_{i}": node.out(2)})
    end = graph.node("EditAgentsCCARoundEnd", id=f"r{work.round}.end", **links,
                     resume={"run": run, "state": state, "work": work, "base": len(state.trace.steps)})
    return io.NodeOutput(end.out(0), end.out(1), end.out(2), end.out(3), expand=graph.finalize())


def merged(base_len: int, traces: list[Trace]) -> Trace:
    """One trace from the copies the parallel Executor nodes appended to."""
    out = traces[0]
    for t in traces[1:]:
        for step in t.steps[base_len:]:
            step.index = len(out.steps)
            out.steps.append(step)
    return out


async def _failed(error: str):
    raise BrainError(error)


class CCARoundEnd(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsCCARoundEnd", **internal_node(), display_name="CCA Round End (internal)", category=CATEGORY + "/internal",
            description="Made by the CCA Loop when its toolbox has graph tools: judges a round the Executor nodes "
                        "ran, keeps the best, and plans and expands the next round or finishes. Not meant to be "
                        "placed by hand.",
            inputs=[PLAN.Input("executed_1", optional=True, tooltip="Generator 1's executed plan."),
                    TRACE.Input("trace_1", optional=True, tooltip="The trace after generator 1's Executor."),
                    PLAN.Input("executed_2", optional=True, tooltip="Generator 2's executed plan."),
                    TRACE.Input("trace_2", optional=True, tooltip="The trace after generator 2's Executor."),
                    RESUME.Input("resume", tooltip=RESUME_TIP)],
            outputs=[io.Image.Output(display_name="image", tooltip="The best result so far."),
                     io.Image.Output(display_name="rounds", tooltip="Each round's best, in order."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node."), FEEDBACK.Output(display_name="feedback", tooltip="The best candidate's feedback.")],
            enable_expand=True,
        )

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return float("nan")

    @classmethod
    async def execute(cls, resume, executed_1=None, trace_1=None, executed_2=None, trace_2=None) -> io.NodeOutput:
        import comfy.model_management
        from comfy_execution.graph_utils import GraphBuilder

        graph = GraphBuilder()  # before the first await
        run, state, work = resume["run"], resume["state"], resume["work"]
        stop = comfy.model_management.throw_exception_if_processing_interrupted
        traces = [t for t in (trace_1, trace_2) if t is not None]
        if traces:
            state.trace = merged(resume["base"], traces)
        stream(state.trace, node_id(), replay=False)
        executed = {h.agent: h for h in (executed_1, executed_2) if h is not None}
        try:
            return await advance(graph, run, state, work, executed, stop)
        finally:
            await close_brains(*run.brains())


async def advance(graph, run: CCARun, state: CCAState, work: RoundPlans, executed: dict[str, Handoff],
                  stop) -> io.NodeOutput:
    """Judge the round just executed, then plan the next and expand its execute step, or finish. A round whose
    every planner failed has nothing to execute: it is judged at once."""
    while True:
        await judge_round(run, state, work, executed, stop)
        if state.done(run.settings):
            return finish(run, state)
        work = await or_keep_best(state, run.settings.keep_best_on_brain_error,
                                  cca_plan(state, run.image, run.request, run.tools, run.generators,
                                           run.discriminator, run.settings, stop), f"round {state.rounds_run}")
        if work is None:
            return finish(run, state)
        if work.plans:
            return expand_round(graph, run, state, work)
        executed = {}


async def judge_round(run: CCARun, state: CCAState, work: RoundPlans, executed: dict[str, Handoff], stop) -> None:
    """The round's judge and decide steps on what its Executor nodes did, candidates in generator order (as
    in process); a failed executor or planner is a failed candidate, a dead endpoint keeps the best or fails."""
    keep, what = run.settings.keep_best_on_brain_error, f"round {work.round}"
    errors = [h.error for h in executed.values() if h.error]
    if errors:
        await or_keep_best(state, keep, _failed(errors[0]), what)
        return
    cands = []
    for g in run.generators:
        h = executed.get(g.name)
        if h is not None and not h.failed:
            cands.append(Candidate(h.agent, work.round, h.plan, h.chains, h.image))
        else:
            cands.append(failed_candidate(state, work, g.name, h.failed if h is not None else work.failed[g.name],
                                          h.chains if h is not None else None))
    await or_keep_best(state, keep, cca_judge(state, run.image, work, run.tools, cands, run.discriminator,
                                              run.competitor, run.settings, stop), what)
    if state.best is not None and state.rounds_run > len(run.bests):
        run.bests.append(state.best.image)


def finish(run: CCARun, state: CCAState) -> io.NodeOutput:
    from .loop_nodes import cca_text

    result = cca_result(state, mode=MODE)
    return io.NodeOutput(arrays_to_image_batch([result.image]), arrays_to_image_batch(run.bests), result.trace,
                         as_handoff(result.best, run.request), ui={"text": [cca_text(result)]})


async def start(graph, run: CCARun, state: CCAState, stop) -> io.NodeOutput:
    """Round 0 from the CCA Loop node: plan, then expand the execute step (or, if every planner failed, judge)."""
    work = await cca_plan(state, run.image, run.request, run.tools, run.generators, run.discriminator, run.settings,
                          stop)
    return expand_round(graph, run, state, work) if work.plans else await advance(graph, run, state, work, {}, stop)


NODES = [CCARoundEnd]
