"""The defect space (bench/defects.py) and what the rule perceiver makes of its restoration families."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from defects import FAMILIES, GROUPS, families, family_of_parts, make  # noqa: E402

from edit_agents.agents.perceiver import RulePerceiver  # noqa: E402
from edit_agents.agents.reward import image_statistics, texture_crops  # noqa: E402
from edit_agents.tools import default_registry  # noqa: E402
from edit_agents.tools.imageops import resize_longest  # noqa: E402


@pytest.fixture(scope="module")
def clean(photos):
    return np.ascontiguousarray(resize_longest(photos["coffee"], 256))


def test_every_family_changes_the_photo_reproducibly(clean):
    assert {f.group for f in FAMILIES.values()} | {"combination"} == set(GROUPS)
    for family in families():
        img, case = make(clean, "coffee", family, 0)
        again, _ = make(clean, "coffee", family, 0)
        other, _ = make(clean, "coffee", family, 1)
        assert img.shape == clean.shape and img.dtype == np.float32 and 0 <= img.min() and img.max() <= 1
        assert np.array_equal(img, again), family  # the same case is the same image
        assert np.abs(img - clean).mean() > 1e-3, family  # the defect is there
        assert not np.array_equal(img, other), family  # strengths are drawn per case
        assert case.label() != "clean" and family_of_parts(case)
    img, case = make(clean, "coffee", "clean", 0)
    assert img is clean and case.label() == "clean"


def test_combinations_mix_two_or_three_groups(clean):
    for index in range(6):
        _, case = make(clean, "coffee", "combination", index)
        groups = [FAMILIES[name].group for name, _ in case.parts]
        assert 2 <= len(groups) <= 3 and len(set(groups)) == len(groups), case.label()


def perceive(img):
    crops = texture_crops(img)
    return RulePerceiver().perceive(image_statistics(img, crops), 8, default_registry().names(), crops=crops)


def test_jpeg_blocks_are_seen_and_deblocked(photos):
    img = np.ascontiguousarray(resize_longest(photos["coffee"], 512))
    bad, case = make(img, "coffee", "jpeg", 0)
    seen = perceive(bad)
    finding = next(f for f in seen.findings if f.check == "JPEG blocks")
    assert finding.defect and finding.value > 1.3, case.label()
    assert [a.tool for a in seen.actions if a.tool == "deblock"], seen.actions
    assert "sharpen" not in {a.tool for a in seen.actions}  # sharpening blocks makes them worse
    clean_seen = perceive(img)
    assert not next(f for f in clean_seen.findings if f.check == "JPEG blocks").defect


def test_motion_blur_gets_a_deconvolution_with_the_measured_kernel(photos):
    img = np.ascontiguousarray(resize_longest(photos["camera"], 512))
    bad, case = make(img, "camera", "motion", 0)
    truth = dict(case.parts[0][1])
    calls = [a for a in perceive(bad).actions if a.tool == "deconvolve"]
    assert calls, case.label()
    assert calls[0].params["kind"] == "motion"
    assert abs(calls[0].params["length"] - truth["length"]) < 1.5
    assert abs((calls[0].params["angle"] - truth["angle"] + 90) % 180 - 90) < 5
    assert not [a for a in perceive(img).actions if a.tool in ("deconvolve", "deblock")]


def test_the_reward_sees_a_jpeg_grid_and_the_search_removes_it_without_sharpening_it_back(photos):
    from edit_agents.agents.mcts import mcts_enhance
    from edit_agents.agents.reward import Reward, RewardConfig

    img = np.ascontiguousarray(resize_longest(photos["chelsea"], 384))
    bad, case = make(img, "chelsea", "jpeg", 0)
    reward = Reward()
    deblocked = default_registry().call("deblock", bad, {"strength": 1.0})[0]
    before, after = reward.score(bad, bad), reward.score(deblocked, bad)
    assert before.raw["grid_step"] * 255 > 1.8  # a visible grid
    assert after.raw["grid_step"] < before.raw["grid_step"]
    assert after.total > before.total  # the compression penalty pays for the deblock
    without = Reward(RewardConfig(compression=0.0))
    assert without.score(deblocked, bad).total - without.score(bad, bad).total < after.total - before.total
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]), reward)
    tools = [a.tool for a in result.actions]
    assert "deblock" in tools, (case.label(), tools)
    # a sharpen or a deconvolution after a deblock brings the blocks back (ToolSpec.conflicts)
    assert not {"sharpen", "deconvolve"} & set(tools[tools.index("deblock"):]), tools


def test_a_reward_can_be_handed_another_fit(tmp_path):
    import json

    from edit_agents.agents.reward import FITTED, FittedReward, Reward

    data = json.loads(FITTED.read_text())
    data["weights"] = {k: (1.0 if k == "noise" else 0.0) for k in data["weights"]}
    path = tmp_path / "noise_only.json"
    path.write_text(json.dumps(data))
    reward = Reward(fitted=FittedReward.load(path))
    assert set(reward.active) == {"noise"}
    assert set(Reward().active) != {"noise"}
