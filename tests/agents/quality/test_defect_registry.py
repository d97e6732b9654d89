"""The defect registry (agents/quality/defects): each defect declared in one module, the reward's penalties and the
rule perceiver's diagnosis built from the declarations."""
import dataclasses
import inspect

import pytest

from edit_agents.agents.quality import defects
from edit_agents.agents.quality.defects import DEFECTS, PENALTIES, PENALTY, Seen, diagnose, excess
from edit_agents.agents.quality.reward import RewardConfig

# a photo with no defect, and every reading a defect's rule takes
CLEAN = {"white_level": 0.95, "black_level": 0.03, "mean_luma": 0.45, "clip_bright": 0.001, "channel_white": 0.97,
         "veil": 0.02, "colourfulness": 0.15, "gamut_clip": 0.05, "colour_cast": 0.02, "cast_red": 0.01,
         "cast_blue": -0.01, "cast_confidence": 0.5, "neutral_share": 0.2, "cast_share": 0.0, "fringes": 0.05,
         "is_gray": 0.0, "noise_sigma": 0.004, "chroma_noise": 0.005, "chroma_blotches": 0.004, "impulses": 0.0,
         "banding": 0.001, "level_step": 1.0, "blockiness": 1.05, "grid_step": 0.5 / 255, "sharpness": 2.0}


def test_each_defect_declares_its_rule_and_penalty_in_one_module():
    for defect in DEFECTS:
        module = inspect.getmodule(defect.rule)
        assert module.__name__.startswith(defects.__name__ + "."), defect.check
        if defect.penalty is not None:
            assert any(value is defect.penalty for value in vars(module).values()), defect.check


def test_the_reward_penalises_what_the_defects_declare_each_weighed_by_its_config_field():
    fields = {f.name for f in dataclasses.fields(RewardConfig)}
    assert [row[0] for row in PENALTIES] == list(PENALTY) and set(PENALTY) <= fields
    assert {d.penalty.name for d in DEFECTS if d.penalty} == set(PENALTY)
    assert excess({}, "veil") == 0.0 and excess({"veil": 0.5, "is_gray": 1.0}, "veil") == 0.0  # colour only
    assert excess({"veil": 0.5}, "veil") == pytest.approx(0.5 - PENALTY["veil"].limit)


def test_a_clean_photo_gets_every_finding_and_no_proposal():
    out = diagnose(CLEAN, "general")
    assert [f.check for f, _ in out] == [d.check for d in DEFECTS]
    assert not any(f.defect or calls for f, calls in out)
    gray = diagnose({**CLEAN, "is_gray": 1.0}, "black-and-white")
    assert [f.check for f, _ in gray] == [d.check for d in DEFECTS if not d.colour_only]
    assert [f.check for f, _ in diagnose({k: v for k, v in CLEAN.items() if k != "noise_sigma"}, "general")] == [
        d.check for d in DEFECTS if "noise_sigma" not in d.needs]


def test_a_finding_holds_back_the_defects_that_name_its_flag():
    soft = {**CLEAN, "sharpness": 0.5}
    assert _found(soft)["blur"]
    for flagged in ({"noise_sigma": 0.03}, {"blockiness": 2.0, "grid_step": 4.0 / 255}, {"level_step": 5.0},
                    {"chroma_blotches": 0.05}, {"chroma_noise": 0.05}):
        assert not _found({**soft, **flagged})["blur"], flagged
    # the rows banded: their noise is not counted, and holds no blur back
    assert not _found({**soft, "banding": 0.02, "noise_sigma": 0.03})["noise"]


def test_colour_noise_overwrites_the_speckled_flag_that_impulse_noise_raised():
    # the known bug (issue 68) kept as it was: specks in a colour photo read for colour noise hold no blur back
    specks = {**CLEAN, "sharpness": 0.5, "impulses": 0.01}
    assert _found(specks)["impulse noise"] and _found(specks)["blur"]
    assert not _found({**specks, "is_gray": 1.0}, "black-and-white")["blur"]


def test_a_rule_reads_the_kernel_and_the_hold_it_is_given():
    blur = next(d for d in DEFECTS if d.check == "blur")
    finding, calls = blur.rule(Seen({**CLEAN, "sharpness": 0.5}, "general", None, held=True))
    assert not finding.defect and not calls
    kernel = {"kind": "motion", "confidence": 0.9, "length": 9.0, "angle": 30.0}
    finding, calls = blur.rule(Seen(CLEAN, "general", kernel))
    assert finding.defect and {c.tool for c in calls} == {"deconvolve"}


def _found(stats, scene="general"):
    return {f.check: f.defect for f, _ in diagnose(stats, scene)}
