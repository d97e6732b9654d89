"""IMAGAgent's closed loop whose execute step runs as Executor nodes, for toolboxes with graph tools.

Every step but execution runs as in the in-process loop (``agents/loops.py``: plan, judge, decide, finish);
each attempt's execute step is an Executor node (which expands graph tools), followed by a Step node that
judges the attempt with the expert panel and the aggregator, and retries, moves on, or finishes. The typed
loop state travels through ``resume``.
"""
from __future__ import annotations

from dataclasses import dataclass

from comfy_api.latest import io

from ..agents.brain import Brain, BrainError, close_brains
from ..agents.loops import (ClosedLoopSettings, ClosedLoopState, closed_loop_failed, closed_loop_finish_subtask,
                            closed_loop_judge, closed_loop_result, closed_loop_retry, or_keep_best)
from ..agents.records import EditRequest, Handoff, Plan
from ..tools.spec import ToolRegistry
from .apply_tools import RESUME
from .common import node_id, present, stream
from .convert import arrays_to_image_batch
from .types import CATEGORY, FEEDBACK, PLAN, TRACE, internal_node

MODE = "executor nodes"


@dataclass
class ClosedLoopRun:
    """What every attempt of one Closed Loop run shares: its inputs and the brains, worked out once by the node."""

    request: EditRequest
    tools: ToolRegistry
    toolbox: object
    executor: Brain
    experts: list[Brain]
    aggregator: Brain
    settings: ClosedLoopSettings

    def brains(self) -> list[Brain]:
        return [self.executor, *self.experts, self.aggregator]


def expand_attempt(graph, run: ClosedLoopRun, state: ClosedLoopState) -> io.NodeOutput:
    """The next attempt's execute step as an Executor node, then a Step node that judges and decides."""
    sub, last = state.subtask(), (state.tries[-1] if state.tries else None)
    tag = f"s{sub.index}.a{len(state.tries)}"
    plan = Handoff(run.request, Plan([sub]), round=len(state.tries), agent="imagagent", history=state.history,
                   orchestrate=True, in_loop=True, keep_going=run.settings.keep_best_on_brain_error)
    previous = (Handoff(run.request, Plan([sub]), [last.chain], last.image, last.feedback, "imagagent", last.number)
                if last is not None else None)
    executor = graph.node("EditAgentsExecutor", id=f"{tag}.execute", **present(
        image=arrays_to_image_batch([state.current]), plan=plan, brain=run.executor, toolbox=run.toolbox,
        feedback=previous, trace=state.trace, rerun_every_time=True))
    step = graph.node("EditAgentsClosedLoopStep", id=f"{tag}.step", executed=executor.out(1), trace=executor.out(2),
                      resume={"run": run, "state": state})
    return io.NodeOutput(step.out(0), step.out(1), step.out(2), step.out(3), expand=graph.finalize())


async def _failed(error: str):
    raise BrainError(error)


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
        import comfy.model_management
        from comfy_execution.graph_utils import GraphBuilder

        from .loop_nodes import closed_loop_outputs

        graph = GraphBuilder()  # before the first await
        run, state = resume["run"], resume["state"]
        stop = comfy.model_management.throw_exception_if_processing_interrupted
        state.trace = stream(trace, node_id(), replay=False)
        keep, what = run.settings.keep_best_on_brain_error, f"subtask {len(state.accepted)}"
        try:
            if executed.error:  # the executor's brain failed and the loop keeps going: as in-process
                judged = await or_keep_best(state, keep, _failed(executed.error), what)
            elif executed.failed:  # an invalid chain or a tool that raised: one failed attempt, as in-process
                judged = closed_loop_failed(state, executed.failed, [c for chain in executed.chains for c in chain])
            else:
                chain = [c for chain in executed.chains for c in chain]
                judged = await or_keep_best(state, keep, closed_loop_judge(
                    state, chain, executed.image, run.experts, run.aggregator, run.settings, stop), what)
            if judged is None:
                state.tries = []  # as in-process: the failed subtask's attempts are not kept
            elif closed_loop_retry(state, run.settings):
                return expand_attempt(graph, run, state)
            else:
                closed_loop_finish_subtask(state, run.settings)
                if not state.done():
                    return expand_attempt(graph, run, state)
        finally:
            await close_brains(*run.brains())
        return closed_loop_outputs(closed_loop_result(state, mode=MODE), run.request)


def start(graph, run: ClosedLoopRun, state: ClosedLoopState) -> io.NodeOutput:
    if state.done():
        from .loop_nodes import closed_loop_outputs

        return closed_loop_outputs(closed_loop_result(state, mode=MODE), run.request)
    return expand_attempt(graph, run, state)


NODES = [ClosedLoopStep]
