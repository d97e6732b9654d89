"""CCA's nodes: the CCA Loop, and the Round End it makes when its toolbox has graph tools.

The loop's flow is ``agents/cca.py``'s; these nodes only decide where a round's execute step runs. Without
graph tools each round runs in process, one clone of the CCA Loop per round (ComfyUI node expansion). With
graph tools, which run as expanded ComfyUI nodes, the execute step is one Executor node per generator and a
Round End node takes the rest of the round (judge, decide) and plans and expands the next, or finishes.
The typed loop state travels through ``resume``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from comfy_api.latest import io

from ..agents import cca
from ..agents.cca import CCACast, CCASettings, CCAState, RoundPlans
from ..agents.loop import close_cast
from ..agents.records import Candidate, EditRequest, Handoff
from ..agents.trace import Trace
from ..tools.spec import ToolRegistry
from . import host
from .common import (RESUME_TIP, Rerunnable, continue_as_clone, executed_of, keep_best_input, node_id, one_image,
                     present, request_of, rerun_input, role_brain_input, stream, tools_or_classic,
                     uses_graph_tools)
from .convert import arrays_to_image_batch
from .types import BRAIN, CATEGORY, FEEDBACK, PLAN, RESUME, TOOLBOX, TRACE, internal_node

GRAPH_MODE = "executor nodes"


def as_handoff(c: Candidate, request: EditRequest) -> Handoff:
    return Handoff(request, c.plan, c.chains, c.image, c.feedback, c.agent, c.round)


def outputs(result: cca.CCAResult, request: EditRequest) -> io.NodeOutput:
    """The loop's outputs, the same whichever runner ran the rounds."""
    return io.NodeOutput(arrays_to_image_batch([result.image]), arrays_to_image_batch(result.bests), result.trace,
                         as_handoff(result.best, request), ui={"text": [result.text()]})


class CCALoop(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = CCASettings()
        return io.Schema(
            node_id="EditAgentsCCALoop", display_name="CCA Loop", category=CATEGORY,
            description="Collaborative Competitive Agents: two generator agents (planner + executor each) edit the photo "
                        "every round; a discriminator asks and answers Yes/No questions on both results; a quality "
                        "competitor keeps the best and stops early when it satisfies the request. Each generator "
                        "reflects on its own feedback and on its rival's plan and feedback. The second generator "
                        "samples hotter than the first unless a brain is connected for it, and a plan the same as "
                        "its rival's in a round is planned once more, so that the two compete.",
            inputs=[
                io.Image.Input("image", tooltip="The photo to edit."),
                io.String.Input("instruction", default="make it brighter, add more contrast and crop to square", multiline=True,
                                tooltip="The edit request."),
                io.String.Input("caption", default="", tooltip="What the photo shows, if known (helps the discriminator)."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the generators may use (default: classic tools)."),
                BRAIN.Input("planner_brain", optional=True, tooltip="Brain of both generators' planners (default: rule brain)."),
                role_brain_input("executor_brain", "executors"),
                BRAIN.Input("generator_2_brain", optional=True, tooltip=(
                    "Brain of the second generator (planner and executor). Unconnected: the first generator's "
                    "brains sampled hotter with their own seed (temperature 0.5 higher, at least 0.7, at most 1.2; "
                    "seed + 1), so the two generators differ as the paper's do; with the rule brain, a bolder "
                    "rule executor.")),
                role_brain_input("discriminator_brain", "discriminator"),
                role_brain_input("competitor_brain", "quality competitor"),
                io.Int.Input("rounds", default=d.rounds, min=1, max=20, tooltip="M: the most rounds to run."),
                io.Boolean.Input("early_stop", default=d.early_stop, tooltip="Stop as soon as the best result satisfies the request."),
                io.Boolean.Input("restart_from_original", default=d.restart_from_original,
                                 tooltip="On: every round edits the original. Off: each round continues from the best so far."),
                io.Float.Input("min_score", default=d.min_score, min=0.0, max=10.0, step=0.5,
                               tooltip="The best result satisfies the request at this score with every check passed."),
                rerun_input(),
                RESUME.Input("resume", optional=True, tooltip=RESUME_TIP),
                keep_best_input(),
            ],
            enable_expand=True,  # each round is a clone of this node, expanded until the stop rule fires
            outputs=[io.Image.Output(display_name="image", tooltip="The best result."),
                     io.Image.Output(display_name="rounds", tooltip="The best result after each round, as a batch."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node."),
                     FEEDBACK.Output(display_name="feedback", tooltip="The best result's plan and feedback.")],
        )

    @classmethod
    async def execute(cls, image, instruction, caption, rounds, early_stop, restart_from_original, min_score,
                      rerun_every_time, toolbox=None, planner_brain=None, executor_brain=None, generator_2_brain=None,
                      discriminator_brain=None, competitor_brain=None, resume=None,
                      keep_best_on_brain_error=False) -> io.NodeOutput:
        graph = host.graph_builder()  # before the first await
        inputs = dict(image=image, instruction=instruction, caption=caption, rounds=rounds, early_stop=early_stop,
                      restart_from_original=restart_from_original, min_score=min_score, rerun_every_time=rerun_every_time,
                      toolbox=toolbox, planner_brain=planner_brain, executor_brain=executor_brain,
                      generator_2_brain=generator_2_brain, discriminator_brain=discriminator_brain,
                      competitor_brain=competitor_brain, keep_best_on_brain_error=keep_best_on_brain_error)
        img, tools = one_image(image, "CCA Loop"), tools_or_classic(toolbox)
        request = request_of("CCA Loop", instruction, caption)
        settings = CCASettings(rounds=rounds, early_stop=early_stop, restart_from_original=restart_from_original,
                               min_score=min_score, keep_best_on_brain_error=bool(keep_best_on_brain_error))
        cast = CCACast.of(planner_brain, executor_brain, generator_2_brain, discriminator_brain, competitor_brain)
        stop, bar = host.stop_check(), host.progress_bar(rounds)
        try:
            if resume is None and uses_graph_tools(tools):  # graph tools run as nodes: so do the execute steps
                state = cca.start(cast, settings)
                stream(state.trace, node_id())
                return await run_to_nodes(graph, CCARun(img, request, tools, toolbox, cast, settings), state,
                                          cca.FIRST, stop)
            state = resume["state"] if resume else cca.start(cast, settings)
            stream(state.trace, node_id(), replay=False)
            await cca.round_in_process(state, img, request, tools, cast, settings, stop)
        finally:
            await close_cast(cast)
        bar.update_absolute(state.rounds_run, rounds)
        if not state.done(settings):
            return continue_as_clone(graph, "EditAgentsCCALoop", f"round{state.rounds_run}", inputs, {"state": state})
        return outputs(cca.result(state), request)


# -- the execute step as Executor nodes (toolboxes with graph tools) -----------------------------------

@dataclass
class CCARun:
    """What every round of one CCA Loop run shares: its inputs and the cast, worked out once by the node."""

    image: np.ndarray = field(repr=False)
    request: EditRequest
    tools: ToolRegistry
    toolbox: object
    cast: CCACast
    settings: CCASettings


def expand_round(graph, run: CCARun, state: CCAState, step: cca.Step) -> io.NodeOutput:
    """The execute step of a round as one Executor node per generator that planned, then a Round End."""
    work: RoundPlans = step.work
    base = arrays_to_image_batch([work.base])
    executed = []
    for g in run.cast.generators:
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
                     resume={"run": run, "state": state, "step": step, "base": len(state.trace.steps)})
    return io.NodeOutput(end.out(0), end.out(1), end.out(2), end.out(3), expand=graph.finalize())


def merged(base_len: int, traces: list[Trace]) -> Trace:
    """One trace from the copies the parallel Executor nodes appended to."""
    out = traces[0]
    for t in traces[1:]:
        for step in t.steps[base_len:]:
            step.index = len(out.steps)
            out.steps.append(step)
    return out


async def run_to_nodes(graph, run: CCARun, state: CCAState, step: cca.Step, stop) -> io.NodeOutput:
    """The loop's steps from ``step`` (``agents/cca.py``'s state machine) until an execute step, which becomes
    Executor nodes and a Round End, or the finish."""
    step = await cca.advance(state, step, run.image, run.request, run.tools, run.cast, run.settings, stop)
    if step.kind == "execute":
        return expand_round(graph, run, state, step)
    return outputs(cca.result(state, mode=GRAPH_MODE), run.request)


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
                    RESUME.Input("resume", tooltip="Internal: set by the CCA Loop's expansion; leave unconnected.")],
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
        graph = host.graph_builder()  # before the first await
        run, state = resume["run"], resume["state"]
        traces = [t for t in (trace_1, trace_2) if t is not None]
        if traces:
            state.trace = merged(resume["base"], traces)
        stream(state.trace, node_id(), replay=False)
        executed = {h.agent: executed_of(h) for h in (executed_1, executed_2) if h is not None}
        try:
            step = cca.next_step(state, run.settings, resume["step"], executed)
            return await run_to_nodes(graph, run, state, step, host.stop_check())
        finally:
            await close_cast(run.cast)


NODES = [CCALoop, CCARoundEnd]
