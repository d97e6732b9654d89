"""The built-in filters cut a large image into tiles of rows (and a separable filter switches to banded matrix
products there), but the OpenCV parity tests' images are small enough to be filtered in one piece. Here the
tiled paths meet the one-piece results on images cut into many uneven tiles, so a photo gets what the parity
tests check."""
from __future__ import annotations

import numpy as np
import pytest

from edit_agents.tools import imageops

FLOAT32 = dict(rtol=0, atol=2e-6)


@pytest.fixture(autouse=True)
def built_in(monkeypatch):
    monkeypatch.setenv(imageops.OPENCV_SWITCH, "0")


def image(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    smooth = np.cumsum(rng.normal(0, 0.05, (h, w, c)), axis=1)  # structure as well as noise
    return np.clip(0.5 + smooth - smooth.mean(), 0, 1).astype(np.float32)


def one_piece_and_tiled(monkeypatch, fn, tile_elements: int):
    with monkeypatch.context() as m:
        m.setattr(imageops.tiles, "SMALL_ELEMENTS", 1 << 40)
        m.setattr(imageops.tiles, "TILE_ELEMENTS", 1 << 40)
        whole = fn()
    with monkeypatch.context() as m:
        m.setattr(imageops.tiles, "SMALL_ELEMENTS", 0)
        m.setattr(imageops.tiles, "TILE_ELEMENTS", tile_elements)
        tiled = fn()
    return whole, tiled


@pytest.mark.parametrize("taps", [3, 9, 31])  # columns: multiply-adds, banded products; rows too past 25 taps
@pytest.mark.parametrize("border", ["reflect101", "replicate", "zero"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_a_separable_filter_in_tiles_equals_it_in_one_piece(monkeypatch, taps, border, channels):
    img = image(77, 53, channels)
    rng = np.random.default_rng(taps)
    kx, ky = rng.random(taps), rng.random(taps)  # asymmetric: a flipped kernel or a shifted tile shows
    whole, tiled = one_piece_and_tiled(
        monkeypatch, lambda: imageops.correlate_separable(img, kx / kx.sum(), ky / ky.sum(), border), 53 * channels * 5)
    assert whole.shape == tiled.shape == img.shape
    np.testing.assert_allclose(tiled, whole, **FLOAT32)


def test_a_gaussian_wider_than_the_image_in_tiles(monkeypatch):
    img = image(40, 24, 3, seed=1)
    whole, tiled = one_piece_and_tiled(monkeypatch, lambda: imageops.gaussian(img, 6.0), 24 * 3 * 3)  # 49 taps
    np.testing.assert_allclose(tiled, whole, **FLOAT32)
    assert tiled.std() < img.std() / 2  # it did blur


def test_bilateral_resize_and_warp_in_tiles_are_unchanged(monkeypatch):
    img = image(61, 45, 3, seed=2)
    for fn in (lambda: imageops.bilateral_filter(img, 5, 0.1, 2.0),
               lambda: imageops.resize(img, (30, 20), "area"),
               lambda: imageops.resize(img, (70, 90), "cubic"),
               lambda: imageops.warp_affine(img, np.array([[0.9, 0.2, 3.0], [-0.2, 0.9, 5.0]]), (50, 66))):
        whole, tiled = one_piece_and_tiled(monkeypatch, fn, 45 * 3 * 4)
        np.testing.assert_array_equal(tiled, whole)


@pytest.mark.parametrize("radius", [3, -3, 9])
def test_dilate_and_erode_across_bands_match_the_definition(radius):
    """Morphology works in bands of max(64, 4 radius) rows: on 150 rows, three bands. The reference is the
    definition: the max (dilate) or min (erode) over the ellipse's offsets, outside pixels taking no part."""
    rng = np.random.default_rng(radius + 10)
    mask = (rng.random((150, 41)) < 0.03).astype(np.float32) if radius > 0 else \
        (rng.random((150, 41)) > 0.03).astype(np.float32)
    k = abs(radius)
    fill = -np.inf if radius > 0 else np.inf
    padded = np.pad(mask, k, constant_values=fill)
    pick = np.maximum if radius > 0 else np.minimum
    expected = np.full_like(mask, fill)
    for dy in range(-k, k + 1):
        half = int(np.rint(np.sqrt(k * k - dy * dy)))
        for dx in range(-half, half + 1):
            expected = pick(expected, padded[k + dy:k + dy + mask.shape[0], k + dx:k + dx + mask.shape[1]])
    out = imageops.morphology(mask, radius)
    np.testing.assert_array_equal(out, expected)
    assert 0 < out.mean() < 1 and out.mean() != mask.mean()


@pytest.mark.parametrize("grid", [3, 7])
def test_clahe_in_threads_equals_it_in_one(monkeypatch, grid):
    """On an image past SMALL_ELEMENTS, CLAHE counts and blends its tiles in threads (numpy's loops let go of
    the interpreter); the values stay the single thread's, which the parity tests hold to OpenCV's."""
    import torch

    rng = np.random.default_rng(grid)
    levels = (np.cumsum(rng.normal(0, 300, (610, 530)), axis=1) % 65536).astype(np.uint16)
    assert levels.size > imageops.SMALL_ELEMENTS
    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)
    threaded = imageops.clahe_uint16(levels, 2.0, grid)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    single = imageops.clahe_uint16(levels, 2.0, grid)
    np.testing.assert_array_equal(threaded, single)
    assert np.abs(threaded.astype(np.int64) - levels).mean() > 100  # it did equalise


def test_work_in_threads_runs_every_part_once_and_passes_errors_on(monkeypatch):
    import torch

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    done = []
    imageops.in_threads(done.append, 5, imageops.SMALL_ELEMENTS + 1)
    assert sorted(done) == [0, 1, 2, 3, 4]

    def fails(part: int) -> None:
        if part == 3:
            raise ValueError("part 3 went wrong")
    with pytest.raises(ValueError, match="part 3"):
        imageops.in_threads(fails, 5, imageops.SMALL_ELEMENTS + 1)
