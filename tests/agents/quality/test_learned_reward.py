"""Learned reward components: real transformers CLIP classes with tiny random weights, the scripted VLM endpoint."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.quality.reward import COMPONENTS, Reward, RewardConfig, preset_weights

BOTH = {k: max(preset_weights("offline")[k], preset_weights("paper")[k]) for k in COMPONENTS}
from edit_agents.agents.rule_default import offline_brain as RuleBrain
from edit_agents.tools.models import ToolRuntime
from edit_agents.agents.brain import vision_of
from edit_agents.tools.scorers import VLMScorer, learned_scorers, load_aesthetic_head
from llm_server import Reply
from tiny_models import build_aesthetic_head, build_clip


@pytest.fixture(scope="module")
def reward_models(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reward-models")
    build_clip(root / "clip-hf" / "tiny-clip")
    build_aesthetic_head(root / "aesthetic" / "tiny-aesthetic.pth")
    build_aesthetic_head(root / "aesthetic-st" / "tiny-aesthetic.safetensors")
    build_aesthetic_head(root / "aesthetic-wide" / "wide.pth", in_features=32)
    return root


def runtime(root: Path, aesthetic: str = "aesthetic") -> ToolRuntime:
    return ToolRuntime({"clip-hf": [root / "clip-hf"], "aesthetic": [root / aesthetic],
                        "ImageReward": [root / "ImageReward"]})


def test_aesthetic_and_clip_run_on_tiny_models_and_load_once(reward_models, photos):
    rt = runtime(reward_models)
    reward = Reward(RewardConfig(preset="paper", mood="warm golden light"), learned_scorers(rt))
    assert {"aesthetic", "clip"} <= set(reward.active)
    first = reward.score(photos["chelsea"], photos["chelsea"])
    second = reward.score(photos["coffee"])
    for score in (first, second):
        rows = score.report()["components"]
        assert 0.0 <= rows["aesthetic"]["normalised"] <= 1.0 and np.isfinite(rows["aesthetic"]["raw"])
        assert -1.0 <= rows["clip"]["raw"] <= 1.0
    assert first.raw["aesthetic"] != second.raw["aesthetic"]  # it looks at the image
    assert sorted(rt.loads.values()) == [1, 1]  # CLIP and the head, each loaded once for both images
    # PhotoAgent's defaults: aesthetic weighs twice CLIP
    assert first.weights["aesthetic"] == pytest.approx(2 * first.weights["clip"])


def test_clip_similarity_reads_the_mood(reward_models, photos):
    scorers = learned_scorers(runtime(reward_models))
    warm = scorers["clip"].measure(photos["coffee"], "warm cosy morning")[0]
    cold = scorers["clip"].measure(photos["coffee"], "cold blue winter night")[0]
    assert warm != cold
    # one scoring text for every image (issue 30): the mood, else a fixed generic text, never an action's label
    no_mood = Reward(RewardConfig(preset="paper"), scorers)
    assert "clip" in no_mood.active and no_mood.scoring_text == "a high-quality photo"
    generic = scorers["clip"].measure(photos["coffee"], "a high-quality photo")[0]
    assert no_mood.score(photos["coffee"]).raw["clip"] == pytest.approx(generic, abs=1e-4)
    cosy = no_mood.with_mood("warm cosy morning")
    assert cosy.score(photos["coffee"]).raw["clip"] == pytest.approx(warm, abs=1e-4)
    assert no_mood.config.mood == "" and cosy.scorers is no_mood.scorers  # the same loaded models


def test_safetensors_head_and_mismatched_head(reward_models, photos):
    head = load_aesthetic_head(reward_models / "aesthetic-st" / "tiny-aesthetic.safetensors")
    assert head.layers[0].in_features == 16 and head.layers[7].out_features == 1
    wide = learned_scorers(runtime(reward_models, "aesthetic-wide"))["aesthetic"]
    with pytest.raises(ValueError, match="expects 32-d CLIP features but the CLIP model gives 16-d"):
        wide.measure(photos["coffee"], "")
    not_a_head = reward_models / "bogus" / "weights.pth"
    not_a_head.parent.mkdir()
    import torch

    torch.save({"fc.weight": torch.zeros(2, 2)}, not_a_head)
    with pytest.raises(ValueError, match="not a LAION aesthetic predictor"):
        load_aesthetic_head(not_a_head)


def test_missing_weights_are_skipped_with_notes_and_weights_renormalised(tmp_path, photos):
    rt = ToolRuntime({"clip-hf": [tmp_path / "clip-hf"], "aesthetic": [tmp_path / "aesthetic"],
                      "ImageReward": [tmp_path / "ImageReward"]})
    reward = Reward(RewardConfig(weights=BOTH, mood="moody"), learned_scorers(rt))
    notes = reward.skipped
    assert set(notes) == {"aesthetic", "clip", "image_reward", "vlm"}
    assert "clip-hf" in notes["clip"] and "openai/clip-vit-large-patch14" in notes["clip"]
    assert "image-reward" in notes["image_reward"]  # the package to install (or the folder when it is installed)
    assert "no vision brain" in notes["vlm"]
    score = reward.score(photos["astronaut"])
    assert sum(score.weights.values()) == pytest.approx(1.0)
    assert score.skipped == notes and "skipped" in reward.describe()


def vlm_brain(llm):
    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm", backoff=0.01))


def test_vlm_rating_through_a_brain_is_validated_and_cached(llm, photos):
    # the first answer is out of range (15 of 10): the brain re-asks, quoting the error
    llm.reset(Reply({"score": 15}), Reply({"score": 7, "reason": "good light, slightly soft"}),
              Reply({"score": 4, "reason": "dark"}))
    scorer = VLMScorer(vision_of(vlm_brain(llm)))
    assert scorer.unavailable() is None
    reward = Reward(RewardConfig(preset="paper"), {"vlm": scorer})
    a = reward.score(photos["chelsea"])
    assert a.raw["vlm"] == 7 and a.components["vlm"] == pytest.approx(6 / 9)
    again = reward.score(photos["chelsea"])
    assert again.raw["vlm"] == 7  # the same image is not rated twice
    b = reward.score(photos["camera"])
    assert b.raw["vlm"] == 4
    assert len(llm.seen) == 3 and all(len(req.images()) == 1 for req in llm.seen)
    assert "15" in str(llm.seen[1].body["messages"][-1])  # the re-ask quotes what was wrong
    usage = reward.usage()  # two ratings (one re-asked), each with the endpoint's token counts
    assert usage["vlm_calls"] == 2 and usage["vlm_tokens"] > 0


def test_a_search_on_the_vlm_rating_counts_its_tokens_in_the_trace(llm, photos):
    from edit_agents.agents.photoagent.search import MCTSSettings, mcts_enhance
    from edit_agents.tools import default_registry

    llm.reset(responder=lambda seen: Reply({"score": 6}))
    reward = Reward(RewardConfig(preset="custom", weights={"exposure": 1.0, "vlm": 1.0}),
                    {"vlm": VLMScorer(vision_of(vlm_brain(llm)))})
    result = mcts_enhance(photos["chelsea"][::4, ::4] * 0.3, default_registry().subset(categories=["classic"]), reward,
                          MCTSSettings(simulations=4, depth=1, max_steps=1, branching=2, preview_side=64))
    steps = [s for s in result.trace.steps if s.action.startswith(("accept", "revert"))]
    assert result.trace.summary["vlm_tokens"] > 0 and result.trace.summary["vlm_calls"] == len(llm.seen)
    assert steps and sum(s.tokens for s in steps) > 0


def test_vlm_rating_needs_a_seeing_brain():
    assert "cannot see" in VLMScorer(vision_of(RuleBrain())).unavailable()
    assert Reward(RewardConfig(weights=BOTH), {"vlm": VLMScorer(None)}).skipped["vlm"] == "no vision brain connected"
