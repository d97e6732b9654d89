"""IMAGAgent's nodes: the Closed Loop, and the Step it makes when its toolbox has graph tools.

The loop's flow is ``agents/imagagent.py``'s; these nodes only decide where an attempt's execute step runs.
Without graph tools each subtask runs in process, one clone of the Closed Loop per subtask (ComfyUI node
expansion). With graph tools, which run as expanded ComfyUI nodes, each attempt's execute step is an Executor
node followed by a Step node that takes the rest of the attempt (judge, decide) and expands the next attempt,
or finishes. The typed loop state travels through ``resume``.
"""
from __future__ import annotations

from dataclasses import dataclass

from comfy_api.latest import io

from ..agents import imagagent
from ..agents.imagagent import ClosedLoopSettings, ClosedLoopState, IMAGAgentCast
from ..agents.loop import close_cast
from ..agents.records import EditRequest, Feedback, Handoff, Plan
from ..tools.spec import ToolRegistry
from . import host
from .common import (RESUME_TIP, Rerunnable, continue_as_clone, executed_of, keep_best_input, node_id, one_image,
                     present, request_of, rerun_input, role_brain_input, stream, tools_or_classic,
                     uses_graph_tools)
from .convert import arrays_to_image_batch
from .types import BRAIN, CATEGORY, FEEDBACK, PLAN, RESUME, TOOLBOX, TRACE, internal_node

GRAPH_MODE = "executor nodes"


def outputs(result: imagagent.ClosedLoopResult, request: EditRequest) -> io.NodeOutput:
    """The loop's outputs, the same whichever runner ran the attempts."""
    images = [a.image for a in result.attempts if a.image is not None] or [result.image]
    last = result.attempts[-1].feedback if result.attempts else Feedback(score=0.0, negative="nothing to do")
    handoff = Handoff(request, result.plan, [a.chain for a in result.attempts], result.image, last)
    return io.NodeOutput(arrays_to_image_batch([result.image]), arrays_to_image_batch(images), result.trace, handoff,
                         ui={"text": [result.text()]})


def _expert_input(name: str, expert: str) -> io.Input:
    """An expert's Brain input, its tooltip saying what an unconnected one does (the same input as the other
    roles', only the text differs)."""
    return BRAIN.Input(name, optional=True, tooltip=(
        f"Brain of the {expert} expert. Unconnected: the planner's brain (else the rule brain), so an unconnected "
        "panel is one model asked three times; the paper's panel is three different vision models. Connect a Brain "
        "node here, and another to each other expert input, to give each expert its own model."))


class ClosedLoop(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = ClosedLoopSettings()
        return io.Schema(
            node_id="EditAgentsClosedLoop", display_name="Closed Loop (IMAGAgent)", category=CATEGORY,
            description="Plan, execute, reflect: a constraint-aware plan; per subtask up to tau_it attempts, each judged "
                        "by a panel of three experts on the paper's shared rubric, each with its emphasis (intent, quality, "
                        "fidelity); the score S is their mean and an aggregator merges their text; accepted at tau_sr "
                        "unless the intent expert judged the subtask not carried out, otherwise the best attempt is kept; "
                        "an attempt that would repeat an earlier chain ends the subtask; a subtask whose intent no "
                        "expert could judge is kept but reported as not judged. History feeds every step. An expert "
                        "input left unconnected uses the planner's brain, so by default one model is asked three "
                        "times; the paper's panel is three different models (its ablation puts the panel ahead of a "
                        "single expert): connect a Brain node to each expert input to give each its own model.",
            inputs=[
                io.Image.Input("image", tooltip="The photo to edit."),
                io.String.Input("instruction", default="make it warmer and sharper", multiline=True, tooltip="The edit request."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the executor may use (default: classic tools)."),
                BRAIN.Input("planner_brain", optional=True, tooltip="Brain of the planner (default: rule brain)."),
                role_brain_input("executor_brain", "executor"),
                _expert_input("expert_1_brain", "intent"),
                _expert_input("expert_2_brain", "quality"),
                _expert_input("expert_3_brain", "fidelity"),
                role_brain_input("aggregator_brain", "aggregator"),
                io.Int.Input("max_attempts", default=d.max_attempts, min=1, max=10, tooltip="tau_it: attempts per subtask."),
                io.Float.Input("accept_score", default=d.accept_score, min=0.0, max=10.0, step=0.5,
                               tooltip="tau_sr: an attempt scoring at least this is accepted."),
                rerun_input(),
                RESUME.Input("resume", optional=True, tooltip=RESUME_TIP),
                keep_best_input(),
            ],
            enable_expand=True,  # each subtask is a clone of this node, expanded until the plan is done
            outputs=[io.Image.Output(display_name="image", tooltip="The result."),
                     io.Image.Output(display_name="attempts", tooltip="Every attempt's image, as a batch."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node."),
                     FEEDBACK.Output(display_name="feedback", tooltip="The plan and the last subtask's merged feedback.")],
        )

    @classmethod
    async def execute(cls, image, instruction, max_attempts, accept_score, rerun_every_time, toolbox=None,
                      planner_brain=None, executor_brain=None, expert_1_brain=None, expert_2_brain=None,
                      expert_3_brain=None, aggregator_brain=None, resume=None,
                      keep_best_on_brain_error=False) -> io.NodeOutput:
        graph = host.graph_builder()  # before the first await
        inputs = dict(image=image, instruction=instruction, max_attempts=max_attempts, accept_score=accept_score,
                      rerun_every_time=rerun_every_time, toolbox=toolbox, planner_brain=planner_brain,
                      executor_brain=executor_brain, expert_1_brain=expert_1_brain, expert_2_brain=expert_2_brain,
                      expert_3_brain=expert_3_brain, aggregator_brain=aggregator_brain,
                      keep_best_on_brain_error=keep_best_on_brain_error)
        img, tools = one_image(image, "Closed Loop"), tools_or_classic(toolbox)
        request = request_of("Closed Loop", instruction)
        settings = ClosedLoopSettings(max_attempts=max_attempts, accept_score=accept_score,
                                      keep_best_on_brain_error=bool(keep_best_on_brain_error))
        cast = IMAGAgentCast.of(planner_brain, executor_brain, [expert_1_brain, expert_2_brain, expert_3_brain],
                                aggregator_brain)
        stop, bar = host.stop_check(), host.progress_bar(100)
        try:
            state = resume["state"] if resume else await imagagent.start(img, request, tools, cast, settings, stop)
            stream(state.trace, node_id(), replay=resume is None)  # the plan step came before the stream was attached
            if resume is None and uses_graph_tools(tools):  # graph tools run as nodes: so do the execute steps
                return start_with_executor_nodes(graph, ClosedLoopRun(request, tools, toolbox, cast, settings), state)
            if not state.done():
                total = len(state.plan.subtasks)
                await imagagent.subtask_in_process(
                    state, tools, cast, settings, stop,
                    on_step=lambda sub, tot, text: bar.update_absolute(int(100 * sub / max(tot, 1)), 100))
                bar.update_absolute(int(100 * len(state.accepted) / max(total, 1)), 100)
        finally:
            await close_cast(cast)
        if not state.done():
            return continue_as_clone(graph, "EditAgentsClosedLoop", f"subtask{len(state.accepted)}", inputs,
                                     {"state": state})
        return outputs(imagagent.result(state), request)


# -- the execute step as Executor nodes (toolboxes with graph tools) -----------------------------------

@dataclass
class ClosedLoopRun:
    """What every attempt of one Closed Loop run shares: its inputs and the cast, worked out once by the node."""

    request: EditRequest
    tools: ToolRegistry
    toolbox: object
    cast: IMAGAgentCast
    settings: ClosedLoopSettings


def expand_attempt(graph, run: ClosedLoopRun, state: ClosedLoopState) -> io.NodeOutput:
    """The next attempt's execute step as an Executor node, then a Step node that judges and decides."""
    sub, last = state.subtask(), (state.tries[-1] if state.tries else None)
    tag = f"s{sub.index}.a{len(state.tries)}"
    plan = Handoff(run.request, Plan([sub]), round=len(state.tries), agent=imagagent.AGENT, history=state.history,
                   orchestrate=True, in_loop=True, keep_going=run.settings.keep_best_on_brain_error)
    previous = (Handoff(run.request, Plan([sub]), [last.chain], last.image, last.feedback, imagagent.AGENT,
                        last.number) if last is not None else None)
    executor = graph.node("EditAgentsExecutor", id=f"{tag}.execute", **present(
        image=arrays_to_image_batch([state.current]), plan=plan, brain=run.cast.executor, toolbox=run.toolbox,
        feedback=previous, trace=state.trace, rerun_every_time=True))
    step = graph.node("EditAgentsClosedLoopStep", id=f"{tag}.step", executed=executor.out(1), trace=executor.out(2),
                      resume={"run": run, "state": state})
    return io.NodeOutput(step.out(0), step.out(1), step.out(2), step.out(3), expand=graph.finalize())


def run_step(graph, run: ClosedLoopRun, state: ClosedLoopState, step: imagagent.Step) -> io.NodeOutput:
    """The step ``agents/imagagent.py``'s state machine left to the runner: an execute step becomes an Executor
    node and a Step node; the finish, the outputs."""
    if step.kind == "execute":
        return expand_attempt(graph, run, state)
    return outputs(imagagent.result(state, mode=GRAPH_MODE), run.request)


def start_with_executor_nodes(graph, run: ClosedLoopRun, state: ClosedLoopState) -> io.NodeOutput:
    """The step after the plan, as nodes."""
    return run_step(graph, run, state, imagagent.next_step(state, imagagent.PLANNED))


class ClosedLoopStep(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsClosedLoopStep", **internal_node(), display_name="Closed Loop Step (internal)", category=CATEGORY + "/internal",
            description="Made by the Closed Loop when its toolbox has graph tools: judges the attempt an Executor "
                        "node ran with the expert panel, then retries, moves on, or finishes. Not meant to be placed "
                        "by hand.",
            inputs=[PLAN.Input("executed", tooltip="The attempt's executed plan."),
                    TRACE.Input("trace", tooltip="The trace so far."),
                    RESUME.Input("resume", tooltip="Internal: set by the Closed Loop's expansion.")],
            outputs=[io.Image.Output(display_name="image", tooltip="The image after the subtasks done so far."),
                     io.Image.Output(display_name="attempts", tooltip="Every attempt's image, in order."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node."), FEEDBACK.Output(display_name="feedback", tooltip="The last subtask's aggregated feedback.")],
            enable_expand=True,
        )

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return float("nan")

    @classmethod
    async def execute(cls, executed, trace, resume) -> io.NodeOutput:
        graph = host.graph_builder()  # before the first await
        run, state = resume["run"], resume["state"]
        state.trace = stream(trace, node_id(), replay=False)
        try:
            step = await imagagent.advance(state, imagagent.Step("judge", executed_of(executed)), run.tools, run.cast,
                                           run.settings, host.stop_check())
        finally:
            await close_cast(run.cast)
        return run_step(graph, run, state, step)


NODES = [ClosedLoop, ClosedLoopStep]
