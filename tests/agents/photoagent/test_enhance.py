import json

import numpy as np
import pytest

from edit_agents.agents.photoagent.enhance import EnhanceSettings, Interrupted, enhance
from edit_agents.agents.quality.reward import ClassicReward, RewardConfig, fitted_reward, normalise
from edit_agents.agents.quality.metrics import image_statistics, structure_similarity
from edit_agents.agents.trace import Trace
from edit_agents.tools import default_registry


@pytest.fixture(scope="module")
def tools():
    return default_registry()


def components(img):
    return normalise(image_statistics(img))


def test_reward_components_move_the_right_way(photos):
    img = photos["astronaut"]
    good = components(img)
    assert components(img * 0.35)["exposure"] < good["exposure"] - 0.3
    bands = fitted_reward().bands
    blown = image_statistics(np.clip(img * 2.5, 0, 1))["clip_bright"]
    assert bands["clip_bright"](blown) < bands["clip_bright"](image_statistics(img)["clip_bright"]) - 0.3
    assert components(img * 0.3 + 0.35)["exposure"] < good["exposure"] - 0.3  # lifted blacks, unused headroom
    cast = np.clip(img * np.array([1.0, 0.85, 0.55], np.float32), 0, 1)
    assert components(cast)["colour_cast"] < good["colour_cast"] - 0.1
    noisy = np.clip(img + np.random.default_rng(1).normal(0, 0.07, img.shape).astype(np.float32), 0, 1)
    assert components(noisy)["noise"] < good["noise"] - 0.3
    blurred = default_registry().call("gaussian_blur", img, {"sigma": 2.5})[0]
    assert components(blurred)["sharpness"] < good["sharpness"] - 0.3  # read at native resolution


def test_structure_similarity_ignores_tone_but_not_blur(photos, tools):
    img = photos["chelsea"]
    assert structure_similarity(img, tools.call("exposure", img, {"stops": 0.7})[0]) > 0.97
    assert structure_similarity(img, tools.call("gaussian_blur", img, {"sigma": 6})[0]) < 0.9


def test_reward_config_rejects_bad_weights():
    with pytest.raises(ValueError, match="unknown reward components"):
        RewardConfig(weights={"beauty": 1.0})
    with pytest.raises(ValueError, match="at least one"):
        RewardConfig(weights={"exposure": 0.0})
    with pytest.raises(ValueError, match="finite"):
        RewardConfig(weights={"exposure": float("nan")})


@pytest.mark.parametrize("degrade", ["under", "flat", "cast"])
def test_enhance_repairs_degraded_photos(photos, tools, degrade):
    # coffee is a warm scene, so the cast case starts from the neutral astronaut photo
    clean = photos["astronaut" if degrade == "cast" else "coffee"]
    bad = {"under": clean * 0.4, "flat": clean * 0.45 + 0.3,
           "cast": np.clip(clean * np.array([0.7, 0.9, 1.0], np.float32), 0, 1)}[degrade]
    result = enhance(bad, tools)
    assert result.score_after > result.score_before + 0.01  # more than enhance's min_gain
    assert result.actions, "no edit was kept"
    if degrade == "cast":
        # the cast itself is reduced (the exact clean tone is not knowable without a reference)
        assert image_statistics(result.image)["colour_cast"] < image_statistics(bad)["colour_cast"] * 0.7
    else:
        # closer to the clean original than the degraded input was
        assert np.abs(result.image - clean).mean() < np.abs(bad - clean).mean()


def test_good_photo_is_left_nearly_untouched(photos, tools):
    img = photos["astronaut"]
    result = enhance(img, tools)
    assert len(result.actions) <= 1
    assert np.abs(result.image - img).mean() < 0.03


def test_loop_is_bounded_and_traced(photos, tools):
    settings = EnhanceSettings(max_steps=2, candidates=3, top_k=1, min_gain=0.0)
    result = enhance(photos["rocket"], tools, settings=settings)
    runs = [s for s in result.trace.steps if s.role == "executor"]
    assert len(runs) <= settings.max_steps * settings.candidates
    assert len(result.actions) <= 2 and len(result.steps) == len(result.actions) + 1
    back = Trace.from_json(result.trace.to_json())
    assert back.to_dict() == json.loads(result.trace.to_json())
    assert back.summary["steps"] == len(result.actions)


def test_interrupt_between_steps(photos, tools):
    calls = []

    def stop():
        calls.append(1)
        if len(calls) > 2:
            raise Interrupted("user pressed cancel")

    with pytest.raises(Interrupted):
        enhance(photos["coffee"] * 0.4, tools, should_stop=stop)  # a photo with something to fix


def test_empty_toolbox_and_bad_settings(photos):
    with pytest.raises(ValueError, match="no tools"):
        enhance(photos["rocket"], default_registry().subset(names=[]))
    with pytest.raises(ValueError, match="max_steps"):
        EnhanceSettings(max_steps=0)


def test_reward_accepts_a_deterministic_repeat(photos):
    r = ClassicReward()
    assert r.score(photos["chelsea"]).total == r.score(photos["chelsea"]).total
