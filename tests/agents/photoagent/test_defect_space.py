"""The defect space (tests/support/defects.py) and what the rule perceiver makes of its restoration families."""
import numpy as np
import pytest

from defects import FAMILIES, GROUPS, families, family_of_parts, make
from helpers import PACK_ROOT, TEST_DATA

from edit_agents.agents.quality.perception import RulePerceiver  # noqa: E402
from edit_agents.agents.quality.metrics import image_statistics, texture_crops  # noqa: E402
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


def test_every_held_out_family_changes_the_photo_reproducibly(clean):
    """The held-out families (measured, never tuned on) are made as the others are, in their own groups."""
    from defects import HELD_OUT, held_out

    assert held_out() == list(HELD_OUT) and not set(HELD_OUT) & set(FAMILIES)
    for family in held_out():
        img, case = make(clean, "coffee", family, 0)
        again, _ = make(clean, "coffee", family, 0)
        _, other = make(clean, "coffee", family, 1)
        assert img.shape == clean.shape and 0 <= img.min() and img.max() <= 1, family
        assert np.array_equal(img, again), family
        # strengths are drawn per case (the hexagonal aperture's unsampled grid can give two radii one kernel)
        assert case.label() != other.label(), family
        assert np.abs(img - clean).mean() > 1e-3 and case.group in GROUPS, family


def test_combinations_mix_two_or_three_groups(clean):
    for index in range(6):
        _, case = make(clean, "coffee", "combination", index)
        groups = [FAMILIES[name].group for name, _ in case.parts]
        assert 2 <= len(groups) <= 3 and len(set(groups)) == len(groups), case.label()


def perceive(img):
    crops = texture_crops(img)
    return RulePerceiver().perceive(image_statistics(img, crops), 8, default_registry().names(), crops=crops)


def found_scored_and_removed(img, bad, check, tool, margin=0.0):
    """The perceiver finds ``check`` on ``bad`` and not on ``img`` and proposes ``tool``; the reward scores ``bad``
    more than ``margin`` below ``img``; the search keeps ``tool``. Returns the finding and a function giving a
    result's SSIM to ``img`` with the search's result."""
    from skimage.metrics import structural_similarity

    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    seen = perceive(bad)
    finding = next(f for f in seen.findings if f.check == check)
    assert finding.defect, finding.line()
    assert tool in {a.tool for a in seen.actions}
    assert not any(f.defect for f in perceive(img).findings if f.check == check)  # (a black-and-white photo: no colour check)
    reward = Reward()
    assert reward.score(bad).total < reward.score(img).total - margin  # the reward sees it too
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]), reward)
    assert tool in {a.tool for a in result.actions}, result.actions

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    return finding, seen, ssim, result


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


def test_a_shaken_photo_whose_fine_detail_reads_sharp_is_found_by_its_kernel():
    from photoset import load  # tests/support/photoset.py: the deep field is not among the test photos

    img = np.ascontiguousarray(load("hubble_deep_field", 512))
    bad, case = make(img, "hubble_deep_field", "motion", 0)
    seen = perceive(bad)
    blur = next(f for f in seen.findings if f.check == "blur")
    # detail across the line survives: fine detail over every direction reads past the limit, the kernel does not
    assert blur.value > 0.9 and blur.defect, blur.line()
    tools = {a.tool for a in seen.actions}
    assert "deconvolve" in tools and "sharpen" not in tools, seen.actions  # a measured kernel is undone, not sharpened
    assert next(a for a in seen.actions if a.tool == "deconvolve").params["kind"] == "motion"
    assert not {"deconvolve", "sharpen"} & {a.tool for a in perceive(img).actions}


def test_an_elongated_blur_whose_fine_detail_reads_sharp_is_found_by_its_kernel():
    """A Gaussian blur 2.2 px tall and 0.5 px wide on the deep field: its detail across reads past the sharpness limit,
    as a shaken photo's does, and its fall-off is the evidence (no clean photo's reads wider than 0.7 px)."""
    from photoset import load
    from scipy.ndimage import gaussian_filter
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(load("hubble_deep_field", 512))
    bad = np.clip(gaussian_filter(img, (2.2, 0.5, 0), mode="reflect"), 0, 1).astype(np.float32)
    seen = perceive(bad)
    blur = next(f for f in seen.findings if f.check == "blur")
    assert blur.value > 0.9 and blur.defect, blur.line()
    call = next(a for a in seen.actions if a.tool == "deconvolve")
    assert call.params["kind"] == "gaussian" and 0 < call.params["sigma_minor"] < 0.6 * call.params["sigma"], call
    assert abs(call.params["sigma"] - 2.2) < 0.4 and abs(call.params["angle"] - 90) < 5, call
    assert "sharpen" not in {a.tool for a in seen.actions}
    out = default_registry().call("deconvolve", bad, call.params)[0]

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    assert ssim(out) > ssim(bad) + 0.02, (ssim(bad), ssim(out))


def test_the_search_estimates_the_photo_s_kernel_once_a_step(photos, monkeypatch):
    import edit_agents.agents.photoagent.search as search

    img = np.ascontiguousarray(resize_longest(photos["coffee"], 256))
    bad, _ = make(img, "coffee", "motion", 1)
    # dimmed as well, so the search tries tone edits on many states (a shake alone is answered by its deconvolution)
    bad = (bad * 0.4).astype(np.float32)
    calls = []

    def counted(crops):
        calls.append(len(crops))
        return estimate(crops)
    estimate = search.estimate_kernel
    monkeypatch.setattr(search, "estimate_kernel", counted)
    result = search.mcts_enhance(bad, default_registry().subset(categories=["classic"]))
    steps = len(result.trees)  # the steps searched, kept or not
    assert steps >= 1 and 1 <= len(calls) <= steps, (len(calls), steps)
    assert result.trace.summary["tool_calls"] > steps  # many states were perceived, each without its own estimate


def test_a_right_deconvolution_is_charged_a_quarter_and_the_search_keeps_it(photos):
    from edit_agents.agents.photoagent.enhance import through_forward_models
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.records import ToolCall
    from edit_agents.agents.quality.reward import Reward
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(resize_longest(photos["camera"], 512))
    bad, case = make(img, "camera", "motion", 0)  # shaken by about 8 px: the old reward turned its deconvolution down
    call = next(a for a in perceive(bad).actions if a.tool == "deconvolve")
    tools = default_registry().subset(categories=["classic"])
    out = tools.call(call.tool, bad, call.params)[0]
    reward = Reward()
    charged = reward.score(out, bad).components["preservation"]
    seen = through_forward_models(tools, [call], out)
    quartered = reward.score(out, bad, as_input=seen).components["preservation"]
    assert charged < quartered < 1.0  # charged a quarter: something is still charged
    assert through_forward_models(tools, [ToolCall("gamma", {"gamma": 1.2})], out) is None  # no model, no reading
    result = mcts_enhance(bad, tools, reward)
    assert "deconvolve" in {a.tool for a in result.actions}, result.actions

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    assert ssim(result.image) > ssim(bad) + 0.05, case.label()


# the rocket's gain is the smaller since only the luminance is deconvolved: its dusk sky's colour edges stay as blurred
# as they came (0.815 -> 0.826; 0.85 when every channel was, on this float array; docs/notes/2026-11-generalisation/)
@pytest.mark.parametrize("photo, index, gain", [("astronaut", 0, 0.03), ("rocket", 1, 0.008)])
def test_a_shake_is_undone_and_the_charge_left_turns_down_the_deconvolution_that_rings(photos, photo, index, gain):
    """The astronaut shaken by 15 px: its deconvolution (SSIM 0.70 -> 0.82) was turned down while a restoration was
    charged half (reward.RESTORATION_CHARGE). The rocket shaken by 14 px: at strength 1.0 its deconvolution rings
    (SSIM 0.815 -> 0.74), which the reading through the kernel cannot see; the quarter still charged keeps 0.6."""
    from edit_agents.agents.quality import reward as reward_module
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(resize_longest(photos[photo], 512))
    bad, case = make(img, photo, "motion", index)
    tools = default_registry().subset(categories=["classic"])
    assert 0.0 < reward_module.RESTORATION_CHARGE < 0.5 and Reward().config.restoration_charge == 0.25
    result = mcts_enhance(bad, tools, Reward())

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    kept = [a for a in result.actions if a.tool == "deconvolve"]
    assert kept and all(a.params["strength"] < 1.0 for a in kept), (case.label(), result.actions)
    assert ssim(result.image) > ssim(bad) + gain, case.label()


def test_the_restoration_charge_is_a_setting_of_the_reward(photos):
    """RewardConfig.restoration_charge: charged in full, a deconvolution is read as its change; charged nothing, as
    the photo its kernel says it was given; a share outside 0..1 is refused."""
    from edit_agents.agents.quality.metrics import structure_similarity
    from edit_agents.agents.quality.reward import Reward, RewardConfig, preserved

    img = np.ascontiguousarray(resize_longest(photos["camera"], 256))
    bad, _ = make(img, "camera", "motion", 0)
    restored = default_registry().call("deconvolve", bad, {"strength": 1.0})[0]
    as_input = default_registry().call("gaussian_blur", restored, {"sigma": 2.0})[0]
    direct, through = structure_similarity(bad, restored), structure_similarity(bad, as_input)
    assert direct != pytest.approx(through)
    assert preserved(bad, restored, as_input, charge=1.0) == pytest.approx(direct)
    assert preserved(bad, restored, as_input, charge=0.0) == pytest.approx(through)
    full = Reward(RewardConfig(restoration_charge=1.0)).score(restored, bad, as_input=as_input)
    none = Reward(RewardConfig(restoration_charge=0.0)).score(restored, bad, as_input=as_input)
    assert full.raw["structure_similarity"] == pytest.approx(direct)
    assert none.raw["structure_similarity"] == pytest.approx(through)
    with pytest.raises(ValueError, match="restoration_charge"):
        RewardConfig(restoration_charge=1.5)


def test_softness_credits_a_deconvolution_that_a_fit_made_without_the_blur_gives_nothing(photos):
    """The reward fitted without the Gaussian-blur family (bench/results/lofo_fits) ends its sharpness band at 0.27
    and its BRISQUE band at 40, so the rocket's 2 px Gaussian blur (sharpness 0.19, BRISQUE 80) and its deconvolution
    score alike and the search kept the blur. The softness penalty, its limit read on clean photos alone, is not
    fitted: under the same fit the search deconvolves, nearer the sharp photo."""
    import math

    from edit_agents.agents.quality.defects.blur import SOFT_FLOOR, SOFT_LIMIT
    from edit_agents.agents.quality.metrics import raw_statistics
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import FittedReward, Reward, RewardConfig, excess
    from skimage.metrics import structural_similarity

    for name, photo in photos.items():  # clean photos are not soft
        assert excess(raw_statistics(photo, iqa=()), "softness") == 0.0, name
    # a picture with no fine detail at all is not a blur without end: the shortfall stops at the floor
    grey = np.full((256, 256, 3), 0.5, np.float32)
    assert excess(raw_statistics(grey, iqa=()), "softness") == pytest.approx(math.log(SOFT_LIMIT / SOFT_FLOOR))
    img = np.ascontiguousarray(resize_longest(photos["rocket"], 512))
    bad, case = make(img, "rocket", "gaussian-blur", 0)
    assert excess(raw_statistics(bad, iqa=()), "softness") > 0.5, case.label()
    fit = FittedReward.load(PACK_ROOT / "bench" / "results" / "lofo_fits"
                            / "gaussian-blur.json")
    tools = default_registry().subset(categories=["classic"])
    kept = mcts_enhance(bad, tools, Reward(fitted=fit))
    blind = mcts_enhance(bad, tools, Reward(RewardConfig(softness=0.0), fitted=fit))

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    assert "deconvolve" not in {a.tool for a in blind.actions}, blind.actions
    assert "deconvolve" in {a.tool for a in kept.actions}, kept.actions
    assert ssim(kept.image) > ssim(bad) + 0.03, (case.label(), kept.actions)


def test_the_reward_sees_a_jpeg_grid_and_the_search_removes_it_without_sharpening_it_back(photos):
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward, RewardConfig

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

    from edit_agents.agents.quality.reward import FITTED, FittedReward, Reward

    data = json.loads(FITTED.read_text())
    data["weights"] = {k: (1.0 if k == "noise" else 0.0) for k in data["weights"]}
    path = tmp_path / "noise_only.json"
    path.write_text(json.dumps(data))
    reward = Reward(fitted=FittedReward.load(path))
    assert set(reward.active) == {"noise"}
    assert set(Reward().active) != {"noise"}


# --- a veil over the whole photo: fading, haze, lifted blacks ------------------------------------------------

def iqa_photo(name):
    from PIL import Image

    from edit_agents.tools.imageops import as_image

    path = TEST_DATA / "iqa" / f"{name}.png"
    return np.ascontiguousarray(resize_longest(as_image(np.asarray(Image.open(path).convert("RGB"))), 256))


def test_levels_pulls_a_lifted_black_point_back_and_keeps_greys_grey(clean):
    tools = default_registry()
    lifted = 0.2 + 0.8 * clean
    back = tools.call("levels", lifted, {"black": 0.2})[0]
    assert np.abs(back - clean).max() < 1e-4
    grey = np.full((8, 8, 3), 0.5, np.float32)
    out = tools.call("levels", grey, {"black": 0.1, "white": 0.9, "gamma": 1.5})[0]
    assert np.ptp(out, axis=2).max() < 1e-6 and out.mean() > 0.5  # gamma above 1 brightens, channels alike
    schema = tools.get("levels").params
    assert max(p.maximum for p in schema if p.name == "black") < min(p.minimum for p in schema if p.name == "white")


def test_the_veil_is_low_on_clean_photos_and_reads_a_fade(photos):
    from edit_agents.agents.quality.defects.veil import VEIL_LIMIT

    scenes = [np.ascontiguousarray(resize_longest(photos[n], 256)) for n in ("astronaut", "chelsea", "coffee", "rocket", "camera")]
    scenes += [iqa_photo(n) for n in ("I03", "I04", "I06", "I08", "I19")]
    for img in scenes:
        assert image_statistics(img)["veil"] < VEIL_LIMIT
        dark = image_statistics(0.5 * img)["veil"]
        assert abs(dark - image_statistics(img)["veil"]) < 0.01  # a gain is not a veil
        for black in (0.12, 0.2, 0.3):
            stats = image_statistics(black + (1 - black) * img)
            assert stats["veil"] > VEIL_LIMIT
            floor = stats["veil"] * stats["white_level"]
            assert black - 1e-4 <= floor < black + 0.08  # the floor is the lifted black, plus the photo's own


@pytest.mark.parametrize("family", ["lifted-blacks", "washed-out", "faded-print", "flat"])
def test_a_veiled_photo_scores_below_its_original(photos, family):
    """The fitted bands alone rate most fades as well as the original (their calibration photos include
    flat textures with lifted blacks); the veil term ranks the original first in most cases."""
    from edit_agents.agents.quality.reward import Reward, RewardConfig

    scenes = {n: np.ascontiguousarray(resize_longest(photos[n], 256)) for n in ("chelsea", "coffee", "rocket")}
    scenes |= {n: iqa_photo(n) for n in ("I03", "I04", "I06", "I08", "I19")}
    with_veil, without = Reward(), Reward(RewardConfig(veil=0.0))
    wins = {True: 0, False: 0}
    n = 0
    for name, img in scenes.items():
        for index in range(2):
            bad, _ = make(img, name, family, index)
            n += 1
            for reward, key in ((with_veil, True), (without, False)):
                wins[key] += reward.score(img, bad).total > reward.score(bad, bad).total
    assert wins[True] >= 0.75 * n and wins[True] > wins[False], (family, wins, n)


def test_a_fade_gets_a_black_point_below_its_veil_and_the_search_takes_the_veil_out(photos):
    """A fade in display values: the veil finding offers a black point below the veil and a dehaze (a veil in linear
    light); which way the veil was laid no statistic tells, and the reward chooses (here the dehaze, SSIM 0.82 -> 0.92,
    where the black point would give 0.94-0.97: docs/notes/2026-11-generalisation/). Either way the veil is gone."""
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(resize_longest(photos["coffee"], 384))
    bad = 0.18 + 0.82 * img
    seen = perceive(bad)
    finding = next(f for f in seen.findings if f.check == "veil")
    assert finding.defect and "dark channel" in finding.reason
    levels = [a for a in seen.actions if a.tool == "levels"]
    stats = image_statistics(bad)
    assert levels and all(0 < a.params["black"] <= stats["veil"] * stats["white_level"] for a in levels)
    assert "dehaze" in {a.tool for a in seen.actions}
    assert not next(f for f in perceive(img).findings if f.check == "veil").defect
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]), Reward())
    assert {"levels", "dehaze"} & {a.tool for a in result.actions}, result.actions
    assert not next(f for f in perceive(np.clip(result.image, 0, 1)).findings if f.check == "veil").defect
    ssim = lambda x: structural_similarity(x, img, channel_axis=2, data_range=1.0)  # noqa: E731
    assert ssim(np.clip(result.image, 0, 1)) > ssim(bad) + 0.05


# --- colour noise ---------------------------------------------------------------------------------------------

def test_colour_noise_is_measured_and_removed_without_touching_the_luminance(photos):
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward
    from edit_agents.agents.quality.defects.chroma import CHROMA_NOISE_LIMIT
    from edit_agents.tools.imageops import luminance
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(resize_longest(photos["coffee"], 384))
    bad, case = make(img, "coffee", "chroma-noise", 0)
    tools = default_registry()
    fixed = tools.call("chroma_denoise", bad, {"strength": 1.0})[0]
    moved = np.abs(luminance(fixed) - luminance(bad))
    assert (moved > 1e-5).mean() < 0.01 and moved.mean() < 1e-3  # the brightness is kept but where a channel clips
    stats = {name: image_statistics(x)["chroma_noise"] for name, x in (("clean", img), ("bad", bad), ("fixed", fixed))}
    assert stats["clean"] < CHROMA_NOISE_LIMIT / 3 and stats["bad"] > CHROMA_NOISE_LIMIT > stats["fixed"], stats
    seen = perceive(bad)
    assert next(f for f in seen.findings if f.check == "colour noise").defect
    assert "chroma_denoise" in {a.tool for a in seen.actions}
    assert not next(f for f in perceive(img).findings if f.check == "colour noise").defect
    result = mcts_enhance(bad, tools.subset(categories=["classic"]), Reward())
    assert "chroma_denoise" in [a.tool for a in result.actions], case.label()
    ssim = lambda x: structural_similarity(x, img, channel_axis=2, data_range=1.0)  # noqa: E731
    assert ssim(np.clip(result.image, 0, 1)) > ssim(bad) + 0.1


def test_garish_colour_is_brought_back_into_the_range_of_clean_photos(photos):
    from edit_agents.agents.quality.defects.saturation import COLOURFUL_TARGETS, OVER_COLOURFUL, OVER_GAMUT

    tools = default_registry()
    for name in ("astronaut", "coffee", "chelsea"):  # astronaut is the most colourful of them, 0.23
        img = np.ascontiguousarray(resize_longest(photos[name], 256))
        assert not next(f for f in perceive(img).findings if f.check == "over-saturation").defect, name
        garish = tools.call("saturation", img, {"amount": 1.4})[0]
        seen = perceive(garish)
        stats = image_statistics(garish)
        assert next(f for f in seen.findings if f.check == "over-saturation").defect == \
            (stats["colourfulness"] > OVER_COLOURFUL and stats["gamut_clip"] > OVER_GAMUT)
        assert name != "astronaut" or [a for a in seen.actions if a.tool == "saturation"]
        for action in (a for a in seen.actions if a.tool == "saturation"):
            spread = image_statistics(tools.call("saturation", garish, action.params)[0])["colourfulness"]
            assert min(COLOURFUL_TARGETS) - 0.03 < spread < max(COLOURFUL_TARGETS) + 0.03, (name, action.label())


def test_vivid_colours_inside_the_files_range_are_the_scenes(photos):
    """A picture made vivid (a rendered or graded one) whose colours stay inside 0..1 is left as it is; the same
    spread reached by raising the saturation past the file's range, clipping channels, is garish and brought back."""
    from edit_agents.agents.quality.metrics import gamut_clipped
    from edit_agents.agents.quality.defects.saturation import OVER_COLOURFUL, OVER_GAMUT

    img = np.ascontiguousarray(resize_longest(photos["coffee"], 256)).astype(np.float32)
    grey = img.mean(axis=2, keepdims=True)
    # the colours stretched 3x from the grey, rolled off smoothly before either end: nothing reaches 0 or 1
    vivid = (0.5 + 0.49 * np.tanh((grey - 0.5 + 3.0 * (img - grey)) / 0.49)).astype(np.float32)
    clipped = np.clip(grey + 3.0 * (img - grey), 0.0, 1.0).astype(np.float32)
    for picture, garish in ((vivid, False), (clipped, True)):
        stats = image_statistics(picture)
        assert stats["colourfulness"] > OVER_COLOURFUL  # vivid past the clean photos either way
        assert (stats["gamut_clip"] > OVER_GAMUT) == garish, stats["gamut_clip"]
        seen = perceive(picture)
        assert next(f for f in seen.findings if f.check == "over-saturation").defect == garish
        assert bool([a for a in seen.actions if a.tool == "saturation"]) == garish
    flat = np.zeros((8, 8), np.float32)
    assert gamut_clipped(flat, flat) == 0.0  # no colourful pixel: nothing clipped


def test_a_pale_picture_in_strong_colours_is_no_fade():
    """A bright rendered landscape: a sky and a meadow in strong colours, no dark thing in it, so its darkest tones sit
    near the middle, as a fade's do. But each colour reaches black in one channel, which a fade, a contrast cut or a
    lift takes away from every colour: no low contrast, and no tone edit offered. The same picture faded is found."""
    from edit_agents.agents.quality.defects.tones import FADED_FLOOR, LIFTED_BLACK

    yy, xx = np.mgrid[0:256, 0:256] / 255.0
    sky = np.stack([0.012 + 0 * yy, 0.55 + 0.2 * yy, 0.95 + 0 * yy], axis=2)
    meadow = np.stack([0.35 + 0.1 * np.sin(xx * 20), 0.85 + 0 * yy, 0.012 + 0.1 * (1 - yy)], axis=2)
    pale = np.where((yy < 0.5 + 0.1 * np.sin(xx * 6))[..., None], sky, meadow)
    pale[(yy - 0.2) ** 2 + (xx - 0.75) ** 2 < 0.01] = [0.99, 0.92, 0.2]  # a sun
    for picture, faded in ((pale.astype(np.float32), False), ((0.7 * pale + 0.3).astype(np.float32), True)):
        stats = image_statistics(picture)
        assert stats["black_level"] > LIFTED_BLACK
        assert (stats["veil"] > FADED_FLOOR) == faded, stats["veil"]
        seen = perceive(picture)
        low = next(f for f in seen.findings if f.check == "low contrast")
        assert low.defect == faded, low.line()
        assert bool({a.tool for a in seen.actions} & {"levels", "contrast", "gamma"}) == faded, seen.actions


def test_a_picture_in_one_strong_colour_is_neither_dark_nor_a_wrong_balance(photos):
    """A picture drawn in one saturated colour (red on black) reads dim in luminance and past any cast a camera's white
    balance makes: it is left as it is. A tungsten lamp under a daylight balance, the largest such error, and a darkened
    photo are still found."""
    from defects import to_linear, to_srgb

    from edit_agents.agents.quality.defects.cast import SCENE_CAST
    from edit_agents.agents.quality.defects.exposure import UNDER_CHANNEL
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    coffee = np.ascontiguousarray(resize_longest(photos["coffee"], 256)).astype(np.float32)
    lum = coffee.mean(axis=2)
    red = np.stack([lum, 0.08 * lum, 0.04 * lum], axis=2).astype(np.float32)  # a red monochrome, as on a poster
    stats = image_statistics(red)
    assert stats["white_level"] < 0.5 and stats["channel_white"] >= UNDER_CHANNEL and stats["colour_cast"] > SCENE_CAST
    seen = perceive(red)
    assert not next(f for f in seen.findings if f.check == "under-exposure").defect
    cast = next(f for f in seen.findings if f.check == "colour cast")
    assert not cast.defect and "own colour" in cast.reason
    assert not {a.tool for a in seen.actions} & {"white_balance", "exposure", "gamma", "auto_levels"}
    assert mcts_enhance(red, default_registry().subset(categories=["classic"]), Reward()).actions == []

    tungsten = to_srgb(np.clip(to_linear(coffee) * np.array([1.0, 0.448, 0.126]), 0, 1)).astype(np.float32)
    assert 0.5 < image_statistics(tungsten)["colour_cast"] < SCENE_CAST
    assert "white_balance" in {a.tool for a in perceive(tungsten).actions}
    dark = to_srgb(to_linear(coffee) * 0.15).astype(np.float32)
    assert image_statistics(dark)["channel_white"] < UNDER_CHANNEL
    assert next(f for f in perceive(dark).findings if f.check == "under-exposure").defect


def test_blown_whites_with_a_bright_mean_read_as_over_exposure_even_over_deep_blacks(photos):
    """More light in linear light clips the whites of a photo whose blacks stay deep (the astronaut's space); the
    over-exposure finding used to need lifted blacks. A dark scene with a lamp blown to white is not over-exposed."""
    from defects import to_linear, to_srgb

    from edit_agents.agents.quality.defects.exposure import OVER_MEAN

    astronaut = np.ascontiguousarray(resize_longest(photos["astronaut"], 256))
    assert not next(f for f in perceive(astronaut).findings if f.check == "over-exposure").defect
    bright = to_srgb(np.clip(to_linear(astronaut) * 2.5, 0, 1)).astype(np.float32)
    stats = image_statistics(bright)
    assert stats["black_level"] < 0.02 and stats["mean_luma"] > OVER_MEAN and stats["clip_bright"] > 0.1
    seen = perceive(bright)
    assert next(f for f in seen.findings if f.check == "over-exposure").defect
    assert {"gamma", "exposure"} <= {a.tool for a in seen.actions}
    night = np.full((256, 256, 3), 0.08, np.float32)
    night[96:160, 96:160] = 1.0  # a lamp: 6% of the pixels blown, the mean low
    assert not next(f for f in perceive(night).findings if f.check == "over-exposure").defect


# --- a coloured object is not a coloured light ------------------------------------------------------------------

def test_coloured_things_on_grey_are_not_a_cast_and_a_cast_moves_the_grey(photos):
    """I03 (yellow and red fruit on a grey ground) pulls the illuminant estimate past the warm limit, but its grey
    ground stays grey: no white balance. The same photo under a coloured light has no grey left at neutral, and none
    at the estimated light either, since the fruit pulls the estimate off the ground's colour: it is left as the
    scene's (issue 68's cost, docs/photoagent.md), while a photo whose grey surfaces sit at the cast is balanced."""
    from photoset import load

    from edit_agents.agents.quality.defects.cast import CAST_LIMIT, GREYS_PAST_LIGHT, NEUTRAL_AREA

    img = np.ascontiguousarray(load("I03", 256))
    seen = perceive(img)
    finding = next(f for f in seen.findings if f.check == "colour cast")
    stats = image_statistics(img)
    assert finding.value > CAST_LIMIT["warm"]  # the estimators alone would call it a cast ...
    assert stats["neutral_share"] >= NEUTRAL_AREA > stats["cast_share"]  # ... the grey ground says otherwise
    assert not finding.defect and "still neutral grey" in finding.reason
    assert "white_balance" not in {a.tool for a in seen.actions}
    for family in ("temperature", "tint", "channel-gains"):
        bad, case = make(img, "I03", family, 0)
        cast = next(f for f in perceive(bad).findings if f.check == "colour cast")
        stats = image_statistics(bad)
        assert stats["neutral_share"] < NEUTRAL_AREA and stats["cast_share"] < GREYS_PAST_LIGHT, case.label()
        assert cast.value > CAST_LIMIT["tint"] and not cast.defect, case.label()
        assert "still neutral" not in cast.reason and "the colour is the scene's" in cast.reason, case.label()
    # a photo with a real cast and grey surfaces: they sit at the cast, none at neutral
    warm, case = make(np.ascontiguousarray(resize_longest(photos["camera"], 256)), "camera", "temperature", 0)
    stats = image_statistics(warm)
    assert stats["cast_share"] > stats["neutral_share"], case.label()
    assert "white_balance" in {a.tool for a in perceive(warm).actions}


# --- impulse noise: salt and pepper, dead pixels, dust ----------------------------------------------------------

def test_specks_are_seen_scored_and_removed_by_the_search(photos):
    img = np.ascontiguousarray(resize_longest(photos["coffee"], 384))
    hit = np.random.default_rng(3).random(img.shape[:2])  # made here: not one of tests/support/defects.py's families
    bad = img.copy()
    bad[hit < 0.008], bad[hit > 0.992] = 0.0, 1.0
    finding, seen, ssim, result = found_scored_and_removed(img, bad, "impulse noise", "remove_impulses")
    assert "stand alone" in finding.reason and "sharpen" not in {a.tool for a in seen.actions}
    assert ssim(result.image) > ssim(bad) + 0.15


# --- a camera's noise, smoothed by demosaicing ------------------------------------------------------------------

def test_noise_smoothed_over_a_pixel_shows_in_its_colour_and_is_removed(photos):
    from scipy.ndimage import gaussian_filter
    from skimage.color import deltaE_ciede2000, rgb2lab

    from edit_agents.agents.quality.defects.chroma import CHROMA_NOISE_LIMIT
    from edit_agents.agents.quality.metrics import texture_crops, _chroma_sigma
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    img = np.ascontiguousarray(resize_longest(photos["astronaut"], 384))
    noise = gaussian_filter(np.random.default_rng(5).normal(0, 1, img.shape).astype(np.float32), (0.8, 0.8, 0))
    bad = np.clip(img + noise * (0.05 / noise.std()), 0, 1).astype(np.float32)  # made here, not by tests/support/defects.py
    native = float(np.median([_chroma_sigma(c) for c in texture_crops(bad)]))
    assert native < CHROMA_NOISE_LIMIT < image_statistics(bad)["chroma_noise"]  # only the coarse scale sees it
    assert image_statistics(img)["chroma_noise"] < CHROMA_NOISE_LIMIT / 2
    for family in ("over-sharpened", "over-local-contrast"):  # colour texture lifted by over-processing is no noise
        for index in range(2):
            over, case = make(img, "astronaut", family, index)
            assert image_statistics(over)["chroma_noise"] < CHROMA_NOISE_LIMIT, case.label()
    finding = next(f for f in perceive(bad).findings if f.check == "colour noise")
    assert finding.defect
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]), Reward())
    assert "chroma_denoise" in {a.tool for a in result.actions}, result.actions

    def delta_e(a):
        return float(deltaE_ciede2000(rgb2lab(img), rgb2lab(a)).mean())
    assert delta_e(result.image) < delta_e(bad) - 2.0


# --- colour fringes from a lens ---------------------------------------------------------------------------------

def test_colour_fringes_are_seen_scored_and_fixed_by_the_search(photos):
    from scipy import ndimage

    img = np.ascontiguousarray(resize_longest(photos["chelsea"], 384))
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    bad = img.copy()
    for c, k in ((0, -0.006), (2, 0.005)):  # made here, the other way round from tests/support/defects.py's family
        bad[:, :, c] = ndimage.map_coordinates(img[:, :, c], [(h - 1) / 2 + (yy - (h - 1) / 2) / (1 + k),
                                                              (w - 1) / 2 + (xx - (w - 1) / 2) / (1 + k)], order=3,
                                               mode="nearest")
    bad = np.clip(bad, 0, 1).astype(np.float32)
    finding, _, ssim, result = found_scored_and_removed(img, bad, "colour fringes", "fix_fringes", margin=0.03)
    assert finding.value == pytest.approx(0.6, abs=0.1)
    assert ssim(result.image) > max(0.99, ssim(bad) + 0.015)


# --- a sensor's row banding ---------------------------------------------------------------------------------------

def test_row_banding_is_seen_scored_and_removed_by_the_search(photos):
    img = np.ascontiguousarray(resize_longest(photos["rocket"], 384))
    rows = np.random.default_rng(7).normal(0, 0.018, (img.shape[0], 1, 1))  # made here, not by tests/support/defects.py
    bad = np.clip(img + rows, 0, 1).astype(np.float32)
    finding, _, ssim, result = found_scored_and_removed(img, bad, "banding", "remove_banding", margin=0.01)
    assert finding.value == pytest.approx(0.018, rel=0.35)
    assert ssim(result.image) > ssim(bad) + 0.05


# --- colour blotches: colour noise coarser than a pixel or two -----------------------------------------------------

def _blotched(img, sigma, smooth, seed):
    """Colour noise made here, not by tests/support/defects.py: two colour-difference planes (YCbCr's), each Gaussian noise
    smoothed over ``smooth`` px, the luminance untouched."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    cb, cr = (ndimage.gaussian_filter(rng.normal(0, 1, img.shape[:2]), smooth) for _ in range(2))
    cb, cr = (x * sigma / x.std() for x in (cb, cr))
    # YCbCr to RGB with Y unchanged: red takes Cr, blue Cb, green what keeps Y where it was
    noise = np.stack([1.402 * cr, -0.344 * cb - 0.714 * cr, 1.772 * cb], axis=2)
    return np.clip(img + noise, 0, 1).astype(np.float32)


def _blotches(img):
    from edit_agents.agents.quality.metrics import _chroma_blotches

    return float(np.median([_chroma_blotches(c) for c in texture_crops(img)]))


@pytest.mark.parametrize("name, smooth", [("astronaut", 2.5), ("chelsea", 4.0), ("camera", 3.0)])
def test_colour_blotches_are_seen_scored_and_removed_by_the_search(photos, name, smooth):
    """The camera man is black and white: his flat sky has no colour of its own, and the blotches' colour there spreads
    two ways as anywhere else."""
    from edit_agents.agents.quality.defects.blotches import BLOTCH_LIMIT

    img = np.ascontiguousarray(resize_longest(photos[name], 384))
    img = np.repeat(img, 3, axis=2) if img.shape[2] == 1 else img  # as a user's file would be
    bad = _blotched(img, 0.025, smooth, 3)
    assert _blotches(img) < BLOTCH_LIMIT / 2 < BLOTCH_LIMIT * 1.2 < _blotches(bad)
    # the pixels' colour noise hardly sees them: the finding is the blotches'
    assert image_statistics(bad)["chroma_noise"] < 0.025
    finding, _, ssim, result = found_scored_and_removed(img, bad, "colour blotches", "chroma_denoise", margin=0.005)
    assert finding.value == pytest.approx(_blotches(bad))
    assert _blotches(result.image) < BLOTCH_LIMIT
    assert ssim(result.image) > ssim(bad) + 0.05


def test_a_photos_own_colours_do_not_read_as_blotches(photos):
    """Colours that lie along one line in each small neighbourhood (edges between two colours, shading, colour made
    stronger, sharpened, or bent by a tone curve) stay under the limit; only colour spread both ways counts. The
    statistic is a spread, so colour made stronger raises it in proportion: the coffee, the most colourful of these,
    reads 0.008 as it is and 0.016 with its saturation doubled (at 512 px, as the benchmark reads it)."""
    from edit_agents.agents.quality.defects.blotches import BLOTCH_LIMIT

    tools = default_registry()
    edits = [("saturation", {"amount": 0.5}), ("sharpen", {"amount": 2.0, "radius": 1.5}),
             ("tone_curve", {"shadows": -0.3, "highlights": 0.3}), ("contrast", {"amount": 0.3})]
    for name in ("astronaut", "chelsea", "coffee", "rocket"):
        img = np.ascontiguousarray(resize_longest(photos[name], 512))
        assert _blotches(img) < BLOTCH_LIMIT / 2, name
        for tool, params in edits:
            assert _blotches(tools.call(tool, img, params)[0]) < BLOTCH_LIMIT, (name, tool)
    # a ramp between two colours, and a hard edge between two others: one line each
    yy, xx = np.mgrid[0:192, 0:192] / 191.0
    ramp = np.stack([0.2 + 0.6 * xx, 0.7 - 0.4 * xx, 0.3 + 0.2 * yy * 0], axis=2)
    edge = np.where((xx > 0.5)[..., None], [0.9, 0.2, 0.1], [0.1, 0.4, 0.8])
    for pattern in (ramp, edge):
        assert _blotches(pattern.astype(np.float32)) < 1e-3


def test_a_painted_patterns_colour_corners_are_not_blotches():
    """A pattern of flat colour patches (painted toys, a patchwork, an illustration): where three colours meet, a
    neighbourhood's colours spread two ways, and where the patches are small such corners fill more than half of the
    neighbourhoods. They are edges in luminance too, so the blotches are read where the luminance is flattest: inside
    the patches, where colour noise would still show. The same pattern with coarse colour noise is still found."""
    from scipy import ndimage

    from edit_agents.agents.quality.defects.blotches import BLOTCH_LIMIT
    from edit_agents.agents.quality.metrics import _chroma_blotches

    rng = np.random.default_rng(2)
    side, patches = 384, 180  # about 45 patches in each 192 px texture crop
    centres = rng.uniform(0, side, (patches, 2))
    yy, xx = np.mgrid[0:side, 0:side]
    nearest = np.argmin((yy[..., None] - centres[:, 0]) ** 2 + (xx[..., None] - centres[:, 1]) ** 2, axis=2)
    pattern = rng.uniform(0.1, 0.9, (patches, 3)).astype(np.float32)[nearest]
    crops = texture_crops(pattern)
    assert np.median([_chroma_blotches(c, flat_share=1.0) for c in crops]) > BLOTCH_LIMIT  # read everywhere: a defect
    finding = next(f for f in perceive(pattern).findings if f.check == "colour blotches")
    assert not finding.defect and finding.value < BLOTCH_LIMIT / 2, finding.line()
    # colour noise 4 px coarse, the luminance kept: found in the patches' flat insides
    cb, cr = (ndimage.zoom(rng.normal(0, 0.03, (side // 4, side // 4)), 4, order=1) for _ in range(2))
    blotched = np.clip(pattern + np.stack([1.402 * cr, -0.344 * cb - 0.714 * cr, 1.772 * cb], axis=2), 0, 1)
    assert next(f for f in perceive(blotched.astype(np.float32)).findings if f.check == "colour blotches").defect


# --- posterisation: too few levels -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, levels", [("rocket", 24), ("coffee", 16)])
def test_posterisation_is_seen_scored_and_smoothed_by_the_search(photos, name, levels):
    """Each channel quantised here to ``levels`` on a curve (a square root: wider steps in the highlights), not by
    tests/support/defects.py."""
    from edit_agents.agents.quality.defects.posterisation import STEP_LIMIT

    img = np.clip(resize_longest(photos[name], 384), 0, 1).astype(np.float32)
    bad = (np.round(np.sqrt(img) * (levels - 1)) / (levels - 1)) ** 2
    bad = bad.astype(np.float32)
    finding, _, ssim, result = found_scored_and_removed(img, bad, "posterisation", "deband", margin=0.005)
    assert finding.value > 2 * STEP_LIMIT
    assert image_statistics(result.image)["level_step"] < STEP_LIMIT
    assert ssim(result.image) > ssim(bad) + 0.01
    assert not {"sharpen", "deconvolve"} & {a.tool for a in result.actions}  # they would steepen the steps again


@pytest.mark.parametrize("name,index", [("astronaut", 0), ("rocket", 0)])
def test_a_gaussian_blur_gets_a_gaussian_deconvolution_and_the_search_keeps_it(photos, name, index):
    """The astronaut's mildest Gaussian blur shows no ring in the cepstrum, and the rocket's widest one a ring too
    small for it (before: an unsharp mask, and a disc whose deconvolution hardly changed the photo). The spectrum's
    fall-off gives the width, and the search keeps the deconvolution."""
    from edit_agents.agents.photoagent.search import mcts_enhance
    from skimage.metrics import structural_similarity

    img = np.ascontiguousarray(resize_longest(photos[name], 512))
    bad, case = make(img, name, "gaussian-blur", index)
    sigma = dict(case.parts[0][1])["sigma"]
    calls = [a for a in perceive(bad).actions if a.tool == "deconvolve"]
    assert calls and calls[0].params["kind"] == "gaussian", (case.label(), perceive(bad).actions)
    assert abs(calls[0].params["sigma"] - sigma) < 0.2, (case.label(), calls[0])
    assert not {"deconvolve", "sharpen"} & {a.tool for a in perceive(img).actions}
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]))
    assert "deconvolve" in {a.tool for a in result.actions}, result.actions

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    assert ssim(result.image) > ssim(bad) + 0.03, (case.label(), result.actions)


def test_a_blurred_jpeg_is_sharpened_once_not_again_in_each_later_step(photos):
    """A sharpen in a later step only steepens what the first steepened: halos, and a JPEG's blocks and rounding
    raised (the rocket, blurred and saved at quality 85, was sharpened three times at amount 2, ΔE 2.49 -> 3.17)."""
    from defects import save_as_jpeg
    from skimage.metrics import structural_similarity

    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    img = np.ascontiguousarray(resize_longest(photos["rocket"], 512))
    bad, case = make(img, "rocket", "gaussian-blur", 0)
    bad = save_as_jpeg(bad, 85)
    result = mcts_enhance(bad, default_registry().subset(categories=["classic"]), Reward())
    tools = [a.tool for a in result.actions]
    assert tools.count("sharpen") <= 1, (case.label(), tools)

    def ssim(a):
        return structural_similarity(img, a, data_range=1.0, channel_axis=2)
    assert ssim(result.image) > ssim(bad) - 0.005, (case.label(), tools)


def test_a_line_read_on_one_crop_alone_is_no_shake(photos):
    """A shake moves the whole frame, so a motion kernel is trusted where a second crop reads a line of about its length
    and angle. The dark rocket faded and saved at quality 85 reads an 8 px line (the JPEG's grid) on one crop of four,
    the others nothing, and was deconvolved (SSIM 0.82 -> 0.56); a real shake saved alike is still read."""
    from defects import save_as_jpeg

    from edit_agents.agents.quality.metrics import texture_crops
    from edit_agents.agents.quality.kernel import BLUR_CONFIDENCE, estimate_kernel
    from edit_agents.tools.imageops import luminance
    from edit_agents.tools.restore import estimate_blur

    rocket = np.ascontiguousarray(resize_longest(photos["rocket"], 512))
    faded = save_as_jpeg(make(rocket, "rocket", "faded-print", 1)[0], 85)
    crops = texture_crops(faded)
    lines = [k for k in (estimate_blur(luminance(c)) for c in crops) if k["kind"] == "motion"]
    assert len(lines) == 1 and lines[0]["confidence"] >= BLUR_CONFIDENCE  # one crop reads a line, surely
    assert estimate_kernel(crops)["confidence"] < BLUR_CONFIDENCE
    for name, index in (("astronaut", 0), ("camera", 1)):
        photo = resize_longest(photos[name], 512)
        photo = np.ascontiguousarray(np.repeat(photo, 3 // photo.shape[2], axis=2))  # as a user's file: RGB
        shaken, case = make(photo, name, "motion", index)
        for img in (shaken, save_as_jpeg(shaken, 85)):
            kernel = estimate_kernel(texture_crops(img))
            assert kernel["kind"] == "motion" and kernel["confidence"] >= BLUR_CONFIDENCE, (case.label(), kernel)
            assert abs(kernel["length"] - case.parts[0][1]["length"]) < 1.5, (case.label(), kernel)


def test_a_tone_curve_earns_nothing_from_the_quality_scores_so_a_clean_jpeg_is_left_alone():
    """BRISQUE reads a clean photo saved as a JPEG at 85 as distorted, and a gamma moves the reading; the search kept a
    gamma, a sharpen and a contrast boost on scikit-image's clock for that (SSIM 0.95, Delta E 8 to itself). A tone or
    colour curve (ToolSpec.pointwise) is held to the readings of the photo without it (Reward.score's held_readings)."""
    from photoset import load
    from defects import save_as_jpeg

    from edit_agents.agents.quality.metrics import quality_readings
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    photo = save_as_jpeg(load("clock", 512), 85)
    tools, reward = default_registry().subset(categories=["classic"]), Reward()
    assert tools.get("gamma").pointwise and not tools.get("sharpen").pointwise
    curved = tools.call("gamma", photo, {"gamma": 0.8})[0]
    readings = quality_readings(photo)
    free, held = reward.score(curved, photo), reward.score(curved, photo, held_readings=readings)
    assert free.raw["brisque"] < readings["brisque"] - 1  # the curve moves the reading ...
    assert held.raw["brisque"] == readings["brisque"] and held.total < free.total  # ... and earns nothing for it
    # the score of the photo kept, with its own readings again (what the next step's candidates are compared with)
    assert reward.with_readings(held, quality_readings(curved)).total == pytest.approx(free.total, abs=1e-9)
    result = mcts_enhance(photo, tools, reward)
    assert not result.actions, [a.label() for a in result.actions]


def test_a_dark_photo_s_curve_keeps_the_quality_scores_credit():
    """In a dark photo (mean luminance under reward.DARK_MEAN) the quality scores read how much of the scene shows,
    which a curve changes for real: the deep field darkened in linear light is still brightened (its exposure band
    reads 0 all the way, so the scores are what pays for it; held to them, it was left dark)."""
    from photoset import load

    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import DARK_MEAN, Reward, holds_curves

    clean = load("hubble_deep_field", 512)
    dark, case = make(clean, "hubble_deep_field", "gain-linear", 1)
    assert not holds_curves({"mean_luma": float(dark.mean())}) and holds_curves({"mean_luma": DARK_MEAN})
    tools = default_registry().subset(categories=["classic"])
    result = mcts_enhance(np.asarray(dark, np.float32), tools, Reward())
    assert any(tools.get(a.tool).pointwise for a in result.actions), (case.label(), result.actions)
    assert float(np.abs(result.image - clean).mean()) < 0.5 * float(np.abs(dark - clean).mean())


def test_a_jpeg_seen_at_another_size_is_no_shake():
    """A JPEG shrunk, compressed and blown up again (the held-out screen-copy family: a chat app's copy) steps every
    8 / scale px; two crops of the dusk rocket read that as a 12.8 px vertical shake, and its deconvolution took SSIM
    from 0.855 to 0.576. A grid's steps fall at one phase all across a crop, a shake's streaks wherever the scene's
    features are (tools/restore.repeats_at_one_phase): the grid is no kernel now, and shakes along a row or a column,
    the dusk rocket's own included, still are."""
    from photoset import load

    from edit_agents.agents.quality.metrics import texture_crops
    from edit_agents.agents.quality.kernel import estimate_kernel
    from edit_agents.tools.imageops import luminance
    from edit_agents.tools.restore import GRID_AXIS, blur_of_spectrum, blur_spectrum, repeats_at_one_phase

    copy, case = make(load("rocket", 512), "rocket", "screen-copy", 1)
    crops = texture_crops(np.asarray(copy, np.float32))
    lines = [(r, luminance(c)) for c in crops
             for r in [blur_of_spectrum(blur_spectrum(luminance(c)))] if r["kind"] == "motion"]
    assert len(lines) >= 2, case.label()  # two crops read the grid as a confident vertical line, seconding each other
    assert all(abs(r["angle"] - 90) < 2 and r["confidence"] >= 0.5 and repeats_at_one_phase(x, r["length"], r["angle"])
               for r, x in lines), [r for r, _ in lines]
    kernel = estimate_kernel(crops)
    assert kernel["kind"] != "motion" and abs(kernel["grid"] - 12.9) < 0.5, kernel
    stats = image_statistics(np.asarray(copy, np.float32), crops)  # the trace says why no shake is undone
    blur = next(f for f in RulePerceiver().perceive(stats, 8, default_registry().names(), crops=crops).findings
                if f.check == "blur")
    assert "is a grid's period" in blur.reason, blur.reason
    crop = next(c for c in crops if blur_of_spectrum(blur_spectrum(luminance(c)))["kind"] == "motion")
    out, _, notes = default_registry().call("deconvolve", crop, {"kind": "auto"})  # the tool's own estimate alike
    assert np.array_equal(out, crop) and "no defocus, motion or Gaussian blur found" in " ".join(notes), notes
    for photo, family, index in (("rocket", "motion", 3), ("I06", "motion", 1), ("I06", "motion", 2),
                                 ("astronaut", "motion", 0), ("hubble_deep_field", "motion", 3)):
        shaken, case = make(load(photo, 512), photo, family, index)
        (_, params), = case.parts
        turn = params["angle"] % 180  # a shake the grid check reads: along a row or a column
        assert min(abs(turn - 90), turn, 180 - turn) < GRID_AXIS, case.label()
        found = estimate_kernel(texture_crops(shaken))
        assert found["kind"] == "motion" and abs(found["length"] - params["length"]) < 1, (case.label(), found)


def test_a_curve_neither_hides_nor_magnifies_a_jpeg_grid():
    """The moon as scikit-image ships it is a JPEG: its 8x8 blocks step by about a grey level. Darkened by a gain, the
    steps shrink with everything else; brightened back, they grow again, and the reward's grid penalty charged the
    exposure for the moon's own blocks (grid step 1.94 levels against 1.33 after a gamma), so the search brightened it
    with a gamma of 1.8 and ended further from the moon (Delta E 21.5 -> 22.4). A tone or colour curve
    (ToolSpec.pointwise) scales the blocks' steps as it scales every other detail, and neither makes nor removes
    one: a state with curves among its edits takes the grid reading of its edits without them (Reward.score's
    held_readings), as it takes no better quality scores than theirs."""
    from photoset import DEFECTS, degrade, load
    from skimage.color import deltaE_ciede2000, rgb2lab

    from edit_agents.agents.quality.metrics import HELD_READINGS, quality_readings
    from edit_agents.agents.photoagent.search import mcts_enhance
    from edit_agents.agents.quality.reward import Reward

    moon = load("moon", 512)
    dark = np.asarray(degrade(moon, "under-exposed", DEFECTS["under-exposed"][2]), np.float32)
    tools, reward = default_registry().subset(categories=["classic"]), Reward()
    brighter = tools.call("exposure", dark, {"stops": 1.2})[0]
    readings = quality_readings(dark)
    assert "grid_step" in HELD_READINGS and set(readings) == set(HELD_READINGS)
    free, held = reward.score(brighter, dark), reward.score(brighter, dark, held_readings=readings)
    assert free.raw["grid_step"] > 1.5 * readings["grid_step"]  # the exposure magnifies the blocks' steps ...
    assert held.raw["grid_step"] == readings["grid_step"] and held.total > free.total  # ... and is not charged for it
    result = mcts_enhance(dark, tools, reward)

    def delta_e(a):
        return float(deltaE_ciede2000(rgb2lab(moon), rgb2lab(np.clip(a, 0, 1))).mean())
    assert "exposure" in {a.tool for a in result.actions}, result.actions
    assert delta_e(result.image) < delta_e(dark) - 4.0, [a.label() for a in result.actions]
