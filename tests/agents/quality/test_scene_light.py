"""Photos as phones save them are left as the photographer meant (issue 68): the colour of the scene's light is not
a cast unless something that should be grey shows it, a phone's sharpened photo is not soft for its smoothed fine
detail alone, and a vivid subject is not over-saturation unless its colours were pushed past 0. The cases are tests/support/phone.py's; seeds from phone.HELD_APART on were never looked at."""
import numpy as np
import pytest
from scipy.ndimage import gaussian_filter

import phone
from edit_agents.agents.quality.defects.base import Seen
from edit_agents.agents.quality.defects.blur import SOFT_EDGE, blur
from edit_agents.agents.quality.defects.cast import GREYS_AT_CAST, colour_cast
from edit_agents.agents.quality.defects.saturation import OVER_COLOURFUL, OVER_GAMUT, over_saturation
from edit_agents.agents.quality.metrics import edge_width, gamut_clipped, image_statistics, texture_crops
from edit_agents.agents.quality.perception import RulePerceiver
from edit_agents.tools import default_registry

CLASSIC = default_registry().subset(categories=["classic"]).names()
WARM = {"colour_cast": 0.28, "cast_red": 0.15, "cast_blue": -0.24, "cast_confidence": 0.8, "neutral_share": 0.0}


def _tools_proposed(img: np.ndarray) -> set[str]:
    crops = texture_crops(img)
    perception = RulePerceiver().perceive(image_statistics(img, crops), 8, CLASSIC, image=img, crops=crops)
    return {call.tool for call in perception.actions}


def test_a_warm_lean_with_nothing_grey_at_the_lights_colour_is_the_scenes():
    finding, calls = colour_cast(Seen({**WARM, "cast_share": GREYS_AT_CAST / 3}, "warm light"))
    assert not finding.defect and not calls and "the colour is the scene's" in finding.reason


def test_the_same_lean_on_surfaces_that_should_be_grey_is_a_cast():
    finding, calls = colour_cast(Seen({**WARM, "cast_share": 0.2}, "warm light"))
    assert finding.defect and {c.tool for c in calls} == {"white_balance"}


def test_short_fine_detail_with_steep_edges_is_not_soft_with_wide_edges_it_is():
    stats = {"sharpness": 0.5, "grid_step": 0.0}
    steep, _ = blur(Seen({**stats, "edge_width": SOFT_EDGE - 0.8}, "general"))
    wide, calls = blur(Seen({**stats, "edge_width": SOFT_EDGE + 1.0}, "general"))
    assert not steep.defect and "phone's sharpened photo" in steep.reason
    assert wide.defect and calls and calls[0].tool == "sharpen"


def test_edges_are_read_wherever_the_blur_rule_asks_for_them_and_only_there():
    from edit_agents.agents.quality.defects.blur import BLUR_SHARPNESS
    from edit_agents.agents.quality.metrics import EDGES_UNDER

    assert EDGES_UNDER >= BLUR_SHARPNESS
    sharp = phone.case("daylight", 1)  # the cat: fine detail 1.28
    soft = gaussian_filter(sharp.image, (2.0, 2.0, 0))
    assert "edge_width" not in image_statistics(sharp.image)
    assert image_statistics(soft)["edge_width"] >= SOFT_EDGE


def test_an_edge_reads_wider_the_more_it_is_blurred():
    step = np.zeros((64, 64), np.float32)
    step[:, 32:] = 0.8
    widths = [edge_width(gaussian_filter(step, s)) for s in (0.5, 1.0, 2.0, 3.0)]
    assert widths == sorted(widths) and widths[0] < SOFT_EDGE < widths[2]
    assert edge_width(np.full((64, 64), 0.5, np.float32)) is None  # no edge: nothing to read


@pytest.mark.parametrize("seed", [phone.HELD_APART + i for i in range(3)])
def test_sunsets_and_daylight_as_phones_save_them_get_no_white_balance_or_sharpen(seed):
    for kind in ("sunset", "daylight"):
        assert not {"white_balance", "sharpen"} & _tools_proposed(phone.case(kind, seed).image), kind


@pytest.mark.parametrize("seed", [phone.HELD_APART + i for i in range(3)])
def test_a_phones_hdr_photo_is_not_read_as_hazy_faded_or_soft(seed):
    """The issue's phone photo that was dehazed and sharpened: shadows lifted by the phone's tone mapping are no veil."""
    assert not {"dehaze", "levels", "contrast", "sharpen"} & _tools_proposed(phone.case("hdr-daylight", seed).image)


def test_a_wrong_preset_over_grey_surfaces_is_still_white_balanced():
    control = phone.case("tungsten-preset", 0)
    assert control.ground == "I04" and not control.meant  # a portrait in greys, under a sky shot for tungsten
    assert "white_balance" in _tools_proposed(control.image)


def test_a_colour_the_exposure_clipped_at_the_top_is_not_pushed_past_the_files_range():
    top = np.array([1.0, 1.0, 0.9, 0.6], np.float32)  # a red in sun: its red channel at 1, the others inside
    assert gamut_clipped(top, np.array([0.3, 0.2, 0.0, 0.2], np.float32)) == 0.25  # only the weakest channel at 0 counts
    bike = phone.case("blue-sky", 2)  # a red motorcycle under a blue sky, exposed for the sky: 72% clipped at the top
    assert bike.ground == "stereo_motorcycle" and image_statistics(bike.image)["colourfulness"] > OVER_COLOURFUL
    assert "saturation" not in _tools_proposed(bike.image)


def test_colours_an_edit_pushed_past_the_range_are_not_the_photos():
    garish = {"colourfulness": OVER_COLOURFUL + 0.1, "gamut_clip": OVER_GAMUT + 0.3}
    came_vivid, _ = over_saturation(Seen({**garish, "photo_gamut_clip": 0.05}, "general"))  # a black point clipped them
    came_garish, calls = over_saturation(Seen({**garish, "photo_gamut_clip": OVER_GAMUT + 0.2}, "general"))
    assert not came_vivid.defect and came_garish.defect and {c.tool for c in calls} == {"saturation"}
