"""PhotoAgent's nodes: the MCTS Planner (the paper's search), PhotoAgent (enhance: a greedy keep-or-revert search)
and the Perceiver (one proposal step, for unrolled graphs). The agents are ``agents/photoagent/``."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.brain import close_brains
from ..agents.photoagent.enhance import EnhanceSettings, enhance
from ..agents.photoagent.perceiver import BrainPerceiver, brain_perceive
from ..agents.quality.perception import RulePerceiver
from ..agents.photoagent.search import MCTSSettings, mcts_enhance
from ..agents.records import EditRequest, Handoff, Plan, Subtask, ToolCall
from ..agents.quality.reward import ClassicReward
from ..agents.rule_default import offline_brain
from .common import (Rerunnable, brain_or_rule, continue_trace, one_image, rerun_input, run_per_image, tools_or_classic,
                     where)
from .convert import arrays_to_image_batch
from .types import BRAIN, CATEGORY, PLAN, REWARD, TOOLBOX, TRACE


class MCTSPlanner(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = MCTSSettings()
        return io.Schema(
            node_id="EditAgentsMCTSPlanner", display_name="MCTS Planner (PhotoAgent)", category=CATEGORY,
            description="Explores sequences of edits with Monte-Carlo tree search on a small preview (UCT selection, "
                        "perceiver expansion, rollouts to depth d, reward backpropagation), then runs the most visited "
                        "edits (and the best rollout's sequence) at full size and keeps the best only if it beats the "
                        "current photo. A frame of one flat colour around the photo (a mount, letterbox bars) stays as "
                        "it came; the photo inside is what it edits.",
            inputs=[
                io.Image.Input("image", tooltip="The photo(s) to improve; each image of a batch on its own."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the search may use (default: classic tools)."),
                REWARD.Input("reward", optional=True, tooltip="How states are scored (default: the classic reward)."),
                io.Int.Input("simulations", default=d.simulations, min=1, max=2000, tooltip="Simulations per step."),
                io.Int.Input("depth", default=d.depth, min=1, max=8, tooltip="Rollout depth d (edits looked ahead)."),
                io.Float.Input("exploration", default=d.exploration, min=0.0, max=10.0, step=0.1,
                               tooltip="UCT exploration constant, on rewards normalised to 0..1 by the search's "
                                       "lowest and highest: higher tries more alternatives."),
                io.Int.Input("branching", default=d.branching, min=1, max=32, tooltip="Actions proposed per tree node (K)."),
                io.Int.Input("top_k", default=d.top_k, min=1, max=8, tooltip="Most-visited actions re-run at full resolution."),
                io.Int.Input("max_steps", default=d.max_steps, min=1, max=20, tooltip="At most this many edits are kept."),
                io.Int.Input("patience", default=d.patience, min=1, max=10, tooltip="Stop after this many steps without improvement."),
                io.Int.Input("preview_side", default=d.preview_side, min=64, max=2048, tooltip="Longest side of the search copy."),
                io.Float.Input("time_budget_s", default=d.time_budget_s, min=0.1, max=3600.0, step=1.0,
                               tooltip="Wall-time budget per step (the search stops early when it runs out)."),
                # Declared, not left to the frontend: 1.49 and newer add a control widget to any INT named seed,
                # 1.32 did not, and a widget one frontend adds shifts every saved value after it in the other.
                io.Int.Input("seed", default=0, min=0, max=2**31 - 1, control_after_generate="fixed",
                             tooltip="Seed of the random rollouts (same seed, same result). The control after it "
                                     "can change it after each run (fixed keeps it)."),
                io.String.Input("mood", default="", multiline=False, optional=True,
                                tooltip="Mood-guided mode: the mood to aim for (e.g. 'warm and cosy'). Empty = autonomous "
                                        "'make it better', or the Reward node's mood. Typed here or on the Reward, it "
                                        "reaches both the perceiver and the reward (this one wins if both differ)."),
                BRAIN.Input("perceiver_brain", optional=True,
                            tooltip="A vision-language brain as PhotoAgent's perceiver: it looks at the photo and proposes "
                                    "K actions at each newly expanded state (within perceiver_calls per step), seeing what was already tried. Without it the rule "
                                    "perceiver proposes from the photo's statistics (offline)."),
                io.Int.Input("perceiver_calls", default=d.perceiver_calls, min=1, max=64, optional=True,
                             tooltip="Most vision-brain perceiver calls per step; states expanded after that reuse "
                                     "their parent's proposals. Ignored by the rule perceiver (it is free)."),
            ],
            outputs=[io.Image.Output(display_name="image", tooltip="The enhanced photo (a batch in, a batch out)."),
                     io.Image.Output(display_name="steps", tooltip="The input and the image after each kept edit."),
                     TRACE.Output(display_name="trace", tooltip="Every step, with the search tree (visits and mean reward).")],
        )

    @classmethod
    def execute(cls, image, simulations, depth, exploration, branching, top_k, max_steps, patience, preview_side,
                time_budget_s, seed, mood="", toolbox=None, reward=None, perceiver_brain=None,
                perceiver_calls=MCTSSettings.perceiver_calls) -> io.NodeOutput:
        s = MCTSSettings(simulations=simulations, depth=depth, exploration=exploration, branching=branching, top_k=top_k,
                         max_steps=max_steps, patience=patience, preview_side=preview_side, time_budget_s=time_budget_s,
                         seed=seed, perceiver_calls=perceiver_calls)
        tools, scorer = tools_or_classic(toolbox), reward or ClassicReward()
        # the mood is typed once, here or on the Reward: it reaches both the perceiver and the reward's scoring text
        mood = mood.strip() or scorer.config.mood
        if mood != scorer.config.mood:
            scorer = scorer.with_mood(mood)

        def perceiver(agent: str):
            if perceiver_brain is None and not mood:
                return RulePerceiver()
            return BrainPerceiver(perceiver_brain or offline_brain(), tools, mood=mood, agent=agent)

        finals, steps, trace = run_per_image(
            image, max_steps, "PhotoAgent MCTS",
            lambda arr, stop, on_step, agent, listener: mcts_enhance(arr, tools, scorer, s, perceiver=perceiver(agent),
                                                                     should_stop=stop, on_step=on_step, agent=agent,
                                                                     listener=listener))
        return io.NodeOutput(arrays_to_image_batch(finals), arrays_to_image_batch(steps), trace)


class PhotoAgent(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = EnhanceSettings()
        return io.Schema(
            node_id="EditAgentsPhotoAgent",
            display_name="PhotoAgent (enhance)",
            category=CATEGORY,
            description="Autonomously improves a photo: each step a perceiver proposes edits, each is tried on a small "
                        "preview and scored by the reward, the best few are re-run at full size, and the best is kept "
                        "only if it beats the current image. Stops when nothing helps. Works offline with classic tools.",
            inputs=[
                io.Image.Input("image", tooltip="The photo(s) to improve. Each image of a batch is handled on its own."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the agent may use (default: every classic tool)."),
                REWARD.Input("reward", optional=True, tooltip="How results are scored (default: the classic reward)."),
                io.Int.Input("max_steps", default=d.max_steps, min=1, max=50,
                             tooltip="At most this many edits are kept."),
                io.Int.Input("candidates", default=d.candidates, min=1, max=64,
                             tooltip="Edits proposed and tried per step (K)."),
                io.Int.Input("top_k", default=d.top_k, min=1, max=16,
                             tooltip="How many of the best preview results are re-run and re-scored at full resolution."),
                io.Int.Input("patience", default=d.patience, min=1, max=10,
                             tooltip="Stop after this many steps in a row without improvement."),
                io.Float.Input("min_gain", default=d.min_gain, min=0.0, max=1.0, step=0.001,
                               tooltip="A new image must beat the current reward by at least this much to be kept."),
                io.Int.Input("preview_side", default=d.preview_side, min=64, max=4096,
                             tooltip="Longest side of the reduced-resolution copy used to try edits quickly."),
            ],
            outputs=[
                io.Image.Output(display_name="image", tooltip="The improved photo(s)."),
                io.Image.Output(display_name="steps", tooltip="The input and each kept step, as a batch."),
                TRACE.Output(display_name="trace", tooltip="Every decision: proposals, scores, kept and reverted edits."),
            ],
        )

    @classmethod
    def execute(cls, image, max_steps, candidates, top_k, patience, min_gain, preview_side,
                toolbox=None, reward=None) -> io.NodeOutput:
        settings = EnhanceSettings(max_steps=max_steps, candidates=candidates, top_k=top_k,
                                   patience=patience, min_gain=min_gain, preview_side=preview_side)
        tools, scorer = tools_or_classic(toolbox), reward or ClassicReward()
        finals, steps, trace = run_per_image(
            image, max_steps, "PhotoAgent enhance",
            lambda arr, stop, on_step, agent, listener: enhance(arr, tools, scorer, settings, should_stop=stop,
                                                                on_step=on_step, agent=agent, listener=listener))
        return io.NodeOutput(arrays_to_image_batch(finals), arrays_to_image_batch(steps), trace)


class Perceiver(Rerunnable, io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsPerceiver", display_name="Perceiver", category=CATEGORY,
            description="Looks at the photo and proposes K atomic editing actions (PhotoAgent): autonomous, or toward "
                        "mood words. The rule brain proposes from image statistics; a VLM brain from what it sees.",
            inputs=[
                io.Image.Input("image", tooltip="The photo."),
                io.Int.Input("k", default=4, min=1, max=16, tooltip="How many actions to propose."),
                io.String.Input("mood", default="", tooltip="Mood words (empty: just make it better)."),
                BRAIN.Input("brain", optional=True, tooltip="What the perceiver thinks with (default: the offline rule brain)."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools it may propose (default: classic tools)."),
                TRACE.Input("trace", optional=True, tooltip="An earlier node's trace to continue, so unrolled rounds make one trace."),
                rerun_input(),
            ],
            outputs=[PLAN.Output(display_name="plan", tooltip="The proposed actions as a plan (the Executor runs them as proposed)."),
                     TRACE.Output(display_name="trace", tooltip="What this node decided, step by step: connect a Trace View or the next role node.")],
        )

    @classmethod
    async def execute(cls, image, k, mood, rerun_every_time, brain=None, toolbox=None, trace=None) -> io.NodeOutput:
        img, b, tools = one_image(image, "Perceiver"), brain_or_rule(brain), tools_or_classic(toolbox)
        tr = continue_trace(trace, "Perceiver")
        try:
            scene, actions = await brain_perceive(b, img, tools, k, where(tr, "perceiver"), mood=mood)
        finally:
            await close_brains(b)
        subtasks = [Subtask(i, a.rationale or a.label(), a.tool, a.rationale, [i - 1] if i else []) for i, a in enumerate(actions)]
        request = EditRequest(instruction="", mode="mood" if mood else "autonomous", mood=mood)
        plan = Handoff(request, Plan(subtasks), [[ToolCall(a.tool, a.params, a.rationale)] for a in actions])
        text = "\n".join(a.label() for a in actions) or "(nothing to propose: no clear defect)"
        return io.NodeOutput(plan, tr, ui={"text": [f"scene: {scene or 'unknown'}\n{text}"]})


NODES = [MCTSPlanner, PhotoAgent, Perceiver]
