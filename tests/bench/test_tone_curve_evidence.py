"""bench/tone_curve_evidence.py's blind estimate of a tone curve (Farid 2001): it follows a curve put on a photo, and
a gain per channel leaves each channel's estimate where it was."""

import numpy as np
import pytest

import tone_curve_evidence as evidence
from photoset import load


@pytest.fixture(scope="module")
def chelsea():
    return np.clip(load("chelsea", 256), 0, 1).astype(np.float32)


@pytest.mark.parametrize("gamma", [0.6, 1.6])
def test_the_estimate_follows_a_gamma_put_on_the_photo(chelsea, gamma):
    gray = evidence.luma(chelsea)
    before = evidence.blind_exponent(gray)
    assert not evidence.at_end(before)  # inside the grid, so a move either way can be seen
    after = evidence.blind_exponent(gray ** gamma)
    assert abs(np.log(after * gamma / before)) < np.log(1.25), (before, after)  # about before / gamma


def test_a_gain_per_channel_leaves_each_channels_curve_and_a_gamma_per_channel_does_not(chelsea):
    before = evidence.channel_exponents(chelsea)
    gained = evidence.channel_exponents(chelsea * np.array([0.8, 1.0, 0.9], np.float32))
    assert gained == before  # bicoherence is normalised: a scale changes nothing
    bent = chelsea.copy()
    bent[..., 0] **= 0.6  # red lifted by a curve of its own (a film process)
    red = evidence.channel_exponents(bent)[0]
    assert abs(np.log(red * 0.6 / before[0])) < np.log(1.25), (before[0], red)
