"""PhotoAgent node: autonomous "make it better" enhancement with keep-or-revert steps."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.enhance import EnhanceSettings, enhance
from ..agents.reward import ClassicReward
from .common import run_per_image, tools_or_classic
from .convert import arrays_to_image_batch
from .types import CATEGORY, REWARD, TOOLBOX, TRACE


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


NODES = [PhotoAgent]
