"""Reward node: how agents score an image."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.reward import DEFAULT_WEIGHTS, ClassicReward, RewardConfig
from .types import CATEGORY, REWARD

_TIPS = {
    "exposure": "Weight of 'mean brightness close to a well-exposed photo'.",
    "clipping": "Weight of 'few blown highlights and crushed shadows'.",
    "contrast": "Weight of 'global contrast in a natural range'.",
    "colourfulness": "Weight of 'colours neither dull nor garish' (ignored for black-and-white photos).",
    "colour_cast": "Weight of 'grays and whites look neutral'. Lower it to keep warm or cool moods.",
    "sharpness": "Weight of 'fine detail present'.",
    "noise": "Weight of 'little noise in flat areas'.",
}


class Reward(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        inputs = [io.Float.Input(name, default=w, min=0.0, max=10.0, step=0.05, tooltip=_TIPS[name])
                  for name, w in DEFAULT_WEIGHTS.items()]
        inputs.append(io.Float.Input("preservation", default=RewardConfig().preservation, min=0.0, max=10.0, step=0.05,
                                     tooltip="Penalty for changing the photo's structure (1 - similarity to the input). Higher = gentler edits."))
        return io.Schema(
            node_id="EditAgentsReward",
            display_name="Reward (classic)",
            category=CATEGORY,
            description="A weighted no-reference quality reward from image statistics (no model weights), "
                        "minus a content-preservation penalty so edits improve the photo instead of replacing it.",
            inputs=inputs,
            outputs=[REWARD.Output(display_name="reward", tooltip="The reward, for the PhotoAgent loop.")],
        )

    @classmethod
    def execute(cls, preservation: float, **weights: float) -> io.NodeOutput:
        return io.NodeOutput(ClassicReward(RewardConfig(weights=weights, preservation=preservation)))


NODES = [Reward]
