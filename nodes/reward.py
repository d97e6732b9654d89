"""Reward node: how agents score an image (PhotoAgent's reward ensemble)."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.quality.reward import PRESETS, Reward as RewardEnsemble, RewardConfig, preset_weights
from ..agents.brain import vision_of
from ..tools.scorers import learned_scorers
from .runtime import FIRST_AVAILABLE, comfy_runtime, model_choices
from .types import BRAIN, CATEGORY, REWARD

_TIPS = {
    "exposure": "Weight of 'the tones use the range': highlights reach up, blacks are not lifted, the key is plausible.",
    "clipping": "Weight of 'few blown highlights and crushed shadows'.",
    "contrast": "Weight of 'global contrast in a natural range'.",
    "colourfulness": "Weight of 'colours neither dull nor garish' (ignored for black-and-white photos).",
    "colour_cast": "Weight of 'no cast the illuminant estimators agree on'. Lower it to keep warm or cool moods.",
    "sharpness": "Weight of 'fine detail present, not over-sharpened' (read on native-resolution crops).",
    "noise": "Weight of 'little noise in flat areas' (read on native-resolution crops).",
    "brisque": "Weight of BRISQUE (no-reference quality, LIVE-trained; no download needed).",
    "niqe": "Weight of NIQE (distance from pristine natural-photo statistics; no download needed).",
    "aesthetic": "Weight of the LAION aesthetic predictor (needs a CLIP model in models/clip-hf/ and the head in "
                 "models/aesthetic/; skipped with a note when missing).",
    "clip": "Weight of CLIP similarity between the photo and the mood text (needs models/clip-hf/ and a mood).",
    "image_reward": "Weight of ImageReward (needs models/ImageReward/ and pip install image-reward).",
    "vlm": "Weight of a 1-10 rating by the connected vision brain (one call per scored image: slow with MCTS).",
}
# Widget order: the first eight are those of earlier versions, so saved workflows keep their values.
ORDER = ("exposure", "clipping", "contrast", "colourfulness", "colour_cast", "sharpness", "noise")
LATER = ("brisque", "niqe", "aesthetic", "clip", "image_reward", "vlm")
MODELS = {"clip_model": ("clip", "CLIP folder (transformers layout) in models/clip-hf/, for aesthetic and CLIP similarity."),
          "aesthetic_model": ("aesthetic", "Aesthetic predictor head in models/aesthetic/ (e.g. sac+logos+ava1-l14-linearMSE.pth)."),
          "image_reward_model": ("image-reward", "Folder with ImageReward.pt and med_config.json in models/ImageReward/.")}


def _custom_default(name: str) -> float:
    """The custom preset starts from the fitted weights (statistics) and the paper's (learned components)."""
    return preset_weights("offline")[name] or preset_weights("paper")[name]


def _weight(name: str, optional: bool = False) -> io.Float.Input:
    return io.Float.Input(name, default=round(_custom_default(name), 3), min=0.0, max=10.0, step=0.05,
                          tooltip=_TIPS[name] + " Used by the custom preset only.", optional=optional)


class Reward(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        # inputs added after the first release are optional, so API-format prompts saved earlier still validate
        models = [io.Combo.Input(name, options=model_choices(kind), default=model_choices(kind)[0], tooltip=tip,
                                 optional=True) for name, (kind, tip) in MODELS.items()]
        return io.Schema(
            node_id="EditAgentsReward",
            display_name="Reward",
            category=CATEGORY,
            description="PhotoAgent's reward ensemble. Presets: offline (default; image statistics, BRISQUE and NIQE "
                        "with bands and weights fitted on photos, no downloads), paper (PhotoAgent's evaluator: CLIP "
                        "1.0, aesthetic 2.0, ImageReward 2.0, a VLM rating 0.8, over 5.8), custom (the weights on the node). "
                        "Missing learned components are skipped with a note and the weights renormalised. A "
                        "content-preservation penalty keeps edits from replacing the photo (offline and custom).",
            inputs=[
                *[_weight(n) for n in ORDER],
                io.Float.Input("preservation", default=RewardConfig().preservation, min=0.0, max=10.0, step=0.05,
                               tooltip="Penalty for changing the photo's structure (1 - similarity to the input). "
                                       "Higher = gentler edits."),
                *[_weight(n, optional=True) for n in LATER],
                io.String.Input("mood", default="", multiline=False, optional=True,
                                tooltip="Mood-guided mode: the target mood (e.g. 'warm golden hour'), read by CLIP "
                                        "similarity, ImageReward and the VLM rating; it reaches the MCTS Planner's perceiver too. Empty = "
                                        "the MCTS Planner's mood, or plain 'make it better' (scored against 'a "
                                        "high-quality photo')."),
                *models,
                # last, so the widget values of workflows saved before presets existed keep their places
                io.Combo.Input("preset", options=list(PRESETS), default="offline", optional=True,
                               tooltip="offline: fitted on photos, needs no models. paper: PhotoAgent's learned "
                                       "evaluator (needs its models or a vision brain). custom: the weights above."),
                BRAIN.Input("vision_brain", optional=True, tooltip="A vision-language brain for the VLM rating."),
            ],
            outputs=[REWARD.Output(display_name="reward", tooltip="The reward, for PhotoAgent and the MCTS Planner.")],
        )

    @classmethod
    def execute(cls, preservation: float, preset: str = "custom", mood: str = "", clip_model: str = FIRST_AVAILABLE,
                aesthetic_model: str = FIRST_AVAILABLE, image_reward_model: str = FIRST_AVAILABLE, vision_brain=None,
                **weights: float) -> io.NodeOutput:
        runtime = comfy_runtime({"clip": clip_model, "aesthetic": aesthetic_model, "image-reward": image_reward_model})
        # an API prompt saved before presets existed has no preset: its weights are honoured (custom)
        chosen = {name: weights.get(name, _custom_default(name)) for name in ORDER + LATER} if preset == "custom" else None
        config = RewardConfig(weights=chosen, preset=preset, preservation=preservation, mood=mood.strip())
        return io.NodeOutput(RewardEnsemble(config, learned_scorers(runtime, vision_of(vision_brain))))


NODES = [Reward]
