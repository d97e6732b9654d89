"""Photos as photographers have them (issue 31): 16-bit files read at full precision, colour profiles converted to
sRGB for the agents (checked against LittleCMS), EXIF orientation applied, and written back in the original's bit
depth and profile; unedited, bit for bit. On the real server: Load Photo and Save Photo, beside ComfyUI's Load
Image, which read a 16-bit gray PNG near white up to ComfyUI 0.3.x."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image, ImageCms

from edit_agents.tools.photo_io import PhotoError, encode_png, parse_icc, read_photo, write_photo
from icc_profiles import adobe_rgb, display_p3


def png16(values: np.ndarray, icc: bytes | None = None) -> bytes:
    """A 16-bit PNG of float values 0..1 (H x W x C), written by the pack's encoder."""
    return encode_png(np.clip(np.rint(values * 65535), 0, 65535).astype(np.uint16), icc)


def png8(values: np.ndarray, icc: bytes | None = None) -> bytes:
    return encode_png(np.clip(np.rint(values * 255), 0, 255).astype(np.uint8), icc)


def decoded(data: bytes) -> np.ndarray:
    """A file's own values, by an independent decoder (torchvision's for PNG)."""
    import torch
    from torchvision.io import ImageReadMode, decode_png

    return decode_png(torch.frombuffer(bytearray(data), dtype=torch.uint8), ImageReadMode.UNCHANGED).permute(1, 2, 0).numpy()


@pytest.fixture()
def cat(photos):
    return photos["chelsea"][::2, ::2, :3].astype(np.float32)


def test_a_16_bit_colour_png_is_read_at_full_precision_and_saved_back_bit_for_bit(cat):
    data = png16(cat)
    photo = read_photo(data, "cat16.png")
    assert photo.bits == 16 and not photo.gray and photo.profile == "sRGB (none embedded)"
    own = decoded(data)
    assert np.array_equal(photo.image, own.astype(np.float32) / 65535)  # every one of the 65536 levels
    out, notes = write_photo(photo.image, "png", photo=photo)
    assert np.array_equal(decoded(out), own) and "unedited: the original's own values" in notes
    edited, _ = write_photo(photo.image * 0.5, "png", photo=photo)
    again = decoded(edited)
    assert again.dtype == np.uint16 and np.abs(again.astype(int) - np.rint(own * 0.5)).max() <= 1


def test_a_16_bit_gray_png_is_not_read_near_white(photos):
    camera = photos["camera"][..., :1].astype(np.float32) if photos["camera"].ndim == 3 else photos["camera"][..., None]
    data = png16(camera)
    photo = read_photo(data, "camera16.png")
    assert photo.gray and photo.bits == 16 and photo.image.shape[2] == 3
    assert abs(float(photo.image.mean()) - float(camera.mean())) < 1e-4  # Load Image's /255 makes it ~1.0
    out, _ = write_photo(photo.image, "png", photo=photo)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(out))), decoded(data)[..., 0])  # still gray, 16-bit


def test_a_16_bit_tiff_round_trips_bit_for_bit(cat):
    tifffile = pytest.importorskip("tifffile")
    own = np.rint(cat * 65535).astype(np.uint16)
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, own, photometric="rgb")
    photo = read_photo(buffer.getvalue(), "cat16.tif")
    assert photo.bits == 16 and photo.format == "TIFF"
    out, notes = write_photo(photo.image, "tiff", photo=photo)
    assert np.array_equal(tifffile.imread(io.BytesIO(out)), own) and "16-bit TIFF" in notes  # no EXIF to drop


@pytest.mark.parametrize("profile", [adobe_rgb, display_p3], ids=["adobe-rgb", "display-p3"])
def test_an_embedded_profile_is_converted_to_srgb_as_littlecms_converts_it(cat, profile):
    icc = profile()
    data = png8(cat, icc)
    photo = read_photo(data, "wide.png")
    assert photo.icc == icc and "(test)" in photo.profile and any("converted to sRGB" in n for n in photo.notes)
    reference = ImageCms.profileToProfile(Image.open(io.BytesIO(data)), ImageCms.ImageCmsProfile(io.BytesIO(icc)),
                                          ImageCms.createProfile("sRGB"), outputMode="RGB")
    assert np.abs(np.rint(photo.image * 255) - np.asarray(reference)).max() <= 1
    # saved unedited: the original's values and profile; edited: converted back into the original's profile
    out, _ = write_photo(photo.image, "png", photo=photo)
    assert Image.open(io.BytesIO(out)).info["icc_profile"] == icc and np.array_equal(decoded(out), decoded(data))
    edited, notes = write_photo(np.clip(photo.image * 1.1, 0, 1), "png", photo=photo)
    assert any("converted back to" in n for n in notes) and Image.open(io.BytesIO(edited)).info["icc_profile"] == icc
    back = read_photo(edited, "edited.png").image
    inside = (photo.image * 1.1 < 0.99).all(axis=2) & (photo.image > 0.02).all(axis=2)  # in both gamuts
    assert np.abs(back - np.clip(photo.image * 1.1, 0, 1))[inside].max() < 2.5 / 255
    srgb, notes = write_photo(photo.image, "png", photo=photo, profile="sRGB")
    assert "tagged sRGB" in notes and parse_icc(Image.open(io.BytesIO(srgb)).info["icc_profile"]).is_srgb()


def test_exif_orientation_is_applied_and_the_exif_kept_without_it(cat):
    im = Image.fromarray(np.rint(cat * 255).astype(np.uint8))
    exif = im.getexif()
    exif[0x0112], exif[0x010F] = 6, "TestCam"  # rotate 90 clockwise to display; the camera's make
    exif.get_ifd(0x8769)[0x829A] = 0.008  # the exposure time, in the Exif sub-IFD
    buffer = io.BytesIO()
    im.save(buffer, "JPEG", exif=exif.tobytes(), quality=95)
    photo = read_photo(buffer.getvalue(), "turned.jpg")
    assert photo.image.shape[:2] == (cat.shape[1], cat.shape[0])  # turned upright
    assert "EXIF orientation 6 applied" in photo.notes
    for fmt in ("jpeg", "png"):
        out, _ = write_photo(photo.image * 0.9, fmt, photo=photo)
        saved = Image.open(io.BytesIO(out)).getexif()
        assert saved.get(0x010F) == "TestCam" and saved.get(0x0112, 1) == 1  # kept, but not turned twice
        assert float(saved.get_ifd(0x8769)[0x829A]) == pytest.approx(0.008)
        assert not Image.open(io.BytesIO(out)).info.get("prompt") and b"workflow" not in out


def test_files_that_are_not_photos_and_impossible_saves_are_refused_clearly(cat):
    with pytest.raises(PhotoError, match="notes.png: not an image file this can read.*PNG, TIFF, JPEG or WebP"):
        read_photo(b"just some text", "notes.png")
    photo = read_photo(png16(cat), "cat16.png")
    with pytest.raises(PhotoError, match="JPEG holds 8 bits"):
        write_photo(photo.image, "jpeg", 16, photo)
    with pytest.raises(PhotoError, match="choose one of"):
        write_photo(photo.image, "bmp")


def test_the_16_bit_copy_of_a_photo_gets_the_same_edits_as_its_8_bit_copy(photos):
    """Issue 31's target, on several photos with defects: PhotoAgent decides alike on both copies."""
    from edit_agents.agents.photoagent.search import MCTSSettings, mcts_enhance
    from edit_agents.tools import default_registry

    tools = default_registry().subset(categories=["classic"])
    cases = {"dim cat": photos["chelsea"][::2, ::2, :3] * 0.45,
             "flat coffee": 0.5 + (photos["coffee"][::2, ::2, :3] - 0.5) * 0.45,
             "warm rocket": np.clip(photos["rocket"][::2, ::2, :3] * np.array([1.15, 1.0, 0.8]), 0, 1),
             "dark astronaut": photos["astronaut"][::2, ::2, :3] ** 2.0}
    settings = MCTSSettings(simulations=12, max_steps=2, preview_side=160)
    for name, degraded in cases.items():
        degraded = degraded.astype(np.float32)
        runs = [mcts_enhance(read_photo(encode(degraded), name).image, tools, settings=settings)
                for encode in (png8, png16)]
        eight, sixteen = ([a.tool for a in r.actions] for r in runs)
        assert eight == sixteen, name
        assert abs(runs[0].score_after - runs[1].score_after) < 0.01, name


def photo_graph(image: str, **save) -> dict:
    return {
        "load": {"class_type": "EditAgentsLoadPhoto", "inputs": {"image": image}},
        "save": {"class_type": "EditAgentsSavePhoto", "inputs": {
            "images": ["load", 0], "filename_prefix": "photo_io", "format": "png", "bits": "as the original",
            "quality": 95, "profile": "the original's", "photo": ["load", 2], "trace": ["load", 3], **save}},
    }


def test_load_and_save_photo_on_the_server_keep_16_bits_and_the_profile(comfy, comfy_server, cat):
    from edit_agents.cli.client import ExecutionFailed

    data = png16(cat, adobe_rgb())
    (comfy_server.dirs()["input"] / "wide16.png").write_bytes(data)
    result = comfy.call("run", photo_graph("wide16.png"))
    saved = result.outputs["save"]["images"][0]
    out = (comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]).read_bytes()
    assert np.array_equal(decoded(out), decoded(data))  # loaded and saved unchanged: bit for bit
    assert Image.open(io.BytesIO(out)).info["icc_profile"] == adobe_rgb()
    trace = json.loads((comfy_server.dirs()["output"] / saved["subfolder"]
                        / saved["filename"].replace(".png", ".trace.json")).read_text())
    assert trace["summary"]["source"]["bits"] == 16 and "Adobe RGB" in trace["summary"]["source"]["profile"]
    assert "16-bit RGB PNG" in trace["steps"][0]["action"]
    # ComfyUI's own Load Image on a 16-bit gray PNG beside Load Photo
    gray = png16(cat[..., :1] * 0.5)
    (comfy_server.dirs()["input"] / "gray16.png").write_bytes(gray)
    both = comfy.call("run", {
        "comfy": {"class_type": "LoadImage", "inputs": {"image": "gray16.png"}},
        "ours": {"class_type": "EditAgentsLoadPhoto", "inputs": {"image": "gray16.png"}},
        "a": {"class_type": "EditAgentsSavePhoto", "inputs": {"images": ["comfy", 0], "filename_prefix": "via_comfy",
                                                              "format": "png", "bits": "16", "quality": 95,
                                                              "profile": "sRGB"}},
        "b": {"class_type": "EditAgentsSavePhoto", "inputs": {"images": ["ours", 0], "filename_prefix": "via_ours",
                                                              "format": "png", "bits": "16", "quality": 95,
                                                              "profile": "sRGB"}}})
    means = {k: decoded((comfy_server.dirs()["output"] / i["subfolder"] / i["filename"]).read_bytes()).mean() / 65535
             for k in ("a", "b") for i in both.outputs[k]["images"]}
    expected = float(cat[..., :1].mean() * 0.5)
    assert abs(means["b"] - expected) < 1e-3  # Load Photo: right on every ComfyUI
    # ComfyUI's Load Image: near white up to 0.3.x (what the issue saw), read right (to 8 bits) since
    assert means["a"] > 0.9 or abs(means["a"] - expected) < 0.01, means
    (comfy_server.dirs()["input"] / "fake.png").write_bytes(b"not a photo")
    with pytest.raises(ExecutionFailed, match="Load Photo: fake.png: not an image file"):
        comfy.call("run", photo_graph("fake.png"))


def test_the_cli_decides_alike_on_16_and_8_bits_and_writes_the_inputs_depth(comfy_server, photos, tmp_path):
    """`edit-agents run` on the main workflow: a 16-bit photo gets the edits its 8-bit copy gets, and comes back
    at 16 bits unless --bits says otherwise."""
    from cli_runs import OFFLINE, cli

    dim = (photos["rocket"][::2, ::2, :3] * 0.45).astype(np.float32)
    (tmp_path / "dim16.png").write_bytes(png16(dim))
    (tmp_path / "dim8.png").write_bytes(png8(dim))
    runs = {}
    for name, extra in (("dim16", ()), ("dim8", ()), ("dim16", ("--bits", "8"))):
        out = tmp_path / f"out_{name}_{len(extra)}"
        r = cli("run", OFFLINE, "--image", str(tmp_path / f"{name}.png"), "--out", str(out), "--server",
                comfy_server.url, "--set", "MCTS Planner (PhotoAgent).max_steps=2", *extra)
        assert r.returncode == 0, r.stderr
        image = next(out.glob(f"{name}_*.png"))
        runs[(name, bool(extra))] = (json.loads((out / "trace.json").read_text())["summary"],
                                     decoded(image.read_bytes()).dtype)
    (s16, d16), (s8, d8), (_, forced) = runs[("dim16", False)], runs[("dim8", False)], runs[("dim16", True)]
    assert [a["tool"] for a in s16["actions"]] == [a["tool"] for a in s8["actions"]] and s16["actions"]
    assert abs(s16["score_after"] - s8["score_after"]) < 0.01
    assert (d16, d8, forced) == (np.uint16, np.uint8, np.uint8)
