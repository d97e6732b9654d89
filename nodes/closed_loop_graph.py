"""IMAGAgent's closed loop built from role nodes, for toolboxes with graph tools.

The plan is made in-process; each attempt at a subtask expands into an Executor (which expands
graph tools), three expert Critics and an Aggregator; a Step node then accepts, retries with the
feedback, moves to the next subtask, or finishes.
"""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.loops import closed_loop_summary as summary
from ..agents.loops import record_attempt, record_choice
from ..agents.records import Handoff, HistoryContext, Plan
from .apply_tools import RESUME
from .common import present
from .convert import arrays_to_image_batch, image_batch_to_arrays
from .types import CATEGORY, FEEDBACK, TRACE

EXPERTS = ("intent", "quality", "fidelity")


def expand_attempt(graph, cfg: dict, state: dict, previous: Handoff | None) -> io.NodeOutput:
    """One attempt at the current subtask as role nodes, then a Step node that decides what comes next."""
    sub_index, attempt = state["subtask"], state["attempt"]
    sub = state["plan"].subtasks[sub_index]
    tag = f"s{sub_index}.a{attempt}"
    current = arrays_to_image_batch([state["current"]])
    one = Handoff(cfg["request"], Plan([sub]), round=attempt, agent="imagagent", history=state["history"],
                  orchestrate=True)
    executor = graph.node("EditAgentsExecutor", id=f"{tag}.execute", **present(
        image=current, plan=one, brain=cfg["executor"], toolbox=cfg["toolbox"], feedback=previous,
        trace=state["trace"], rerun_every_time=True))
    trace_out, feedbacks = executor.out(2), []
    for name, brain in zip(EXPERTS, cfg["experts"]):
        critic = graph.node("EditAgentsCritic", id=f"{tag}.{name}", **present(
            original=current, plan=executor.out(1), mode=f"expert: {name}", brain=brain, trace=trace_out,
            rerun_every_time=True))
        feedbacks.append(critic.out(0))
        trace_out = critic.out(1)
    merge = graph.node("EditAgentsAggregator", id=f"{tag}.aggregate", **present(
        feedback_1=feedbacks[0], feedback_2=feedbacks[1], feedback_3=feedbacks[2], mode="merge critiques (IMAGAgent)",
        accept_score=cfg["accept_score"], brain=cfg["aggregator"], trace=trace_out, rerun_every_time=True))
    step = graph.node("EditAgentsClosedLoopStep", id=f"{tag}.step", feedback=merge.out(0), accepted=merge.out(1),
                      trace=merge.out(3), resume={"cfg": cfg, "state": state})
    return io.NodeOutput(step.out(0), step.out(1), step.out(2), step.out(3), expand=graph.finalize())


class ClosedLoopStep(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsClosedLoopStep", display_name="Closed Loop Step (internal)", category=CATEGORY + "/internal",
            description="Made by the Closed Loop when its toolbox has graph tools: accepts an attempt, retries with the "
                        "feedback, moves on, or finishes. Not meant to be placed by hand.",
            inputs=[FEEDBACK.Input("feedback", tooltip="The merged verdict on this attempt."),
                    io.Boolean.Input("accepted", tooltip="Whether it reached tau_sr."),
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
    def execute(cls, feedback, accepted, trace, resume) -> io.NodeOutput:
        from comfy_execution.graph_utils import GraphBuilder

        graph = GraphBuilder()
        cfg, state = resume["cfg"], dict(resume["state"])
        state["trace"] = trace
        state["tries"] = state["tries"] + [feedback]
        state["calls"] = state.get("calls", 0) + sum(len(c) for c in feedback.chains)
        state["images"] = state["images"] + [feedback.image]
        sub = state["plan"].subtasks[state["subtask"]]
        record_attempt(state["history"], sub.index, state["attempt"], [c for chain in feedback.chains for c in chain],
                       feedback.feedback, feedback.image)  # as the in-process loop
        # an attempt no expert could judge is not retried: the next one could not be judged either
        if not accepted and feedback.feedback.judged and state["attempt"] + 1 < cfg["max_attempts"]:
            state["attempt"] += 1
            return expand_attempt(graph, cfg, state, feedback)  # retry with this attempt's feedback
        best = max(state["tries"], key=lambda h: h.feedback.score)
        ok = best.feedback.judged and best.feedback.score >= cfg["accept_score"]
        verdict = ("unjudged: no expert could tell whether it was done; keeping" if not best.feedback.judged
                   else "accept" if ok else "keep the best of")
        trace.add("loop", "imagagent", f"subtask {sub.index}: {verdict} {len(state['tries'])} attempt(s) "
                                       f"(score {best.feedback.score:.1f})",
                  subtask=sub.index, scores={"score": best.feedback.score}, preview=best.image)
        record_choice(state["history"], sub.index, state["tries"].index(best), len(state["tries"]), best.feedback.score,
                      best.feedback.judged, ok)
        state.update(current=best.image, accepted=state["accepted"] + [ok], tries=[], attempt=0,
                     subtask=state["subtask"] + 1,
                     unjudged=state["unjudged"] + ([sub.index] if not best.feedback.judged else []))
        if state["subtask"] < len(state["plan"].subtasks):
            return expand_attempt(graph, cfg, state, None)
        trace.summary = summary(state["plan"], state["accepted"], state["unjudged"], len(state["images"]),
                                state["calls"], state["started"], "role nodes")
        return io.NodeOutput(arrays_to_image_batch([state["current"]]), arrays_to_image_batch(state["images"]), trace,
                             best, ui={"text": [f"{len(state['plan'].subtasks)} subtask(s) as role nodes, accepted "
                                                f"{state['accepted']}"]})


def start(graph, cfg: dict, image, plan: Plan, trace, started: float) -> io.NodeOutput:
    current = image_batch_to_arrays(image)[0]
    history = HistoryContext()
    history.add("plan", plan.summary())
    state = {"plan": plan, "subtask": 0, "attempt": 0, "current": current, "tries": [], "images": [], "accepted": [],
             "unjudged": [], "calls": 0, "trace": trace, "history": history, "started": started}
    if not plan.subtasks:
        trace.summary = summary(plan, [], [], 0, 0, started, "role nodes")
        return io.NodeOutput(image, image, trace, Handoff(cfg["request"], plan, image=current))
    return expand_attempt(graph, cfg, state, None)


NODES = [ClosedLoopStep]
