"""Loop nodes: CCA (two generators, M rounds, early stop) and IMAGAgent's closed loop.

Each role takes its own BRAIN (as IMAGAgent mixes Qwen, GLM, Doubao and DeepSeek); a missing
brain falls back to the planner's, and a missing planner brain to the offline rule brain.
"""
from __future__ import annotations


from comfy_api.latest import io

from ..agents.brain import close_brains
from ..agents.loops import (CCASettings, ClosedLoopSettings, Generator, expert_panel, cca_result,
                            cca_round_or_keep_best, cca_start, closed_loop_result, closed_loop_start,
                            closed_loop_subtask_or_keep)
from ..agents.records import EditRequest, Feedback, Handoff
from ..agents.rule_brain import RuleBrain
from .common import Rerunnable, node_id, one_image, rerun_input, present, stream, tools_or_classic
from .apply_tools import RESUME
from .convert import arrays_to_image_batch
from .types import BRAIN, CATEGORY, FEEDBACK, TOOLBOX, TRACE

RESUME_TIP = "Internal: set when this node expands a clone of itself for the next round; leave unconnected."


def _continue(graph, node_id: str, tag: str, inputs: dict, resume: dict):
    """The next round or subtask as a clone of this node (ComfyUI node expansion)."""
    nxt = graph.node(node_id, id=tag, resume=resume, **present(**inputs))
    return io.NodeOutput(nxt.out(0), nxt.out(1), nxt.out(2), nxt.out(3), expand=graph.finalize())


def uses_graph_tools(tools) -> bool:
    """Whether the chosen toolbox offers a graph tool (then the loop runs as role nodes, which can expand it);
    graph tools wired to the Toolbox but left out of its selection do not count."""
    return any(tools.get(name).category == "graph" for name in tools.names())


def _brain(name: str, what: str) -> io.Input:
    return BRAIN.Input(name, optional=True, tooltip=f"Brain of the {what} (default: the planner brain, else the rule brain).")


def _request(node: str, instruction: str, caption: str) -> EditRequest:
    try:
        return EditRequest(instruction=instruction, caption=caption)
    except ValueError as err:
        raise ValueError(f"{node}: {err}") from None


KEEP_BEST_TIP = ("When a brain fails mid-loop (the endpoint died, kept timing out, ...): off (default) fails the run "
                 "with the error; on ends the loop with the best result so far and the error in the trace "
                 "(the run still fails if nothing was done yet).")


def keep_best_input() -> io.Input:
    return io.Boolean.Input("keep_best_on_brain_error", default=False, optional=True, tooltip=KEEP_BEST_TIP)


def _stop_and_progress(total: int):
    import comfy.model_management
    import comfy.utils

    bar = comfy.utils.ProgressBar(total)
    return comfy.model_management.throw_exception_if_processing_interrupted, bar


class CCALoop(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = CCASettings()
        return io.Schema(
            node_id="EditAgentsCCALoop", display_name="CCA Loop", category=CATEGORY,
            description="Collaborative Competitive Agents: two generator agents (planner + executor each) edit the photo "
                        "every round; a discriminator asks and answers Yes/No questions on both results; a quality "
                        "competitor keeps the best and stops early when it satisfies the request. Each generator "
                        "reflects on its own feedback and on its rival's plan and feedback.",
            inputs=[
                io.Image.Input("image", tooltip="The photo to edit."),
                io.String.Input("instruction", default="make it brighter, add more contrast and crop to square", multiline=True,
                                tooltip="The edit request."),
                io.String.Input("caption", default="", tooltip="What the photo shows, if known (helps the discriminator)."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the generators may use (default: classic tools)."),
                BRAIN.Input("planner_brain", optional=True, tooltip="Brain of both generators' planners (default: rule brain)."),
                _brain("executor_brain", "executors"),
                _brain("generator_2_brain", "second generator (planner and executor)"),
                _brain("discriminator_brain", "discriminator"),
                _brain("competitor_brain", "quality competitor"),
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
        from comfy_execution.graph_utils import GraphBuilder

        graph = GraphBuilder()  # before the first await
        inputs = dict(image=image, instruction=instruction, caption=caption, rounds=rounds, early_stop=early_stop,
                      restart_from_original=restart_from_original, min_score=min_score, rerun_every_time=rerun_every_time,
                      toolbox=toolbox, planner_brain=planner_brain, executor_brain=executor_brain,
                      generator_2_brain=generator_2_brain, discriminator_brain=discriminator_brain,
                      competitor_brain=competitor_brain, keep_best_on_brain_error=keep_best_on_brain_error)
        img, tools = one_image(image, "CCA Loop"), tools_or_classic(toolbox)
        request = _request("CCA Loop", instruction, caption)
        settings = CCASettings(rounds=rounds, early_stop=early_stop, restart_from_original=restart_from_original,
                               min_score=min_score, keep_best_on_brain_error=bool(keep_best_on_brain_error))
        planner = planner_brain or RuleBrain()
        executor = executor_brain or planner
        second = generator_2_brain or (RuleBrain(boldness=1.6) if isinstance(executor, RuleBrain) else executor)
        generators = [Generator("generator-1", planner, executor),
                      Generator("generator-2", generator_2_brain or planner, second)]
        discriminator = discriminator_brain or planner
        competitor = competitor_brain or discriminator
        stop, bar = _stop_and_progress(rounds)
        if uses_graph_tools(tools) and resume is None:  # graph tools run as nodes: execute steps become Executor nodes
            from .cca_graph import CCARun, start

            state = cca_start(generators, settings)
            stream(state.trace, node_id())
            run = CCARun(img, request, tools, toolbox, generators, discriminator, competitor, settings)
            try:
                return await start(graph, run, state, stop)
            finally:
                await close_brains(*run.brains())
        state = resume["state"] if resume else cca_start(generators, settings)
        stream(state.trace, node_id(), replay=False)
        bests = resume["bests"] if resume else []
        try:
            await cca_round_or_keep_best(state, img, request, tools, generators, discriminator, competitor, settings,
                                         should_stop=stop)
        finally:
            await close_brains(planner, executor, second, generators[1].planner, discriminator, competitor)
        if state.best is not None and state.rounds_run > len(bests):
            bests.append(state.best.image)
        bar.update_absolute(state.rounds_run, rounds)
        if not state.done(settings):
            return _continue(graph, "EditAgentsCCALoop", f"round{state.rounds_run}", inputs, {"state": state, "bests": bests})
        result = cca_result(state)
        best = result.best
        handoff = Handoff(request, best.plan, best.chains, best.image, best.feedback, best.agent, best.round)
        return io.NodeOutput(arrays_to_image_batch([result.image]), arrays_to_image_batch(bests), result.trace, handoff,
                             ui={"text": [cca_text(result)]})


def cca_text(result) -> str:
    """The CCA Loop's text, the same whichever runner ran the rounds."""
    best = result.best
    return (f"{result.rounds} round(s), {result.tool_calls} tool calls, best: {best.agent} round {best.round}, score "
            f"{best.feedback.score:.1f}" + (" (stopped early)" if result.stopped_early else "")
            + (f"; not done: {'; '.join(best.plan.unsupported)}" if best.plan.unsupported else "")
            + (f"; stopped: {result.trace.summary['error']}" if "error" in result.trace.summary else ""))


def closed_loop_outputs(result, request: EditRequest) -> io.NodeOutput:
    """The Closed Loop's outputs and text, the same whichever runner ran the attempts."""
    images = [a.image for a in result.attempts if a.image is not None] or [result.image]
    last = result.attempts[-1].feedback if result.attempts else Feedback(score=0.0, negative="nothing to do")
    handoff = Handoff(request, result.plan, [a.chain for a in result.attempts], result.image, last)
    summary = f"{len(result.plan.subtasks)} subtask(s), {len(result.attempts)} attempt(s), accepted {result.accepted}"
    if result.unjudged:
        summary += f"; not judged (no expert could tell whether they were done): subtask(s) {result.unjudged}"
    if result.failed:
        summary += f"; failed (every attempt failed, left undone): subtask(s) {result.failed}"
    if result.plan.unsupported:
        summary += f"; cannot do: {'; '.join(result.plan.unsupported)}"
    if "error" in result.trace.summary:
        summary += f"; stopped: {result.trace.summary['error']}"
    return io.NodeOutput(arrays_to_image_batch([result.image]), arrays_to_image_batch(images), result.trace, handoff,
                         ui={"text": [summary]})


class ClosedLoop(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = ClosedLoopSettings()
        return io.Schema(
            node_id="EditAgentsClosedLoop", display_name="Closed Loop (IMAGAgent)", category=CATEGORY,
            description="Plan, execute, reflect: a constraint-aware plan; per subtask up to tau_it attempts, each judged "
                        "by a panel of three experts (intent, quality, fidelity), each with its own rubric; the score S is "
                        "their mean and an aggregator merges their text; accepted at tau_sr, otherwise the best attempt "
                        "is kept; a subtask whose intent no expert could judge is kept but reported as not judged. "
                        "History feeds every step.",
            inputs=[
                io.Image.Input("image", tooltip="The photo to edit."),
                io.String.Input("instruction", default="make it warmer and sharper", multiline=True, tooltip="The edit request."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the executor may use (default: classic tools)."),
                BRAIN.Input("planner_brain", optional=True, tooltip="Brain of the planner (default: rule brain)."),
                _brain("executor_brain", "executor"),
                _brain("expert_1_brain", "intent expert"),
                _brain("expert_2_brain", "quality expert"),
                _brain("expert_3_brain", "fidelity expert"),
                _brain("aggregator_brain", "aggregator"),
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
        from comfy_execution.graph_utils import GraphBuilder

        graph = GraphBuilder()  # before the first await
        inputs = dict(image=image, instruction=instruction, max_attempts=max_attempts, accept_score=accept_score,
                      rerun_every_time=rerun_every_time, toolbox=toolbox, planner_brain=planner_brain,
                      executor_brain=executor_brain, expert_1_brain=expert_1_brain, expert_2_brain=expert_2_brain,
                      expert_3_brain=expert_3_brain, aggregator_brain=aggregator_brain,
                      keep_best_on_brain_error=keep_best_on_brain_error)
        img, tools = one_image(image, "Closed Loop"), tools_or_classic(toolbox)
        request = _request("Closed Loop", instruction, "")
        settings = ClosedLoopSettings(max_attempts=max_attempts, accept_score=accept_score,
                                      keep_best_on_brain_error=bool(keep_best_on_brain_error))
        planner = planner_brain or RuleBrain()
        executor, aggregator = executor_brain or planner, aggregator_brain or planner
        experts = [b or planner for b in (expert_1_brain, expert_2_brain, expert_3_brain)]
        stop, bar = _stop_and_progress(100)
        if uses_graph_tools(tools) and resume is None:  # graph tools run as nodes: execute steps become Executor nodes
            from .closed_loop_graph import ClosedLoopRun, start

            expert_panel(experts, settings)
            try:
                state = await closed_loop_start(img, request, tools, planner, settings, stop)
            finally:
                await close_brains(planner)
            stream(state.trace, node_id())
            return start(graph, ClosedLoopRun(request, tools, toolbox, executor, experts, aggregator, settings), state)
        try:
            state = resume["state"] if resume else await closed_loop_start(img, request, tools, planner, settings, stop)
            stream(state.trace, node_id(), replay=resume is None)  # the plan step came before the stream was attached
            if not state.done():
                total = len(state.plan.subtasks)
                await closed_loop_subtask_or_keep(state, tools, executor, experts, aggregator, settings, should_stop=stop,
                                          on_step=lambda sub, tot, text: bar.update_absolute(int(100 * sub / max(tot, 1)), 100))
                bar.update_absolute(int(100 * len(state.accepted) / max(total, 1)), 100)
        finally:
            await close_brains(planner, executor, aggregator, *experts)
        if not state.done():
            return _continue(graph, "EditAgentsClosedLoop", f"subtask{len(state.accepted)}", inputs, {"state": state})
        return closed_loop_outputs(closed_loop_result(state), request)

NODES = [CCALoop, ClosedLoop]
