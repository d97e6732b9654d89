"""bench/jpeg_readings.py's colour blotches read where the luminance is flattest: over every window they are the
pack's own reading, and they see colour noise, not a grey photo."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import jpeg_readings as readings
from photoset import load

from edit_agents.agents.metrics import _chroma_blotches, texture_crops


@pytest.fixture(scope="module")
def chelsea():
    return np.clip(load("chelsea", 384), 0, 1).astype(np.float32)


def _noisy(img, sigma, seed=0):
    noise = np.random.default_rng(seed).normal(0.0, sigma, img.shape[:2] + (1,)).astype(np.float32)
    return np.clip(img + noise * np.array([1.0, -0.5, -1.0], np.float32), 0, 1)  # mostly colour


def test_over_every_window_the_reading_is_the_packs_own(chelsea):
    for img in (chelsea, _noisy(chelsea, 0.04)):
        for crop in texture_crops(img):
            assert readings.flat_blotches(crop, share=1.0) == _chroma_blotches(crop)


def test_it_sees_colour_noise_and_nothing_in_a_grey_photo(chelsea):
    grey = np.repeat(chelsea.mean(axis=2, keepdims=True), 3, axis=2)
    assert max(readings.flat_blotches(c) for c in texture_crops(grey)) < 1e-6
    clean = np.median([readings.flat_blotches(c) for c in texture_crops(chelsea)])
    noisy = np.median([readings.flat_blotches(c) for c in texture_crops(_noisy(chelsea, 0.08))])
    assert noisy > 2 * clean
