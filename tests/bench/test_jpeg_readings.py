"""bench/jpeg_readings.py's readings: the colour blotches as the pack reads them (in the flattest half of the
windows) and over every window (as it read them until 2026-12-02); both see colour noise, not a grey photo."""

import numpy as np
import pytest

import jpeg_readings as readings
from photoset import load

from edit_agents.agents.quality.metrics import _chroma_blotches, texture_crops


@pytest.fixture(scope="module")
def chelsea():
    return np.clip(load("chelsea", 384), 0, 1).astype(np.float32)


def _noisy(img, sigma, seed=0):
    noise = np.random.default_rng(seed).normal(0.0, sigma, img.shape[:2] + (1,)).astype(np.float32)
    return np.clip(img + noise * np.array([1.0, -0.5, -1.0], np.float32), 0, 1)  # mostly colour


def test_both_readings_are_the_packs_own(chelsea):
    for img in (chelsea, _noisy(chelsea, 0.04)):
        read = readings.readings(img)
        crops = texture_crops(img)
        assert read["chroma_blotches"] == pytest.approx(float(np.median([_chroma_blotches(c) for c in crops])))
        assert read["every_window_blotches"] == float(np.median([_chroma_blotches(c, flat_share=1.0) for c in crops]))


def test_they_see_colour_noise_and_nothing_in_a_grey_photo(chelsea):
    grey = np.repeat(chelsea.mean(axis=2, keepdims=True), 3, axis=2)
    for key in ("chroma_blotches", "every_window_blotches"):
        assert readings.readings(grey)[key] < 1e-6
        assert readings.readings(_noisy(chelsea, 0.08))[key] > 2 * readings.readings(chelsea)[key]
