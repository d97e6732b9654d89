"""Role nodes: Planner, Executor, Critic, Aggregator — chainable by hand on the canvas (the Perceiver is PhotoAgent's).

PLAN and FEEDBACK sockets carry a Handoff (request, plan, chains, edited image, feedback), so a
Critic's or Aggregator's FEEDBACK plugs into the next round's Planner and Executor.
"""
from __future__ import annotations

import asyncio

from comfy_api.latest import io

from ..agents import roles
from ..agents.brain import BrainError, close_brains
from ..agents.loop import attempt_error
from ..agents.records import Critique, EditRequest, Feedback, Handoff
from .common import (Rerunnable, brain_or_rule, continue_trace, one_image, present, rerun_input, tools_or_classic,
                     where)
from .convert import arrays_to_image_batch
from . import host
from .types import BRAIN, CATEGORY, FEEDBACK, PLAN, RESUME, TOOLBOX, TRACE

MODES = ["instructed", "autonomous", "mood"]
EXPERTS = ["intent", "quality", "fidelity"]


def _brain_in(name="brain", what="this role"):
    return BRAIN.Input(name, optional=True, tooltip=f"What {what} thinks with (default: the offline rule brain).")


def _trace_in():
    return TRACE.Input("trace", optional=True, tooltip="An earlier node's trace to continue, so unrolled rounds make one trace.")


class Planner(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsPlanner", display_name="Planner", category=CATEGORY,
            description="Splits the request into atomic subtasks (one target, one edit, visible, in dependency order) "
                        "and picks one tool per subtask from the toolbox's descriptions. With feedback it reflects on its "
                        "previous plan, and with a rival's feedback it learns from the other generator (CCA).",
            inputs=[
                io.Image.Input("image", tooltip="The photo to plan for."),
                io.String.Input("instruction", default="make it brighter and add more contrast", multiline=True,
                                tooltip="What to do. Empty with mode 'autonomous' means 'make it better'."),
                io.Combo.Input("mode", options=MODES, default="instructed",
                               tooltip="instructed: follow the instruction; autonomous: improve the photo; mood: steer toward the mood words."),
                io.String.Input("mood", default="", tooltip="Mood words for mood mode, e.g. 'warm and nostalgic'."),
                io.String.Input("caption", default="", tooltip="What the photo shows, if known (the discriminator writes questions from it)."),
                _brain_in(what="the planner"),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools it may plan with (default: classic tools)."),
                FEEDBACK.Input("feedback", optional=True, tooltip="Feedback on this agent's previous round: reflect and improve."),
                FEEDBACK.Input("rival_feedback", optional=True, tooltip="The rival generator's plan and feedback (CCA collaboration and competition)."),
                _trace_in(), rerun_input(),
            ],
            outputs=[PLAN.Output(display_name="plan", tooltip="The plan, for an Executor."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node.")],
        )

    @classmethod
    async def execute(cls, image, instruction, mode, mood, caption, rerun_every_time, brain=None, toolbox=None,
                      feedback=None, rival_feedback=None, trace=None) -> io.NodeOutput:
        try:
            request = EditRequest(instruction=instruction, mode=mode, caption=caption, mood=mood)
        except ValueError as err:
            raise ValueError(f"Planner: {err}") from None
        img, b, tools = one_image(image, "Planner"), brain_or_rule(brain), tools_or_classic(toolbox)
        tr = continue_trace(trace, "Planner")
        rnd = (feedback.round + 1) if feedback is not None else 0
        try:
            plan = await roles.plan(b, request, tools, img, where(tr, "planner", round=rnd),
                                    previous=feedback.plan if feedback else None,
                                    own_feedback=feedback.feedback if feedback else None,
                                    rival_plan=rival_feedback.plan if rival_feedback else None,
                                    rival_feedback=rival_feedback.feedback if rival_feedback else None)
        finally:
            await close_brains(b)
        handoff = Handoff(request, plan, round=rnd, agent=feedback.agent if feedback else "agent",
                          questions=_questions_of(feedback, rival_feedback, request))
        return io.NodeOutput(handoff, tr, ui={"text": [plan.summary()]})


class Executor(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsExecutor", display_name="Executor", category=CATEGORY,
            description="Carries out the plan: for each subtask it reads only that tool's manual, chooses parameters "
                        "(moving them by feedback: stronger when too weak, e.g. CFG 4 -> 8), and runs the tool chain.",
            inputs=[
                io.Image.Input("image", tooltip="The photo to edit."),
                PLAN.Input("plan", tooltip="A plan from a Planner or Perceiver."),
                _brain_in(what="the executor"),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools it may call (default: classic tools)."),
                FEEDBACK.Input("feedback", optional=True, tooltip="Feedback on the previous round: its parameters are adjusted per subtask."),
                _trace_in(), rerun_input(),
                RESUME.Input("resume", optional=True, tooltip="Internal: set when this node expands itself around a graph tool; leave unconnected."),
            ],
            outputs=[io.Image.Output(display_name="image", tooltip="The edited photo."),
                     PLAN.Output(display_name="plan", tooltip="The plan with the tool chains run, for a Critic."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node.")],
            enable_expand=True,  # graph tools run as expanded ComfyUI nodes
        )

    @classmethod
    async def execute(cls, image, plan, rerun_every_time, brain=None, toolbox=None, feedback=None, trace=None,
                      resume=None) -> io.NodeOutput:
        graph = host.graph_builder()  # before the first await: graph tools expand into ComfyUI nodes
        b, tools = brain_or_rule(brain), tools_or_classic(toolbox)
        if resume is not None:  # a graph tool just ran: its result is the image input
            tr, chains, start = resume["trace"], resume["chains"], resume["at"] + 1
            current = one_image(image, "Executor")
        else:
            tr, chains, start = continue_trace(trace, "Executor"), [], 0
            current = one_image(image, "Executor")
        try:
            for sub in plan.plan.subtasks[start:]:
                w = where(tr, plan.agent, round=plan.round, subtask=sub.index)
                if plan.chains and len(plan.chains) == len(plan.plan.subtasks) and feedback is None:
                    chain = plan.chains[sub.index]  # decided already (e.g. by the Perceiver): run as it is
                    tr.add("executor", plan.agent, f"run as proposed: {', '.join(c.label() for c in chain)}",
                           round=plan.round, subtask=sub.index, outputs={"chain": [c.as_dict() for c in chain]})
                else:  # the earlier plan's matching subtask (by goal, then tool): its chain and its feedback
                    previous, fb = (roles.earlier_attempt(feedback.plan, feedback.chains, feedback.feedback, sub)
                                    if feedback is not None else (None, None))
                    chain = await roles.execute(b, sub, tools, current, w, history=plan.history, previous=previous,
                                                feedback=fb, any_tool=plan.orchestrate)
                if tools.get(chain[0].tool).category == "graph":  # a graph tool runs alone in its chain
                    chains.append(chain[:1])
                    nxt = _expand_graph_tool(graph, tools, chain[0], sub.index, current, tr, plan, chains, dict(
                        brain=brain, toolbox=toolbox, feedback=feedback, rerun_every_time=rerun_every_time))
                    return io.NodeOutput(nxt.out(0), nxt.out(1), nxt.out(2), expand=graph.finalize())
                current = await asyncio.to_thread(roles.run_chain, tools, chain, current)
                chains.append(chain)
        except Exception as err:  # noqa: BLE001 - inside a loop its next node decides, as in-process; else re-raised
            why = attempt_error(err) if plan.in_loop else None
            if why is None and not (plan.keep_going and isinstance(err, BrainError)):
                raise
            tr.add("executor", plan.agent, f"failed: {why or err}", round=plan.round, outputs={"error": why or str(err)})
            out = Handoff(plan.request, plan.plan, chains, current, None, plan.agent, plan.round,
                          **({"failed": why} if why else {"error": str(err)}))
            return io.NodeOutput(arrays_to_image_batch([current]), out, tr, ui={"text": [f"failed: {why or err}"]})
        finally:
            if not plan.in_loop:  # a loop's brains are the loop's: it closes them when it is done
                await close_brains(b)
        out = Handoff(plan.request, plan.plan, chains, current, None, plan.agent, plan.round, questions=plan.questions,
                      orchestrate=plan.orchestrate)
        labels = "; ".join(", ".join(c.label() for c in chain) for chain in chains)
        return io.NodeOutput(arrays_to_image_batch([current]), out, tr, ui={"text": [labels or "(nothing to do)"]})


def _expand_graph_tool(graph, tools, call, index, current, trace, plan, chains, inputs):
    """Clone the graph tool's sub-graph with the chosen parameters, and this Executor to carry on after it."""
    import numpy as np
    import torch

    tool = tools.runtime.extras["graph_tools"][call.tool]
    rgb = current[:, :, :3] if current.shape[2] >= 3 else np.repeat(current, 3, 2)
    result = tool.build(graph, torch.from_numpy(np.ascontiguousarray(rgb))[None], call.params, tag=f"subtask{index}")
    trace.add("executor", plan.agent, f"{call.label()} (graph tool, expanded)", round=plan.round, subtask=index,
              inputs={"tool": call.tool, "params": call.params}, outputs={"expanded_nodes": sorted(graph.nodes)})
    resume = {"trace": trace, "chains": chains, "at": index}
    return graph.node("EditAgentsExecutor", id=f"resume{index}", image=result, plan=plan, resume=resume, **present(**inputs))


class Critic(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsCritic", display_name="Critic", category=CATEGORY,
            description="Judges an edit. Discriminator (CCA): writes Yes/No questions from the request, answers them on "
                        "the edited image, adds a quality score and splits the report per subtask. Expert (IMAGAgent): "
                        "a score with positive and negative prompts for each subtask, on the paper's shared rubric with "
                        "the expert's emphasis (intent, quality, fidelity), or word that it cannot judge.",
            inputs=[
                io.Image.Input("original", tooltip="The photo before the edit."),
                PLAN.Input("plan", tooltip="The Executor's plan output (it carries the edited image and the chains)."),
                io.Combo.Input("mode", options=["discriminator (CCA)"] + [f"expert: {e}" for e in EXPERTS],
                               default="discriminator (CCA)", tooltip="How to judge: CCA's discriminator, or one of IMAGAgent's experts."),
                _brain_in(what="the critic"),
                TOOLBOX.Input("toolbox", optional=True,
                              tooltip="Discriminator: its model folders; when they hold the aesthetic predictor (models/"
                                      "aesthetic/ with a CLIP in models/clip-hf/), the quality score averages the brain's "
                                      "rating with it."),
                _trace_in(), rerun_input(),
            ],
            outputs=[FEEDBACK.Output(display_name="feedback", tooltip="For an Aggregator, or the next round's Planner/Executor."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node.")],
        )

    @classmethod
    async def execute(cls, original, plan, mode, rerun_every_time, brain=None, toolbox=None,
                      trace=None) -> io.NodeOutput:
        before, b = one_image(original, "Critic"), brain_or_rule(brain)
        if plan.image is None:
            raise ValueError("Critic: connect the Executor's plan output (it carries the edited image)")
        tr = continue_trace(trace, "Critic")
        asked = plan.questions  # written by an earlier critic of the same request, or here
        try:
            if mode.startswith("discriminator"):
                w = where(tr, "discriminator", round=plan.round)
                if not asked:  # the first critic of a hand-built chain: the request's questions, passed on from here
                    asked = await roles.write_questions(b, plan.request, tools_or_classic(toolbox), before, w)
                fb = await roles.discriminate(b, plan.request, plan.plan, before, plan.image, w, asked,
                                              roles.aesthetic_rater(toolbox))
            else:
                expert = mode.split(": ", 1)[1]
                crits: list[Critique] = [await roles.critique(b, expert, s, before, plan.image,
                                                              where(tr, expert, round=plan.round, subtask=s.index))
                                         for s in plan.plan.subtasks]
                fb = _merge_critiques(crits)
        finally:
            await close_brains(b)
        out = Handoff(plan.request, plan.plan, plan.chains, plan.image, fb, plan.agent, plan.round, questions=asked)
        return io.NodeOutput(out, tr, ui={"text": [feedback_panel_text(fb)]})


def _questions_of(feedback: Handoff | None, rival: Handoff | None, request: EditRequest):
    """The request's questions a critic wrote earlier, so the next round is graded on the same ones."""
    for h in (feedback, rival):
        if h is not None and h.questions and h.request.instruction == request.instruction:
            return h.questions
    return None


def _merge_critiques(crits: list[Critique]) -> Feedback:
    if not crits:
        return Feedback(score=0.0, negative="nothing was planned, so nothing was done")
    join = lambda items: "; ".join(dict.fromkeys(i for i in items if i))  # noqa: E731
    return roles.merged(crits, join(c.positive for c in crits), join(c.negative for c in crits))


def feedback_panel_text(fb: Feedback) -> str:
    """Feedback as the lines a Critic or Aggregator node shows on the canvas: every answer and expert."""
    lines = [f"score {fb.score:.1f}/10"]
    lines += [f"{q.answer:>7}: {q.text} ({q.explanation})" for q in fb.questions]
    lines += [f"suggestion: {s.text}" for s in fb.suggestions]
    lines += [f"{c.expert}: {c.score:.1f} + {c.positive or '-'} / - {c.negative or '-'}" if c.judged
              else f"{c.expert}: could not judge ({c.negative or '-'})" for c in fb.experts]
    if fb.negative and not fb.questions:
        lines.append(f"negative: {fb.negative}")
    return "\n".join(lines)


class Aggregator(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsAggregator", display_name="Aggregator", category=CATEGORY,
            description="Merge critiques (IMAGAgent): the brain merges several experts' text on one edit, no point "
                        "added or dropped; the score is the mean of the experts who could judge, computed, not asked; "
                        "accepted when the score reaches the threshold and the intent was judged carried out. Pick the best (CCA's quality "
                        "competitor): several candidates' feedback in, the best one out, and whether to stop.",
            inputs=[
                FEEDBACK.Input("feedback_1", tooltip="A Critic's feedback."),
                FEEDBACK.Input("feedback_2", optional=True, tooltip="Another critique or candidate."),
                FEEDBACK.Input("feedback_3", optional=True, tooltip="Another critique or candidate."),
                io.Combo.Input("mode", options=["merge critiques (IMAGAgent)", "pick the best (CCA)"],
                               default="merge critiques (IMAGAgent)", tooltip="Merge views of one edit, or choose among candidates."),
                io.Float.Input("accept_score", default=7.0, min=0.0, max=10.0, step=0.5,
                               tooltip="tau_sr: a merged score at or above this is accepted; a best candidate must reach it to stop."),
                _brain_in(what="the aggregator"), _trace_in(), rerun_input(),
            ],
            outputs=[FEEDBACK.Output(display_name="feedback", tooltip="The merged verdict, or the best candidate."),
                     io.Boolean.Output(display_name="accepted", tooltip="Merged score >= accept_score, or the best candidate satisfies the request."),
                     io.Image.Output(display_name="image", tooltip="The judged (or best) edited image."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node.")],
        )

    @classmethod
    async def execute(cls, feedback_1, mode, accept_score, rerun_every_time, feedback_2=None, feedback_3=None, brain=None,
                      trace=None) -> io.NodeOutput:
        given = [f for f in (feedback_1, feedback_2, feedback_3) if f is not None]
        if any(f.feedback is None for f in given):
            raise ValueError("Aggregator: every input must be a Critic's feedback output")
        b, tr = brain_or_rule(brain), continue_trace(trace, "Aggregator")
        try:
            if mode.startswith("merge"):
                crits = [c for f in given for c in (f.feedback.experts or [Critique("critic", f.feedback.score,
                                                                                    f.feedback.positive, f.feedback.negative,
                                                                                    judged=f.feedback.judged)])]
                fb = await roles.aggregate(b, crits, where(tr, "aggregator", round=given[0].round))
                first = given[0]
                out = Handoff(first.request, first.plan, first.chains, first.image,
                              Feedback(fb.score, fb.positive, fb.negative, first.feedback.questions,
                                       first.feedback.per_subtask, fb.experts, judged=fb.judged,
                                       direction=fb.direction, done=fb.done),
                              first.agent, first.round)
                accepted = fb.accepts(accept_score)
            else:
                pick, stop, _ = await roles.compete(b, [f.candidate() for f in given], accept_score,
                                                    where(tr, "competitor", round=given[0].round))
                out, accepted = given[pick], stop
        finally:
            await close_brains(b)
        image = arrays_to_image_batch([out.image]) if out.image is not None else None
        return io.NodeOutput(out, accepted, image, tr,
                             ui={"text": [f"{'accepted' if accepted else 'not accepted'}: {feedback_panel_text(out.feedback)}"]})


NODES = [Planner, Executor, Critic, Aggregator]
