"""MCTS Planner node: PhotoAgent's exploratory search over editing actions."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.mcts import MCTSSettings, mcts_enhance
from ..agents.perceiver import BrainPerceiver, RulePerceiver
from ..agents.reward import ClassicReward
from ..agents.rule_brain import RuleBrain
from .common import run_per_image, tools_or_classic
from .convert import arrays_to_image_batch
from .types import BRAIN, CATEGORY, REWARD, TOOLBOX, TRACE


class MCTSPlanner(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        d = MCTSSettings()
        return io.Schema(
            node_id="EditAgentsMCTSPlanner", display_name="MCTS Planner (PhotoAgent)", category=CATEGORY,
            description="Explores sequences of edits with Monte-Carlo tree search on a small preview (UCT selection, "
                        "perceiver expansion, rollouts to depth d, reward backpropagation), then runs the most visited "
                        "edits (and the best rollout's sequence) at full size and keeps the best only if it beats the "
                        "current photo.",
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
                io.Int.Input("seed", default=0, min=0, max=2**31 - 1, tooltip="Seed of the random rollouts (same seed, same result)."),
                io.String.Input("mood", default="", multiline=False, optional=True,
                                tooltip="Mood-guided mode: the mood to aim for (e.g. 'warm and cosy'). Empty = autonomous "
                                        "'make it better'. Give the Reward node the same mood so it scores toward it."),
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
        mood = mood.strip()

        def perceiver(agent: str):
            if perceiver_brain is None and not mood:
                return RulePerceiver()
            return BrainPerceiver(perceiver_brain or RuleBrain(), tools, mood=mood, agent=agent)

        finals, steps, trace = run_per_image(
            image, max_steps, "PhotoAgent MCTS",
            lambda arr, stop, on_step, agent, listener: mcts_enhance(arr, tools, scorer, s, perceiver=perceiver(agent),
                                                                     should_stop=stop, on_step=on_step, agent=agent,
                                                                     listener=listener))
        return io.NodeOutput(arrays_to_image_batch(finals), arrays_to_image_batch(steps), trace)


NODES = [MCTSPlanner]
