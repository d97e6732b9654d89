"""CCA rounds built from role nodes, for toolboxes with graph tools.

Graph tools run as expanded ComfyUI nodes, which an in-process loop cannot do mid-round. So when
the toolbox holds graph tools, the CCA Loop expands each round into the role nodes themselves —
for each generator Planner -> Executor (which expands graph tools) -> Critic, then an Aggregator
that keeps the best — followed by a Round End node that either finishes or expands the next round.
"""
from __future__ import annotations

from comfy_api.latest import io

from ..agents import roles
from ..agents.records import Handoff
from ..agents.loops import cca_summary as summary
from ..agents.roles import Where
from .apply_tools import RESUME
from .common import present
from .convert import arrays_to_image_batch
from .types import CATEGORY, FEEDBACK, TRACE

RESUME_TIP = "Internal: set by the CCA Loop's expansion; leave unconnected."


def expand_round(graph, cfg: dict, rnd: int, last: dict, best: Handoff | None, bests: list, trace,
                 calls: int = 0) -> io.NodeOutput:
    """Round ``rnd`` as role nodes, then a Round End that decides what comes next."""
    base = cfg["image"] if cfg["restart_from_original"] or best is None else arrays_to_image_batch([best.image])
    feedback_out, trace_out = {}, trace
    for g in ("generator-1", "generator-2"):
        rival = last.get("generator-2" if g == "generator-1" else "generator-1")
        planner = graph.node("EditAgentsPlanner", id=f"r{rnd}.{g}.plan", **present(
            image=cfg["image"], instruction=cfg["instruction"], mode="instructed", mood="", caption=cfg["caption"],
            brain=cfg["brains"][g]["planner"], toolbox=cfg["toolbox"], feedback=last.get(g), rival_feedback=rival,
            trace=trace_out, rerun_every_time=True))
        executor = graph.node("EditAgentsExecutor", id=f"r{rnd}.{g}.execute", **present(
            image=base, plan=planner.out(0), brain=cfg["brains"][g]["executor"], toolbox=cfg["toolbox"],
            feedback=last.get(g), trace=planner.out(1), rerun_every_time=True))
        critic = graph.node("EditAgentsCritic", id=f"r{rnd}.{g}.critic", **present(
            original=cfg["image"], plan=executor.out(1), mode="discriminator (CCA)", brain=cfg["discriminator"],
            toolbox=cfg["toolbox"], questions=cfg["questions"], trace=executor.out(2), rerun_every_time=True))
        feedback_out[g], trace_out = critic.out(0), critic.out(1)
    pick = graph.node("EditAgentsAggregator", id=f"r{rnd}.compete", **present(
        feedback_1=feedback_out["generator-1"], feedback_2=feedback_out["generator-2"], feedback_3=best,
        mode="pick the best (CCA)", accept_score=cfg["min_score"], brain=cfg["competitor"], trace=trace_out,
        rerun_every_time=True))
    end = graph.node("EditAgentsCCARoundEnd", id=f"r{rnd}.end", best=pick.out(0), accepted=pick.out(1),
                     feedback_1=feedback_out["generator-1"], feedback_2=feedback_out["generator-2"], trace=pick.out(3),
                     resume={"cfg": cfg, "round": rnd, "bests": bests, "calls": calls})
    return io.NodeOutput(end.out(0), end.out(1), end.out(2), end.out(3), expand=graph.finalize())


class CCARoundEnd(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsCCARoundEnd", display_name="CCA Round End (internal)", category=CATEGORY + "/internal",
            description="Made by the CCA Loop when its toolbox has graph tools: ends a round and starts the next, or "
                        "finishes. Not meant to be placed by hand.",
            inputs=[FEEDBACK.Input("best", tooltip="The competitor's pick."),
                    io.Boolean.Input("accepted", tooltip="Whether the pick satisfies the request."),
                    FEEDBACK.Input("feedback_1", tooltip="Generator 1's feedback."),
                    FEEDBACK.Input("feedback_2", tooltip="Generator 2's feedback."),
                    TRACE.Input("trace", tooltip="The trace so far."),
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
    def execute(cls, best, accepted, feedback_1, feedback_2, trace, resume) -> io.NodeOutput:
        from comfy_execution.graph_utils import GraphBuilder

        graph = GraphBuilder()
        cfg, rnd, bests = resume["cfg"], resume["round"], resume["bests"] + [best.image]
        calls = resume.get("calls", 0) + sum(len(c) for h in (feedback_1, feedback_2) for c in h.chains)
        best.round = max(best.round, 0)
        trace.add("loop", "cca", f"round {rnd}: best is {best.agent}; {'satisfied' if accepted else 'not yet satisfied'}",
                  round=rnd, scores={"best": best.feedback.score if best.feedback else 0.0}, preview=best.image)
        done = (accepted and cfg["early_stop"]) or rnd + 1 >= cfg["rounds"]
        if not done:  # as the in-process loop: alike results that still fail get "try another tool"
            roles.suggest_other_tools([feedback_1.candidate(), feedback_2.candidate()],
                                      Where(trace, "discriminator", round=rnd))
            last = {"generator-1": _next_round(feedback_1, "generator-1", rnd),
                    "generator-2": _next_round(feedback_2, "generator-2", rnd)}
            return expand_round(graph, cfg, rnd + 1, last, best, bests, trace, calls)
        trace.summary = summary(rnd + 1, calls, bool(accepted and cfg["early_stop"] and rnd + 1 < cfg["rounds"]), best,
                                cfg["started"], "role nodes")
        missing = f"; not done: {'; '.join(best.plan.unsupported)}" if best.plan.unsupported else ""
        return io.NodeOutput(arrays_to_image_batch([best.image]), arrays_to_image_batch(bests), trace, best,
                             ui={"text": [f"{rnd + 1} round(s) as role nodes; best {best.agent}, score "
                                          f"{best.feedback.score:.1f}{missing}"]})


def _next_round(h: Handoff, agent: str, rnd: int) -> Handoff:
    return Handoff(h.request, h.plan, h.chains, h.image, h.feedback, agent, rnd)


NODES = [CCARoundEnd]
