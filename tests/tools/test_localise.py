"""GroundingDINO and segment-anything tools with tiny random-weight models, loaded by the product's code."""
from __future__ import annotations

import numpy as np
import torch
import pytest

from edit_agents.agents.records import ToolCall
from edit_agents.agents.roles import run_chain
from edit_agents.tools import ToolCallError, default_registry
from edit_agents.tools.localise import load_sam
from edit_agents.tools.models import MissingModelError, ToolRuntime


def test_ground_finds_boxes_and_sam_masks_them(runtime, photos):
    tools = default_registry(runtime)
    img = photos["chelsea"]
    mask, params, notes = tools.call("ground", img, {"text": "the cat", "box_threshold": 0.35})
    assert mask.shape == img.shape[:2] + (1,) and mask.dtype == np.float32
    assert set(np.unique(mask)) <= {0.0, 1.0}
    assert any("found 10 region(s) for 'the cat'" in n for n in notes)
    boxes, _, _ = tools.call("ground", img, {"text": "the cat", "use_sam": False})
    assert boxes.sum() > 0  # plain boxes when SAM is off
    # loaded once, reused across calls
    assert sorted(runtime.loads.values()) == [1, 1]


def test_threshold_is_lowered_in_bounded_steps_then_empty(runtime, photos):
    tools = default_registry(runtime)
    img = photos["coffee"]
    _, _, notes = tools.call("ground", img, {"text": "a dog", "box_threshold": 0.6, "min_threshold": 0.3, "use_sam": False})
    assert any("only after lowering the threshold to 0.42" in n for n in notes)  # 0.6 -> 0.42 (all scores are 0.5)
    mask, _, notes = tools.call("ground", img, {"text": "a dog", "box_threshold": 0.9, "min_threshold": 0.55})
    assert mask.sum() == 0 and mask.shape == img.shape[:2] + (1,)
    assert any("nothing found for 'a dog' at thresholds [0.9, 0.63]" in n for n in notes)


def test_grounded_chain_blurs_the_background(runtime, photos):
    tools = default_registry(runtime)
    img = photos["astronaut"]
    chain = [ToolCall("ground", {"text": "person", "use_sam": False}),
             ToolCall("mask_grow", {"pixels": 4}, source="step:0"),
             ToolCall("edit_region", {"mask": "step:1", "effect": "desaturate", "amount": 1.0}, source="input")]
    out = run_chain(tools, chain, img)
    assert out.shape == img.shape and not np.array_equal(out, img)


def test_segment_box_and_sam_architecture_from_weights(runtime, model_root, photos):
    sam = load_sam(model_root / "sams" / "tiny_sam.pth")
    assert sam.image_encoder.img_size == 256 and len(sam.image_encoder.blocks) == 2
    same = load_sam(model_root / "sams" / "tiny_sam.safetensors")  # the format model sites now offer
    assert all(torch.equal(a, b) for a, b in zip(sam.state_dict().values(), same.state_dict().values()))
    tools = default_registry(runtime)
    mask, _, _ = tools.call("segment_box", photos["coffee"], {"box": [0.2, 0.2, 0.8, 0.8]})
    assert mask.shape == photos["coffee"].shape[:2] + (1,)


def test_missing_model_names_the_folder_and_the_download(tmp_path, photos):
    tools = default_registry(ToolRuntime({"grounding-dino": [tmp_path / "grounding-dino"]}))
    with pytest.raises(MissingModelError) as err:
        tools.call("ground", photos["coffee"], {"text": "dog"})
    msg = str(err.value)
    assert str(tmp_path / "grounding-dino") in msg and "IDEA-Research/grounding-dino-tiny" in msg


def test_grounding_dino_files_of_another_pack_are_named_not_ignored(tmp_path, photos):
    folder = tmp_path / "grounding-dino"
    folder.mkdir()
    for name in ("groundingdino_swint_ogc.pth", "GroundingDINO_SwinT_OGC.cfg.py", "put_grounding_dino_here"):
        (folder / name).write_bytes(b"")
    tools = default_registry(ToolRuntime({"grounding-dino": [folder]}))
    with pytest.raises(MissingModelError) as err:
        tools.call("ground", photos["coffee"], {"text": "dog"})
    msg = str(err.value)
    assert "GroundingDINO_SwinT_OGC.cfg.py, groundingdino_swint_ogc.pth" in msg and "put_" not in msg
    assert "transformers layout" in msg and "comfyui_segment_anything" in msg
    chosen = ToolRuntime({"sams": [tmp_path]}, choices={"sams": "sam_vit_h.pth"})
    with pytest.raises(MissingModelError, match="'sam_vit_h.pth' for sams was not found"):
        default_registry(chosen).call("segment_box", photos["coffee"], {})


def test_placeholders_and_stray_files_are_never_offered_as_models(tmp_path, photos):
    diffusers, sams = tmp_path / "diffusers", tmp_path / "sams"
    (diffusers / "my-pix2pix").mkdir(parents=True)
    sams.mkdir()
    for path in (diffusers / "put_diffusers_models_here", sams / "put_sams_here", sams / "notes.txt", sams / ".hidden.pth"):
        path.write_text("")
    (sams / "sam_vit_b.pth").write_bytes(b"")
    runtime = ToolRuntime({"diffusers": [diffusers], "sams": [sams]})
    assert runtime.available("instruct-pix2pix") == ["my-pix2pix"]
    assert runtime.available("sams") == ["sam_vit_b.pth"]
    empty = ToolRuntime({"diffusers": [tmp_path / "only-placeholder"]})
    (tmp_path / "only-placeholder").mkdir()
    (tmp_path / "only-placeholder" / "put_diffusers_models_here").write_text("")
    with pytest.raises(MissingModelError, match="InstructPix2Pix pipeline folder"):  # not "cannot load a placeholder"
        default_registry(empty).call("instruct_pix2pix", photos["coffee"], {"prompt": "make it winter"})


def test_corrupt_sam_file_is_reported(tmp_path, photos):
    (tmp_path / "sams").mkdir()
    import torch
    torch.save({"not": torch.zeros(1)}, tmp_path / "sams" / "bad.pth")
    with pytest.raises(ValueError, match="not a segment-anything checkpoint"):
        default_registry(ToolRuntime({"sams": [tmp_path / "sams"]})).call("segment_box", photos["coffee"], {})


def test_model_tools_need_a_runtime(photos):
    with pytest.raises(ToolCallError, match="needs models, but this toolbox has no model runtime"):
        default_registry().call("ground", photos["coffee"], {"text": "dog"})


def test_a_background_edit_around_nothing_found_leaves_the_photo_alone(runtime, photos):
    """ground found nothing: blurring 'everything but the subject' would blur the whole photo; it is left alone."""
    tools = default_registry(runtime)
    img = photos["coffee"]
    empty, _, _ = tools.call("ground", img, {"text": "a dog", "box_threshold": 0.9, "min_threshold": 0.55})
    out, _, notes = tools.call("edit_region", img, {"mask": "step:0", "inside": False}, refs=[empty])
    assert np.array_equal(out, img) and "mask is empty" in notes[0]
    box, _, _ = tools.call("edit_region", img, {"inside": False})  # no mask: the box, as before
    assert not np.array_equal(box, img)
