import math

import numpy as np
import pytest

from edit_agents.tools import ToolCallError, default_registry
from edit_agents.tools.imageops import resize_longest
from edit_agents.tools.spec import Param, ToolSpec


@pytest.fixture()
def registry():
    return default_registry()


def test_registry_has_the_classic_tools_with_complete_specs(registry):
    assert len(registry) >= 20
    for spec in registry.specs():
        assert spec.description and spec.description.endswith(".")
        manual = spec.manual()
        assert spec.name in manual
        for p in spec.params:
            assert p.name in manual and p.description
            if p.type in ("float", "int"):
                assert p.minimum <= p.default <= p.maximum, f"{spec.name}.{p.name} default outside its range"


def test_unknown_tool_lists_closest_names(registry):
    with pytest.raises(ToolCallError) as err:
        registry.get("exposur")
    assert "closest: exposure" in str(err.value)


def test_out_of_range_is_clamped_with_a_note(registry):
    clean, notes = registry.get("exposure").validate({"stops": 9})
    assert clean == {"stops": 3.0}
    assert notes and "clamped to 3" in notes[0]


def test_reject_policy_and_bad_values():
    spec = ToolSpec("t", "A test tool.", "Testing.", (
        Param("x", "float", "x", default=0.0, minimum=0, maximum=1, out_of_range="reject"),
        Param("mode", "enum", "m", default="a", choices=("a", "b")),
        Param("box", "box", "b", required=False, default=(0, 0, 1, 1)),
    ), run=lambda img, **kw: img)
    with pytest.raises(ToolCallError, match="outside"):
        spec.validate({"x": 2})
    for bad in (math.nan, math.inf, "abc", [1], True):
        with pytest.raises(ToolCallError):
            spec.validate({"x": bad})
    with pytest.raises(ToolCallError, match="did you mean 'b'"):
        spec.validate({"mode": "bb"})
    with pytest.raises(ToolCallError, match="x0 < x1"):
        spec.validate({"box": [0.5, 0, 0.4, 1]})
    with pytest.raises(ToolCallError, match="has no parameter 'y'"):
        spec.validate({"y": 1})
    assert spec.validate({"x": "0.5"})[0]["x"] == 0.5


def test_missing_required_parameter(registry):
    with pytest.raises(ToolCallError, match="needs parameter 'box'"):
        registry.get("crop").validate({})


def test_subset_and_catalogue(registry):
    sub = registry.subset(names=["exposure", "contrast"])
    assert sub.names() == ["exposure", "contrast"]
    assert sub.planner_catalogue().count("\n") == 1
    with pytest.raises(ToolCallError):
        registry.subset(names=["nope"])


def test_call_runs_validated_parameters(registry, photos):
    img = photos["chelsea"]
    out, params, notes = registry.call("exposure", img, {"stops": 1})
    assert params == {"stops": 1.0} and notes == []
    assert out.mean() > img.mean() * 1.3
    assert out.shape == img.shape and out.dtype == np.float32


def test_pixel_lengths_scale_with_a_reduced_copy():
    """A search copy at half size gets half the blur radius, so sharpen does to the copy what it does to the photo."""
    tools = default_registry()
    sharpen = tools.get("sharpen")
    assert sharpen.at_scale({"amount": 1.2, "radius": 2.0}, 0.5) == {"amount": 1.2, "radius": 1.0}
    assert sharpen.at_scale({"amount": 1.2}, 0.5)["radius"] == sharpen.param("radius").default * 0.5  # default scaled
    # the range is the photo's: on a copy a tenth of the size a 0.4 px radius is 0.04 px, not the smallest radius
    assert sharpen.at_scale({"radius": 0.4}, 0.1)["radius"] == pytest.approx(0.04)
    assert tools.get("exposure").at_scale({"stops": 1.0}, 0.25) == {"stops": 1.0}  # not a length: unchanged
    assert [(s.name, p.name) for s in tools.specs() for p in s.params if p.pixels] == [
        ("sharpen", "radius"), ("denoise", "radius"), ("chroma_denoise", "radius"), ("gaussian_blur", "sigma"),
        ("deband", "radius"), ("deconvolve", "radius"), ("deconvolve", "length"), ("deconvolve", "sigma"),
        ("deconvolve", "sigma_minor")]
    # the registry validates the photo's parameters (clamps reported), then scales them without clamping again
    img = np.random.default_rng(0).random((32, 32, 3), dtype=np.float32)
    _, clean, notes = tools.call("sharpen", img, {"radius": 0.1}, scale=0.25)
    assert clean["radius"] == 0.3 and notes  # the photo's radius was clamped to the range, and said so


@pytest.mark.parametrize("tool,params", [("sharpen", {"amount": 1.2, "radius": 1.5}),
                                         ("gaussian_blur", {"sigma": 1.5})])
def test_a_filter_on_the_reduced_copy_does_what_it_does_to_the_photo(tool, params, photos):
    """At a quarter of the size a 1.5 px radius is 0.375 px. A kernel sampled from the Gaussian is then
    nearly the identity, and a sharpen looks free on the copy though it changes the photo; the band-limited
    kernel makes the copy's edit close to the photo's edit seen at the copy's size."""
    tools = default_registry()
    photo = photos["coffee"]
    small = resize_longest(photo, max(photo.shape[:2]) // 4)
    seen = resize_longest(tools.call(tool, photo, params)[0], max(small.shape[:2]))
    on_copy = tools.call(tool, small, params, scale=0.25)[0]
    untouched = np.abs(seen - small).mean()
    # a sampled kernel: 0.72 for the sharpen. The sharpen's halo guard clamps to a 3x3 window of pixels, which
    # a quarter-size copy cannot scale down (its halos are below a pixel there): 0.73 with the band-limited
    # kernel too, so the sharpen is held to a looser bound; the full-resolution re-score decides its edits
    bound = 0.8 if tool == "sharpen" else 0.5
    assert np.abs(on_copy - seen).mean() < bound * untouched


def test_denoise_window_shrinks_with_the_copy(photos):
    """The noise a denoise removes is below a pixel of a quarter-size copy: there it leaves the copy as it is."""
    tools = default_registry()
    img = photos["astronaut"]
    assert np.array_equal(tools.call("denoise", img, {"strength": 1.0}, scale=0.25)[0], img)
    assert np.abs(tools.call("denoise", img, {"strength": 1.0}, scale=0.5)[0] - img).mean() > 0
    assert np.abs(tools.call("denoise", img, {"strength": 1.0})[0] - img).mean() > 0


@pytest.mark.parametrize("tool,params,exact", [("contrast", {"amount": 0.5}, True),
                                               ("auto_levels", {"clip_percent": 1.0}, True),
                                               ("white_balance", {"strength": 1.0}, True),
                                               ("highlights_shadows", {"shadows": 0.6, "highlights": 0.4}, False),
                                               ("clahe", {"clip_limit": 3.0}, False)])
def test_pins_make_a_crop_edited_alone_match_the_crop_of_the_edited_photo(tool, params, exact, photos):
    """Tools that measure the whole image (mean, levels, illuminant, mask width, tile size) do the same to a
    crop when given what they measured on the whole: what the search's native-resolution crops rely on."""
    tools = default_registry()
    spec = tools.get(tool)
    photo = photos["coffee"]
    box = (slice(300, 400), slice(100, 228))
    clean = spec.validate(params)[0]
    truth = tools.call(tool, photo, params)[0][box]
    alone = tools.call(tool, np.ascontiguousarray(photo[box]), params)[0]
    pinned = tools.call(tool, np.ascontiguousarray(photo[box]), params, pins=spec.pinned(photo, clean))[0]
    err, err_alone = np.abs(pinned - truth).mean(), np.abs(alone - truth).mean()
    assert err < (1e-5 if exact else 0.5 * err_alone), (err, err_alone)
    assert err_alone > 0.003  # without the pins the crop is edited differently


def test_pixel_pins_scale_with_the_image():
    spec = default_registry().get("highlights_shadows")
    assert spec.pins_at_scale({"reference_side": 256.0}, 4.0) == {"reference_side": 1024.0}
    assert default_registry().get("contrast").pins_at_scale({"pivot": 0.4}, 4.0) == {"pivot": 0.4}


# what makes each tool change a clean photo: a kernel to undo, a black point, a veil to take out
GIVEN = {"deconvolve": {"kind": "gaussian", "sigma": 1.2}, "levels": {"black": 0.1, "gamma": 1.3}}
PINNED = {"dehaze": {"airlight": [0.9, 0.9, 0.95], "veil": [0.2, 0.2, 0.2]}}


def test_a_tool_marked_pointwise_treats_each_pixel_on_its_own(registry, photos):
    """A tool marked pointwise (a tone or colour curve, with what it measures on the whole photo pinned) gives a pixel
    the same result wherever it stands: it commutes with a shuffle of the pixels. PhotoAgent holds such a curve to the
    quality readings of the photo without it (Reward.score's held_readings), so the flag must not be set on a local
    edit."""
    img = resize_longest(photos["astronaut"], 96)
    h, w, c = img.shape
    order = np.random.default_rng(0).permutation(h * w)
    shuffle = lambda x: x.reshape(h * w, -1)[order].reshape(h, w, -1)  # noqa: E731
    marked, local = [], []
    for spec in registry.specs():
        if spec.category != "classic" or not spec.stands_alone or spec.moves_pixels:
            continue
        params = spec.validate(GIVEN.get(spec.name, {}))[0]
        params.update({p.name: (p.maximum + p.default) / 2 for p in spec.params
                       if p.type == "float" and p.minimum < 0 < p.maximum and p.default == 0})  # a real change
        pins = PINNED.get(spec.name) or spec.pinned(img, params)
        out = registry.call(spec.name, img, params, pins=pins)[0]
        if np.allclose(out, img, atol=1e-5):  # nothing to do in this photo (no banding, no specks): nothing to tell
            continue
        moved = registry.call(spec.name, shuffle(img), params, pins=pins)[0]
        commutes = np.allclose(moved, shuffle(out), atol=1e-5)
        assert commutes == spec.pointwise, (spec.name, spec.pointwise)
        (marked if spec.pointwise else local).append(spec.name)
    assert {"exposure", "gamma", "contrast", "levels", "white_balance", "dehaze"} <= set(marked)
    assert {"sharpen", "denoise", "clahe", "highlights_shadows", "deblock", "deconvolve"} <= set(local)
