import numpy as np
import pytest

from edit_agents.agents.quality.metrics import structure_similarity
from edit_agents.tools import default_registry
from edit_agents.tools.imageops import luminance

pytestmark = pytest.mark.usefixtures("filters")  # each test with the built-in filters and with OpenCV's
REGISTRY = default_registry()
REQUIRED = {"crop": {"box": [0.1, 0.2, 0.6, 0.9]}}
GEOMETRY = {"crop", "crop_aspect", "resize", "rotate", "expand_canvas"}


def variants(img):
    gray = luminance(img)[:, :, None]
    rgba = np.concatenate([img, np.linspace(0, 1, img.shape[1], dtype=np.float32)[None, :, None].repeat(img.shape[0], 0)], 2)
    return {"rgb": img, "gray": gray, "rgba": rgba}


IMAGE_TOOLS = [s.name for s in REGISTRY.specs() if s.category == "classic"]


@pytest.mark.parametrize("tool", IMAGE_TOOLS)
def test_every_tool_on_rgb_gray_rgba_and_one_pixel(tool, photos):
    base = photos["coffee"][::4, ::4]
    for kind, img in {**variants(base), "1px": base[:1, :1]}.items():
        out, _, _ = REGISTRY.call(tool, img, REQUIRED.get(tool, {}))
        assert out.ndim == 3 and out.dtype == np.float32, (tool, kind)
        assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1, (tool, kind)
        expected_channels = 3 if (tool == "sepia" and img.shape[2] == 1) else img.shape[2]
        assert out.shape[2] == expected_channels, (tool, kind, out.shape)
        if tool not in GEOMETRY:
            assert out.shape[:2] == img.shape[:2], (tool, kind)
        if kind == "rgba" and tool not in GEOMETRY | {"flip", "gaussian_blur"}:
            assert np.array_equal(out[:, :, 3], img[:, :, 3]), f"{tool} changed the alpha channel"


def mean_luma(img):
    return float(luminance(img).mean())


def test_tone_tools_move_brightness_and_contrast(photos):
    img = photos["chelsea"]
    assert mean_luma(REGISTRY.call("exposure", img, {"stops": 0.5})[0]) > mean_luma(img) + 0.05
    assert mean_luma(REGISTRY.call("brightness", img, {"amount": -0.1})[0]) < mean_luma(img) - 0.05
    assert mean_luma(REGISTRY.call("gamma", img, {"gamma": 1.5})[0]) > mean_luma(img) + 0.05
    assert luminance(REGISTRY.call("contrast", img, {"amount": 0.5})[0]).std() > luminance(img).std() * 1.3
    levels = REGISTRY.call("auto_levels", img * 0.5 + 0.25, {})[0]
    assert luminance(levels).std() > luminance(img * 0.5 + 0.25).std() * 1.5
    lifted = REGISTRY.call("highlights_shadows", photos["rocket"], {"shadows": 0.8})[0]
    dark = luminance(photos["rocket"]) < 0.2
    assert luminance(lifted)[dark].mean() > luminance(photos["rocket"])[dark].mean() + 0.03


def test_colour_tools(photos):
    img = photos["coffee"]
    sat = lambda x: float((x.max(axis=2) - x.min(axis=2)).mean())  # noqa: E731
    assert sat(REGISTRY.call("saturation", img, {"amount": 0.5})[0]) > sat(img) * 1.2
    assert sat(REGISTRY.call("vibrance", img, {"amount": 0.5})[0]) > sat(img) * 1.05
    gray = REGISTRY.call("grayscale", img, {})[0]
    assert np.allclose(gray[:, :, 0], gray[:, :, 1]) and np.allclose(gray[:, :, 1], gray[:, :, 2])
    warm = REGISTRY.call("temperature_tint", img, {"temperature": 0.5})[0]
    assert (warm[:, :, 0] - warm[:, :, 2]).mean() > (img[:, :, 0] - img[:, :, 2]).mean() + 0.05
    neutral = photos["astronaut"]  # a neutrally lit photo: removing a cast should give it back
    cast = np.clip(neutral * np.array([1.0, 0.9, 0.6], np.float32), 0, 1)
    balanced = REGISTRY.call("white_balance", cast, {"strength": 1.0})[0]
    from edit_agents.tools.imageops import illuminant_estimate

    cast_of = lambda x: float(np.linalg.norm(illuminant_estimate(x)[0]))  # noqa: E731
    assert cast_of(balanced) < cast_of(cast) * 0.2 and cast_of(cast) > 0.3


def test_white_balance_reads_the_light_the_search_judged_whatever_the_photos_size(photos):
    """The search judges a white balance on its small copy of the photo; the kept edit is made to the whole photo.
    Both read the light on a copy of the same size (imageops.scene_light), so the photo gets the balance that was
    judged: read on every pixel of the whole photo, a camera's noisier blue (its finest detail, which the copy
    averages away) moved the gray-edge estimate, and the blue's gain with it, by 7% (issue 27)."""
    from edit_agents.agents.photoagent.search import apply_call, root_state
    from edit_agents.agents.records import ToolCall
    from edit_agents.tools.imageops import resize

    img = photos["chelsea"][::2, ::2]
    h, w = img.shape[:2]
    big = resize(img, (w * 4, h * 4), "cubic").clip(0, 1) * np.array([1.0, 0.9, 0.7], np.float32)  # a warm light
    noise = np.random.default_rng(0).normal(0, 1, big.shape) * np.array([0.02, 0.02, 0.06])  # blue the noisiest
    big = (big + noise).clip(0, 1).astype(np.float32)
    call = ToolCall("white_balance", {"strength": 1.0})
    judged = apply_call(REGISTRY, root_state(big, 256), call)  # as the search makes it on its copy
    made = REGISTRY.call("white_balance", big, {"strength": 1.0})[0]  # as the kept edit is made

    def gains(before, after):  # each channel's gain over green's (the balance keeps the brightness, not green)
        g = after.reshape(-1, 3).mean(axis=0) / before.reshape(-1, 3).mean(axis=0)
        return g / g[1]

    searched, whole = gains(root_state(big, 256).preview, judged.preview), gains(big, made)
    assert whole[2] > 1.2  # the warm light is taken out: blue raised against green
    assert np.allclose(whole, searched, rtol=0.01), f"whole photo {whole}, search copy {searched}"


def test_white_balance_keeps_a_colourful_photos_brightness(photos):
    """Taking a cast out keeps the photo's mean brightness, not a grey's: the orange coffee under a warm light lost
    4.7% of its brightness when the gains kept a grey pixel's luminance instead (issue 27)."""
    img = photos["coffee"]
    cast = np.clip(img * np.array([1.0, 0.85, 0.7], np.float32), 0, 1)
    balanced = REGISTRY.call("white_balance", cast, {"strength": 1.0})[0]
    assert luminance(balanced).mean() == pytest.approx(luminance(cast).mean(), rel=0.005)
    assert (balanced[..., 0] - balanced[..., 2]).mean() < (cast[..., 0] - cast[..., 2]).mean() - 0.05  # it still cools


def test_detail_tools(photos):
    img = photos["camera"]
    lap = lambda x: float(np.abs(np.diff(luminance(x), axis=1)).mean())  # noqa: E731
    assert lap(REGISTRY.call("sharpen", img, {"amount": 1.0})[0]) > lap(img) * 1.2
    assert lap(REGISTRY.call("gaussian_blur", img, {"sigma": 3})[0]) < lap(img) * 0.6
    rng = np.random.default_rng(0)
    noisy = np.clip(img + rng.normal(0, 0.08, img.shape).astype(np.float32), 0, 1)
    assert lap(REGISTRY.call("denoise", noisy, {"strength": 1.0})[0]) < lap(noisy) * 0.7
    vig = REGISTRY.call("vignette", img, {"amount": 0.6})[0]
    assert vig[:20, :20].mean() < img[:20, :20].mean() * 0.7
    h, w = img.shape[:2]
    assert np.allclose(vig[h // 2 - 5:h // 2 + 5, w // 2 - 5:w // 2 + 5], img[h // 2 - 5:h // 2 + 5, w // 2 - 5:w // 2 + 5])


def test_sharpen_keeps_to_each_pixels_own_neighbourhood():
    """The halo guard: no pixel leaves its 3x3 neighbourhood's range (borders extended, as scipy's "nearest" reads
    them) by more than a tenth of that range and 0.004."""
    from scipy import ndimage

    img = np.zeros((40, 41, 3), np.float32)
    img[:, 20:] = 0.8  # a hard edge, which an unsharp mask overshoots on both sides
    img[5, 5] = 0.5  # and a lone dot by the border
    out = REGISTRY.call("sharpen", img, {"amount": 2.0, "radius": 2.0})[0]
    lum = lambda x: x @ np.array([0.2126, 0.7152, 0.0722], np.float32)  # noqa: E731
    before = lum(img)
    lo = ndimage.minimum_filter(before, 3, mode="nearest")
    hi = ndimage.maximum_filter(before, 3, mode="nearest")
    slack = (hi - lo) * 0.1 + 0.004
    after = lum(out)
    assert np.all(after >= lo - slack - 1e-5) and np.all(after <= hi + slack + 1e-5)
    assert after[20, 20] > before[20, 20] + 0.05 and after[20, 19] < before[20, 19] + 1e-6  # it did sharpen the edge


def test_geometry_tools_are_exact(photos):
    img = photos["coffee"]  # 400 x 600
    assert REGISTRY.call("crop_aspect", img, {"aspect": "1:1"})[0].shape[:2] == (400, 400)
    assert REGISTRY.call("crop_aspect", img, {"aspect": "16:9"})[0].shape[:2] == (338, 600)
    assert REGISTRY.call("crop", img, {"box": [0, 0, 0.5, 0.5]})[0].shape[:2] == (200, 300)
    assert REGISTRY.call("resize", img, {"longest_side": 300})[0].shape[:2] == (200, 300)
    assert REGISTRY.call("resize", img, {"longest_side": 64, "mode": "square"})[0].shape[:2] == (64, 64)
    rotated = REGISTRY.call("rotate", img, {"angle": 90})[0]
    assert rotated.shape[:2] == (600, 400) and np.array_equal(rotated, np.rot90(img))
    assert REGISTRY.call("rotate", img, {"angle": 30})[0].shape[0] > 400
    assert np.array_equal(REGISTRY.call("flip", img, {})[0], img[:, ::-1])
    assert REGISTRY.call("expand_canvas", img, {"border": 0.1})[0].shape[:2] == (520, 720)


def test_a_crop_box_on_the_border_is_mended_not_obeyed(photos):
    """Valid boxes a model answered that would cut nothing or a sliver (the left edge at 0.999 of 451 pixels rounds
    to the right border): each comes back as a region of at least 8 pixels a side inside the photo, so nothing
    downstream meets an empty image (issue 67). A box with its edges crossed is refused by name, as before."""
    from edit_agents.tools.spec import ToolCallError

    img = photos["coffee"][:300, :451]
    for box in ([0.999, 0.0, 1.0, 1.0], [0.0, 0.999, 1.0, 1.0], [0.5, 0.5, 0.501, 0.501], [0.0, 0.0, 0.001, 0.001]):
        out = REGISTRY.call("crop", img, {"box": box})[0]
        assert out.shape[0] >= 8 and out.shape[1] >= 8, (box, out.shape)
    assert np.array_equal(REGISTRY.call("crop", img, {"box": [0.999, 0.0, 1.0, 1.0]})[0], img[:, -8:])  # the nearest
    with pytest.raises(ToolCallError, match="x0 < x1"):
        REGISTRY.call("crop", img, {"box": [1.0, 0.0, 1.0, 1.0]})


def test_a_tool_that_returns_no_image_fails_its_step_by_name():
    from edit_agents.tools.spec import ToolCallError, checked_output

    for bad in (np.zeros((300, 0, 3), np.float32), np.zeros((0, 5, 3), np.float32), np.zeros((4, 4), np.float32),
                np.full((4, 4, 3), np.nan, np.float32)):
        with pytest.raises(ToolCallError, match="'crop'"):
            checked_output("crop", bad)
    good = np.zeros((1, 1, 3), np.float32)
    assert checked_output("crop", good) is good


def test_edit_region_changes_only_outside_the_box(photos):
    img = photos["astronaut"]
    out = REGISTRY.call("edit_region", img, {"box": [0.25, 0.25, 0.75, 0.75], "effect": "blur"})[0]
    inner = (slice(180, 330), slice(180, 330))
    assert np.abs(out[inner] - img[inner]).max() < 0.02
    assert np.abs(out[:60, :60] - img[:60, :60]).mean() > 0.01
    assert structure_similarity(img, out) < 0.95


def test_large_image(photos):
    big = np.tile(photos["coffee"], (8, 8, 1))  # 3200 x 4800, 15 megapixels
    out, _, _ = REGISTRY.call("contrast", big, {"amount": 0.2})
    assert out.shape == big.shape


def test_mask_tools_and_chains_by_reference(photos):
    from edit_agents.agents.records import ToolCall
    from edit_agents.agents.roles import run_chain
    from edit_agents.tools import ToolCallError

    img = photos["astronaut"]
    box = REGISTRY.call("box_mask", img, {"box": [0.25, 0.25, 0.5, 0.5]})[0]
    assert box.shape == (512, 512, 1) and box.sum() == 128 * 128
    grown = REGISTRY.call("mask_grow", box, {"pixels": 4})[0]
    assert grown.sum() > box.sum() and REGISTRY.call("mask_grow", box, {"pixels": -4})[0].sum() < box.sum()
    soft = REGISTRY.call("mask_feather", box, {"radius": 5})[0]
    assert 0 < soft[128 - 3, 200, 0] < 1
    inv = REGISTRY.call("mask_invert", box, {})[0]
    assert np.array_equal(inv + box, np.ones_like(box))
    other = REGISTRY.call("box_mask", img, {"box": [0.4, 0.4, 0.9, 0.9]})[0]
    union = REGISTRY.call("mask_union", box, {"other": "step:0"}, refs=[other])[0]
    inter = REGISTRY.call("mask_intersect", box, {"other": "step:0"}, refs=[other])[0]
    assert union.sum() > box.sum() and 0 < inter.sum() < box.sum()
    # a chain: mask -> grow it -> blur everything outside it
    chain = [ToolCall("box_mask", {"box": [0.3, 0.3, 0.7, 0.7]}), ToolCall("mask_grow", {"pixels": 6}, source="step:0"),
             ToolCall("edit_region", {"mask": "step:1", "effect": "blur"}, source="input")]
    out = run_chain(REGISTRY, chain, img)
    assert out.shape == img.shape
    assert np.abs(out[240:270, 240:270] - img[240:270, 240:270]).max() < 0.02
    assert np.abs(out[:50, :50] - img[:50, :50]).mean() > 0.01
    with pytest.raises(ToolCallError, match="ends with mask_grow"):
        run_chain(REGISTRY, chain[:2], img)
    with pytest.raises(ToolCallError, match="only 0 earlier step"):
        REGISTRY.call("edit_region", img, {"mask": "step:0"})
    with pytest.raises(ToolCallError, match="must reference an earlier step"):
        REGISTRY.call("edit_region", img, {"mask": "the dog"})
    with pytest.raises(ToolCallError, match="masks must match"):
        REGISTRY.call("edit_region", img, {"mask": "step:0"}, refs=[np.ones((10, 10, 1), np.float32)])


def test_a_resize_past_the_megapixel_limit_is_refused_with_the_fix(monkeypatch):
    """A model may ask for a 16384 px square (268 MP, schema-valid): refused before it is made, naming the limit."""
    from edit_agents.tools import classic
    from edit_agents.tools.spec import ToolCallError

    img = np.zeros((24, 32, 3), np.float32)
    with pytest.raises(ToolCallError, match="268 MP.*EDIT_AGENTS_MAX_MEGAPIXELS.*smaller longest_side"):
        classic.resize(img, 16384, "square")
    assert classic.resize(img, 2000).shape == (1500, 2000, 3)  # below the limit, made as asked
    monkeypatch.setenv("EDIT_AGENTS_MAX_MEGAPIXELS", "2")
    with pytest.raises(ToolCallError, match="3 MP"):
        classic.resize(img, 2000)
