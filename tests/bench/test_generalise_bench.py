"""A bounded run of bench/photoagent_generalise.py: its methods, its verdicts against the clean original, its report."""

import numpy as np
import pytest

import photoagent_generalise as bench
from edit_agents.agents.quality.perception import RulePerceiver
from edit_agents.agents.quality.reward import Reward
from edit_agents.tools import default_registry

FAMILIES = ("gamma-bright", "jpeg", "clean")


@pytest.fixture(scope="module")
def rows():
    return [bench.run_case("chelsea", family, 0, 128) for family in FAMILIES]


def test_every_method_runs_and_the_baselines_change_a_degraded_photo(rows):
    for r in rows:
        assert set(r["after"]) == set(bench.METHODS), r["family"]
        assert r["group"] == {"gamma-bright": "tone", "jpeg": "noise", "clean": "clean"}[r["family"]]
    bright, _, clean = rows
    assert bright["before"][0] < 0.95 and bright["before"][1] > 3  # the defect is there to be judged
    for method in ("autocontrast", "autolevel-gamma", "clahe"):
        assert bright["after"][method] != bright["before"], method
    assert clean["before"] == (1.0, 0.0)


def test_none_is_the_input_never_closer_never_harmed(rows):
    for r in rows:
        assert r["after"]["none"] == r["before"], r["family"]
        assert not bench.closer(r["before"], r["after"]["none"]), r["family"]
        assert not bench.harmed(r["before"], r["after"]["none"]), r["family"]
    assert bench.untouched(rows[2]["after"]["none"])


def test_harm_is_measured_from_the_input_with_its_bounds():
    assert bench.harmed((0.80, 5.0), (0.77, 5.0))  # SSIM down by 0.03
    assert bench.harmed((0.80, 5.0), (0.80, 6.5))  # ΔE up by 1.5
    assert not bench.harmed((0.80, 5.0), (0.79, 5.9))  # within both bounds
    assert bench.harmed((1.0, 0.0), (0.97, 0.5))  # a clean photo: any change beyond the bounds
    assert not bench.untouched((0.9999, 0.0)) and bench.untouched((1.0, 0.0))


def test_the_report_counts_what_the_rows_say(rows, capsys):
    summary = bench.report(rows, bench.METHODS, detail=True)
    out = capsys.readouterr().out
    degraded = [r for r in rows if r["family"] != "clean"]
    for method in bench.METHODS:
        n_closer = sum(bench.closer(r["before"], r["after"][method]) for r in degraded)
        n_harmed = sum(r["after"][method][0] < r["before"][0] - 0.02 or r["after"][method][1] > r["before"][1] + 1.0
                       for r in degraded)
        every = summary[("group", "all")]["methods"][method]
        assert (every["n"], every["closer"], every["harmed"]) == (2, n_closer, n_harmed), method
        for r in degraded:
            fam = summary[("family", r["family"])]["methods"][method]
            assert fam["closer"] == bench.closer(r["before"], r["after"][method]), (method, r["family"])
            assert fam["ssim"] == pytest.approx(r["after"][method][0])
        clean = summary[("clean", "clean")]["methods"][method]
        assert clean["untouched"] == bench.untouched(rows[2]["after"][method]), method
    tone = summary[("group", "tone")]["methods"]
    cells = [f"{100 * tone[m]['closer']:.0f}% closer, {tone[m]['harmed']} harmed" for m in bench.METHODS]
    line = next(x for x in out.splitlines() if x.startswith("| tone | 1 |"))
    assert [c.split(",")[:2] for c in line.split(" | ")[3:]] == [c.split(",") for c in cells]
    assert ("group", "blur") not in summary  # no case, no row
    assert "jpeg(quality=" in out  # the case's label, in the detail


def test_a_distorted_photo_with_no_original_is_reported_apart_with_its_no_reference_scores(rows, capsys):
    """I19 (a heavy JPEG among IQA-PyTorch's calibration images) has no clean original: it is neither a clean photo
    whose edits count as harm nor a degraded case, and the report gives its BRISQUE and NIQE before and after."""
    jpeg = bench.run_case("I19", "distorted", 0, 256, methods=("mcts", "none"))
    assert (jpeg["group"], jpeg["before"]) == ("distorted", (1.0, 0.0))
    scores = jpeg["no_reference"]
    assert set(scores) == {"input", "mcts", "none"} and scores["none"] == scores["input"]
    assert all(np.isfinite(v).all() for v in scores.values())
    summary = bench.report([*rows, jpeg], ("mcts", "none"))
    out = capsys.readouterr().out
    assert summary[("group", "all")]["n"] == 2  # chelsea's two degraded cases only
    assert summary[("clean", "clean")]["n"] == 1 and ("clean", "other") not in summary
    assert f"I19: BRISQUE {scores['input'][0]:.1f}, NIQE {scores['input'][1]:.2f} as it is" in out


def test_autolevel_gamma_stretches_jointly_and_brings_each_mean_to_a_half():
    rng = np.random.default_rng(0)
    img = np.empty((64, 64, 3), np.float32)
    img[..., 0] = np.linspace(0.1, 0.7, 64)[None, :]  # the channel that sets the joint range
    img[..., 1] = 0.25 + rng.normal(0, 0.005, (64, 64))
    img[..., 2] = 0.55 + rng.normal(0, 0.005, (64, 64))
    out = bench.autolevel_gamma(img)
    assert out.min() == pytest.approx(0.0, abs=1e-6) and out.max() == pytest.approx(1.0, abs=1e-6)
    assert out[..., 0].min() == pytest.approx(0.0, abs=1e-6)  # one range for all channels: red's ends
    for c in (1, 2):
        assert out[..., c].mean() == pytest.approx(0.5, abs=0.01), c
    assert out[..., 0].mean() == pytest.approx(0.5, abs=0.05)  # the gamma matches the mean value, not the mean
    # stretched per channel instead, green and blue would be noise across 0..1, their means still ~0.5: so
    # check the joint stretch kept green's narrow spread narrow
    assert out[..., 1].std() < 0.1


def test_the_search_takes_its_components_from_the_leave_one_out_hook(monkeypatch):
    asked, perceived = [], []

    class Counting(RulePerceiver):
        def perceive(self, *args, **kwargs):
            perceived.append(1)
            return super().perceive(*args, **kwargs)

    def hook(family):
        asked.append(family)
        return default_registry().subset(categories=["classic"]), Reward(), Counting()

    monkeypatch.setattr(bench, "mcts_tools_and_reward", hook)
    bench.run_case("chelsea", "clean", 0, 128, ("mcts",))
    bench.run_case("chelsea", "clean", 0, 128, ("mcts",), model_for="jpeg")
    assert asked == ["clean", "jpeg"]
    assert perceived  # the hook's perceiver is the one the search asked


def test_leave_one_family_out_hands_each_family_the_reward_fitted_without_it(tmp_path, monkeypatch):
    import json

    from edit_agents.agents.quality.reward import FITTED

    data = json.loads(FITTED.read_text())
    data["weights"] = {k: (1.0 if k == "noise" else 0.0) for k in data["weights"]}
    (tmp_path / "jpeg.json").write_text(json.dumps(data))
    monkeypatch.setattr(bench, "LOFO_REWARDS", str(tmp_path))
    assert set(bench.mcts_tools_and_reward("jpeg")[1].active) == {"noise"}  # fitted without jpeg
    assert set(bench.mcts_tools_and_reward("gamma-dark")[1].active) != {"noise"}  # no file: the shipped fit


def test_a_darkened_case_is_dominated_only_by_another_photo_darker_on_both_counts():
    import tone_identifiability as ident

    clean = {"dusk": (0.8, 0.24), "night": (0.72, 0.08), "bright": (1.0, 0.6)}
    assert ident.dominated((0.75, 0.3), "x", clean, darker=True) == ["night"]  # whites and mean both at or below
    assert ident.dominated((0.75, 0.3), "night", clean, darker=True) == []  # never its own original
    assert ident.dominated((0.7, 0.3), "x", clean, darker=True) == []  # night's whites are brighter: a rule can tell
    assert ident.dominated((0.9, 0.5), "x", clean, darker=False) == ["bright"]
    tone = ident.tone(np.full((16, 16, 3), 0.5, np.float32))
    assert tone == pytest.approx((0.5, 0.5), abs=1e-3)


def test_other_pictures_counted_as_clean_dominate_what_the_project_photos_do_not(monkeypatch, capsys):
    """--comfy-pictures counts other pictures as clean too: a dark one (a control map on black) dominates a darkened
    case that the project's photos leave free, and the line says how many such pictures a fix would edit."""
    import tone_identifiability as ident

    real_load = ident.load
    dark = np.full((64, 64, 3), 0.02, np.float32)
    dark[:2, :2] = 0.3  # whites at 0.3: below every darkened case
    picture = "comfy:other/control_map.webp"
    monkeypatch.setattr(ident, "load", lambda name, *a: dark if name == picture else real_load(name))
    monkeypatch.setattr(ident, "comfy_pictures", lambda: {picture: None})
    monkeypatch.setattr(ident, "EVALUATION", ("camera",))
    monkeypatch.setattr(ident, "CLEAN", ("camera", "astronaut"))
    monkeypatch.setattr(ident, "DARKER", ("gain-linear",))
    monkeypatch.setattr(ident, "BRIGHTER", ())
    ident.main(1, comfy=False)
    alone = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("gain-linear"))
    assert alone.split()[1:3] == ["1", "0"]  # the astronaut is brighter: nothing the project has is darker
    ident.main(1, comfy=True)
    wider = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("gain-linear"))
    assert "1 (100%)" in wider
    assert wider.split()[-3:] == ["1", "1", "control_map"]  # one picture edited by the fix (median, lower quartile)


def test_a_cast_is_dominated_only_by_a_stronger_cast_the_same_way():
    import colour_identifiability as ident

    def reading(red=0.0, blue=0.0, colourfulness=0.1, gamut_clip=0.0, gray=0.0):
        return {"red": red, "blue": blue, "colourfulness": colourfulness, "gamut_clip": gamut_clip, "gray": gray}

    clean = {"tungsten": reading(0.3, -0.3), "forest": reading(-0.1, -0.1), "grey": reading(0.5, -0.5, gray=1.0),
             "muted": reading(colourfulness=0.03), "vivid": reading(colourfulness=0.4, gamut_clip=0.5)}
    warm = reading(0.1, -0.1)
    assert ident.dominated(warm, "x", clean, "temperature") == ["tungsten"]  # stronger and the same way
    assert ident.dominated(warm, "tungsten", clean, "temperature") == []  # never its own original
    assert ident.dominated(reading(0.1, 0.1), "x", clean, "tint") == []  # magenta: no clean photo leans that way
    assert ident.dominated(reading(-0.2, -0.2), "x", clean, "tint") == []  # greener than the forest: a rule can tell
    assert ident.dominated(reading(colourfulness=0.05), "x", clean, "washed-colour") == ["muted"]
    assert ident.dominated(reading(colourfulness=0.3, gamut_clip=0.4), "x", clean, "over-saturated") == ["vivid"]
    assert ident.dominated(reading(colourfulness=0.3, gamut_clip=0.6), "x", clean, "over-saturated") == []
    img = np.full((16, 16, 3), 0.5, np.float32)
    assert ident.colour(img)["gray"] == 1.0


def test_saved_as_jpeg_judges_a_case_against_its_original_and_a_clean_photo_against_its_jpeg():
    lossless = bench.run_case("chelsea", "gamma-bright", 0, 128, ("none", "autocontrast"))
    saved = bench.run_case("chelsea", "gamma-bright", 0, 128, ("none", "autocontrast"), jpeg=40)
    assert saved["jpeg"] == 40 and lossless["jpeg"] == 0
    # the same defect, the JPEG's loss on top: further from the original before anything is done
    assert saved["before"][0] < lossless["before"][0] - 0.01
    assert saved["after"]["none"] == saved["before"]
    clean = bench.run_case("chelsea", "clean", 0, 128, ("none", "autocontrast"), jpeg=40)
    assert clean["before"] == (1.0, 0.0) and bench.untouched(clean["after"]["none"])  # the JPEG is what it was given
    assert not bench.untouched(clean["after"]["autocontrast"])


def test_comfyuis_template_pictures_are_other_pictures_to_run():
    """--comfy-pictures: the pictures ComfyUI's workflow templates show (installed with ComfyUI's requirements), each
    once, an animation by its first frame, read as a photo is; a case is made from one as from a photo."""
    from photoset import COMFY_PREFIX, MIN_PICTURE, comfy_pictures, load

    pictures = comfy_pictures()
    assert len(pictures) >= 20, "ComfyUI's template packages are installed with it"
    firsts = set()
    for name in list(pictures)[::len(pictures) // 12]:
        assert name.startswith(COMFY_PREFIX)
        img = load(name, 256)
        assert img.dtype == np.float32 and img.ndim == 3 and img.shape[2] == 3 and max(img.shape[:2]) <= 256
        assert min(img.shape[:2]) >= MIN_PICTURE // 2 and 0.0 <= img.min() and img.max() <= 1.0
        firsts.add(img.tobytes())
    assert len(firsts) == len(list(pictures)[::len(pictures) // 12])  # no picture twice
    row = bench.run_case(next(iter(pictures)), "gamma-bright", 0, 128, ("none",))
    assert row["before"][0] < 1.0 and row["after"]["none"] == row["before"]
    with pytest.raises(ValueError, match="no such picture"):
        load(COMFY_PREFIX + "image/none.webp")
