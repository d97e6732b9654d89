"""bench/phone_photos.py and its cases (tests/support/phone.py): photos as phones save them, judged against what the
photographer meant."""
import numpy as np
import pytest

import phone
import phone_photos


def test_a_case_is_a_phones_jpeg_drawn_from_its_seed():
    a, b = phone.case("golden-hour", 3), phone.case.__wrapped__("golden-hour", 3)
    assert np.array_equal(a.image, b.image) and a.meant and a.truth is a.image
    assert np.allclose(a.image * 255, np.round(a.image * 255), atol=1e-3)  # 8-bit values, as a file holds them
    assert not np.array_equal(a.image, phone.case("golden-hour", 4).image)
    with pytest.raises(ValueError, match="not a phone case"):
        phone.case("moonlight", 0)


def test_a_control_is_its_scene_under_a_wrong_preset_and_its_truth_the_right_one():
    control = phone.case("daylight-preset-indoors", 2)
    assert not control.meant
    warm = lambda img: float(np.log(img[..., 0].mean() / img[..., 2].mean()))  # noqa: E731
    assert warm(control.image) > warm(control.truth) + 0.2


def test_the_bench_judges_a_meant_photo_and_a_control_against_what_was_meant(capsys):
    rows = [phone_photos.run_case("sunset", phone.HELD_APART, ("mcts", "clahe")),
            phone_photos.run_case("tungsten-preset", 0, ("mcts", "clahe"))]
    meant, control = rows
    assert meant["before"] == (pytest.approx(1.0), pytest.approx(0.0))
    assert phone_photos.verdict(meant, "clahe") == "edited"  # CLAHE moves any photo past the bounds
    assert phone_photos.verdict(control, "mcts") == "closer"  # its white balance, on grey surfaces
    phone_photos.report(rows, ("mcts", "clahe"), "two")
    out = capsys.readouterr().out
    assert "sunset" in out and "tungsten-preset" in out and "1/1" in out
