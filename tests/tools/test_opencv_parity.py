"""The pack needs no OpenCV, yet its filters and resampling compute what OpenCV's do: compared here with OpenCV's
own results, stored by scripts/make_opencv_reference.py. Each test runs twice: with the built-in filters, and
handing the work to the OpenCV that requirements-dev.txt installs (as where another pack brought one)."""
from __future__ import annotations

import logging
import sys
import types

import numpy as np
import pytest

from edit_agents.tools import imageops
from helpers import TEST_DATA

REF = np.load(TEST_DATA / "opencv_reference.npz")
RGB, GRAY, GRAY64, MASK, LEVELS = (REF[f"in_{k}"] for k in ("rgb", "gray", "gray64", "mask", "levels"))
FLOAT32 = dict(rtol=0, atol=2e-6)  # a few units in the last place of values in 0..1: the order of the sums

pytestmark = pytest.mark.usefixtures("filters")  # each test with the built-in filters and with OpenCV's


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0, 3.7])
def test_gaussian_blur(sigma):
    np.testing.assert_allclose(imageops.gaussian(RGB, sigma), REF[f"gaussian_{sigma}"], **FLOAT32)
    np.testing.assert_allclose(imageops.gaussian(GRAY, sigma), REF[f"gaussian_gray_{sigma}"], **FLOAT32)


def test_separable_filters():
    # float64 bit for bit (BRISQUE and NIQE count the exact zeros of flat areas)
    kernel = REF["sep64_kernel"]
    np.testing.assert_array_equal(imageops.correlate_separable(GRAY64, kernel, kernel), REF["sep64"])
    asym = imageops.correlate_separable(RGB, np.array([0.1, 0.5, 0.4]), np.array([0.2, 0.2, 0.6]))
    np.testing.assert_allclose(asym, REF["sep_asym"], **FLOAT32)
    np.testing.assert_allclose(imageops.sobel(GRAY, 1, 0), REF["sobel_x"], **FLOAT32)
    np.testing.assert_allclose(imageops.sobel(GRAY, 0, 1), REF["sobel_y"], **FLOAT32)
    np.testing.assert_allclose(imageops.laplacian(GRAY), REF["laplacian"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("size", [3, 15, 31])
def test_minimum_and_maximum_filters(size):
    """The dark channel's patch minimum and the deconvolution's ringing guard: scipy's 2-D rank filters with the
    borders extended, to the bit, by two 1-D passes or by OpenCV's erode and dilate."""
    from scipy import ndimage

    for img in (GRAY, RGB, np.random.default_rng(1).random((60, 90, 3), np.float32)):
        square = (size, size) + (1,) * (img.ndim - 2)  # each channel on its own
        np.testing.assert_array_equal(imageops.minimum_filter(img, size),
                                      ndimage.minimum_filter(img, square, mode="nearest"))
        np.testing.assert_array_equal(imageops.maximum_filter(img, size),
                                      ndimage.maximum_filter(img, square, mode="nearest"))
        # the edges' width reads the range over a window with the borders mirrored, as scipy's default
        np.testing.assert_array_equal(imageops.maximum_filter(img, size, "reflect"),
                                      ndimage.maximum_filter(img, square, mode="reflect"))
        np.testing.assert_array_equal(imageops.minimum_filter(img, size, "reflect"),
                                      ndimage.minimum_filter(img, square, mode="reflect"))


@pytest.mark.parametrize("name,size", [("half", (18, 14)), ("third", (12, 9)), ("odd", (11, 8)), ("up", (59, 43))])
def test_resize(name, size):
    np.testing.assert_allclose(imageops.resize(RGB, size, "area"), REF[f"area_{name}"], **FLOAT32)
    np.testing.assert_allclose(imageops.resize(RGB, size, "cubic"), REF[f"cubic_{name}"], **FLOAT32)


def test_resize_keeps_a_gray_image_two_dimensional():
    out = imageops.resize(GRAY, (12, 9), "area")
    assert out.shape == (9, 12)
    np.testing.assert_allclose(out, REF["area_gray_third"], **FLOAT32)


def test_resize_and_thumbnails_keep_an_integer_image_in_its_scale():
    """A uint8 image shrinks to uint8 levels (the thumbnails shrink before converting: a float copy of 0..255
    levels would have been clipped to white)."""
    import base64
    import io

    from PIL import Image

    levels = np.full((60, 80, 3), 100, np.uint8)
    levels[:, 40:] = 200
    small = imageops.resize(levels, (20, 15), "area")
    assert small.dtype == np.uint8 and small[:, :9].max() == 100 and small[:, 11:].min() == 200
    wide = imageops.resize((levels.astype(np.uint16) * 257), (20, 15), "cubic")
    assert wide.dtype == np.uint16 and wide[:, :8].max() == 100 * 257
    url = imageops.thumbnail_data_url(levels, side=40)
    thumb = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))), np.float64)
    assert abs(thumb[:, :15].mean() - 100) < 3 and abs(thumb[:, 25:].mean() - 200) < 3


def test_rotation_by_an_affine_warp():
    out = imageops.warp_affine(RGB, REF["warp_matrix"], (37, 29))
    np.testing.assert_allclose(out, REF["warp"], **FLOAT32)


@pytest.mark.parametrize("diameter,sigma_color,sigma_space", [(5, 0.125, 5.0), (3, 0.05, 1.5), (9, 0.2, 4.0)])
def test_bilateral_filter(diameter, sigma_color, sigma_space):
    out = imageops.bilateral_filter(RGB, diameter, sigma_color, sigma_space)
    np.testing.assert_allclose(out, REF[f"bilateral_{diameter}_{sigma_color}_{sigma_space}"], **FLOAT32)


def test_bilateral_filter_of_a_gray_image():
    np.testing.assert_allclose(imageops.bilateral_filter(GRAY, 5, 0.1, 3.0), REF["bilateral_gray"], **FLOAT32)


@pytest.mark.parametrize("clip,grid", [(2.0, 8), (4.0, 3), (1.0, 5)])
def test_clahe_is_exact(clip, grid):
    np.testing.assert_array_equal(imageops.clahe_uint16(LEVELS, clip, grid), REF[f"clahe_{clip}_{grid}"])


@pytest.mark.parametrize("radius", [1, 3, 5])
def test_mask_dilate_and_erode_are_exact(radius):
    np.testing.assert_array_equal(imageops.morphology(MASK, radius), REF[f"dilate_{radius}"])
    np.testing.assert_array_equal(imageops.morphology(MASK, -radius), REF[f"erode_{radius}"])


def test_a_broken_opencv_is_left_out_with_a_warning(monkeypatch, caplog):
    """Two OpenCV wheels in one folder can leave a cv2 that imports without its functions: the built-in filters
    run, and the log says why and how to silence it."""
    monkeypatch.setenv(imageops.OPENCV_SWITCH, "1")
    imageops._installed_opencv.cache_clear()
    monkeypatch.setitem(sys.modules, "cv2", types.ModuleType("cv2"))
    try:
        with caplog.at_level(logging.WARNING, logger="edit_agents"):
            assert imageops.opencv() is None
        assert "OpenCV is installed but does not load" in caplog.text and imageops.OPENCV_SWITCH in caplog.text
        np.testing.assert_allclose(imageops.gaussian(RGB, 2.0), REF["gaussian_2.0"], **FLOAT32)
    finally:
        monkeypatch.delitem(sys.modules, "cv2")
        imageops._installed_opencv.cache_clear()


def test_a_thumbnail_of_a_large_photo_samples_it_and_looks_like_its_full_average():
    """A thumbnail of a photo many times its size is averaged from every few pixels (imageops.THUMB_SAMPLES per
    thumbnail pixel along a side), not from all of them: it stays within a few levels of the full area average."""
    import base64
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:1200, 0:1600].astype(np.float32)
    photo = np.stack([xx / 1600, yy / 1200, 0.5 + 0.3 * np.sin(xx / 90) * np.cos(yy / 70)], axis=2)
    photo = np.clip(photo + rng.normal(0, 0.05, photo.shape), 0, 1).astype(np.float32)  # fine grain to alias
    url = imageops.thumbnail_data_url(photo, side=64, quality=95)
    thumb = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))), np.float64)
    full = imageops.resize(photo, (64, 48), "area") * 255
    assert thumb.shape == full.shape
    assert np.abs(thumb - full).mean() < 3.0, np.abs(thumb - full).mean()
