"""Localisation: text -> boxes with GroundingDINO (transformers), boxes -> masks with segment-anything.

When nothing is found the detection threshold is lowered in bounded steps (IMAGAgent's
idea); if still nothing, the tool returns an empty mask and says so — never a crash.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .backends import require
from .imageops import to_rgb, to_uint8
from .masks import MASK_IO
from .spec import Param, ToolOutput, ToolSpec

THRESHOLD_STEPS = 3  # at most this many lower thresholds are tried after the first
THRESHOLD_FACTOR = 0.7


def load_grounding_dino(path: Path) -> tuple[Any, Any]:
    transformers = require("transformers")
    processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
    model = transformers.GroundingDinoForObjectDetection.from_pretrained(path, local_files_only=True).eval()
    return processor, model


def detect(runtime, img: np.ndarray, text: str, box_threshold: float, text_threshold: float,
           min_threshold: float) -> dict[str, Any]:
    """Boxes (pixels, x0 y0 x1 y1) and scores for ``text``, lowering the threshold in bounded steps."""
    import torch
    from PIL import Image

    processor, model = runtime.load("grounding-dino", load_grounding_dino)
    device = runtime.manager.place(model)
    h, w = img.shape[:2]
    prompt = text.strip().lower()
    prompt = prompt if prompt.endswith(".") else prompt + "."  # GroundingDINO separates phrases with dots
    inputs = processor(images=Image.fromarray(to_uint8(to_rgb(img))), text=prompt, return_tensors="pt").to(device)
    with torch.no_grad():
        outputs = model(**inputs)
    post = processor.post_process_grounded_object_detection
    name = "threshold" if "threshold" in inspect.signature(post).parameters else "box_threshold"  # renamed in v4.51
    tried, threshold = [], box_threshold
    for _ in range(THRESHOLD_STEPS + 1):
        res = post(outputs, inputs["input_ids"], **{name: threshold}, text_threshold=min(text_threshold, threshold),
                   target_sizes=[(h, w)])[0]
        tried.append(round(threshold, 4))
        if len(res["scores"]):
            return {"boxes": res["boxes"].cpu().numpy(), "scores": res["scores"].cpu().numpy(), "threshold": threshold,
                    "tried": tried, "found": True}
        nxt = threshold * THRESHOLD_FACTOR
        if nxt < min_threshold:
            break
        threshold = nxt
    return {"boxes": np.zeros((0, 4), np.float32), "scores": np.zeros(0, np.float32), "threshold": threshold,
            "tried": tried, "found": False}


# -- segment-anything ------------------------------------------------------------------------

def read_weights(path: Path) -> dict:
    """A checkpoint's tensors, never unpickling code: .safetensors files through safetensors, others with
    ``torch.load(weights_only=True)`` (what ComfyUI's ``comfy.utils.load_torch_file`` does for both)."""
    import torch

    if Path(path).suffix.lower() == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    return torch.load(path, map_location="cpu", weights_only=True)


def load_sam(path: Path, read: Callable[[Path], dict] = read_weights) -> Any:
    """Any segment-anything checkpoint (ViT-B/L/H or smaller; .pth or .safetensors), its architecture read from
    the weights. ``read`` is ComfyUI's own file reader inside ComfyUI."""
    import torch

    require("segment_anything")
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    state = read(path)
    if not isinstance(state, dict) or "image_encoder.pos_embed" not in state:
        raise ValueError(f"{path} is not a segment-anything checkpoint (no image_encoder.pos_embed)")
    embed = state["image_encoder.patch_embed.proj.weight"].shape[0]
    grid = state["image_encoder.pos_embed"].shape[1]
    depth = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("image_encoder.blocks."))
    head_dim = state["image_encoder.blocks.0.attn.rel_pos_h"].shape[1]
    window = 14 if grid >= 28 else max(2, grid // 4)
    window_rel = 2 * window - 1
    global_idx = tuple(i for i in range(depth) if state[f"image_encoder.blocks.{i}.attn.rel_pos_h"].shape[0] != window_rel)
    prompt_dim = state["prompt_encoder.pe_layer.positional_encoding_gaussian_matrix"].shape[1] * 2
    img_size = grid * 16
    out_chans = state["image_encoder.neck.0.weight"].shape[0]
    mlp = state["image_encoder.blocks.0.mlp.lin1.weight"].shape[0] // embed
    dec_mlp = state["mask_decoder.transformer.layers.0.mlp.lin1.weight"].shape[0]
    dec_depth = 1 + max(int(k.split(".")[3]) for k in state if k.startswith("mask_decoder.transformer.layers."))
    sam = Sam(
        image_encoder=ImageEncoderViT(depth=depth, embed_dim=embed, img_size=img_size, mlp_ratio=mlp,
                                      norm_layer=lambda d: torch.nn.LayerNorm(d, eps=1e-6), num_heads=embed // head_dim,
                                      patch_size=16, qkv_bias=True, use_rel_pos=True, global_attn_indexes=global_idx,
                                      window_size=window, out_chans=out_chans),
        prompt_encoder=PromptEncoder(embed_dim=prompt_dim, image_embedding_size=(grid, grid),
                                     input_image_size=(img_size, img_size), mask_in_chans=16),
        mask_decoder=MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(
            depth=dec_depth, embedding_dim=prompt_dim, mlp_dim=dec_mlp, num_heads=8), transformer_dim=prompt_dim,
            iou_head_depth=3, iou_head_hidden_dim=256),
    )
    sam.load_state_dict(state, strict=True)
    return sam.eval()


def segment_boxes(runtime, img: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """One H x W mask: the union of SAM's best mask for each box (pixels)."""
    require("segment_anything")
    from segment_anything import SamPredictor

    sam = runtime.load("sams", lambda path: load_sam(path, getattr(runtime.manager, "read_weights", read_weights)))
    runtime.manager.place(sam)
    predictor = SamPredictor(sam)
    predictor.set_image(to_uint8(to_rgb(img)))
    out = np.zeros(img.shape[:2], np.float32)
    for box in boxes:
        masks, scores, _ = predictor.predict(box=np.asarray(box, np.float32), multimask_output=True)
        out = np.maximum(out, masks[int(np.argmax(scores))].astype(np.float32))
    return out


def _boxes_mask(shape, boxes) -> np.ndarray:
    m = np.zeros(shape[:2], np.float32)
    for x0, y0, x1, y1 in np.asarray(boxes).round().astype(int):
        m[max(0, y0):max(y0 + 1, y1), max(0, x0):max(x0 + 1, x1)] = 1.0
    return m


# -- the tools ---------------------------------------------------------------------------------

def ground(img, text="", box_threshold=0.35, text_threshold=0.25, min_threshold=0.1, use_sam=True, runtime=None):
    found = detect(runtime, img, text, box_threshold, text_threshold, min_threshold)
    boxes, scores = found["boxes"], found["scores"]
    notes = []
    if not found["found"]:
        notes.append(f"nothing found for '{text}' at thresholds {found['tried']}; the mask is empty")
        return ToolOutput(np.zeros(img.shape[:2] + (1,), np.float32), notes, {**found, "boxes": [], "scores": []})
    if len(found["tried"]) > 1:
        notes.append(f"found '{text}' only after lowering the threshold to {found['threshold']:.3g}")
    mask = segment_boxes(runtime, img, boxes) if use_sam else _boxes_mask(img.shape, boxes)
    h, w = img.shape[:2]
    data = {**found, "boxes": [[float(b[0]) / w, float(b[1]) / h, float(b[2]) / w, float(b[3]) / h] for b in boxes],
            "scores": [float(s) for s in scores]}
    notes.append(f"found {len(boxes)} region(s) for '{text}' (best score {float(scores.max()):.2f})")
    return ToolOutput(mask[:, :, None], notes, data)


def segment_box(img, box=(0.25, 0.25, 0.75, 0.75), runtime=None):
    h, w = img.shape[:2]
    x0, y0, x1, y1 = box
    return segment_boxes(runtime, img, np.array([[x0 * w, y0 * h, x1 * w, y1 * h]], np.float32))[:, :, None]


LOCALISE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("ground", "Find things named in text (e.g. 'the dog') and return their mask.",
             "Text-grounded localisation: GroundingDINO finds boxes for the phrase, segment-anything turns them into "
             "a precise mask (or the boxes themselves when use_sam is false). When nothing is found the threshold is "
             "lowered step by step; if still nothing, the mask is empty and the trace says so.",
             (Param("text", "string", "what to find, e.g. 'the dog' or 'sky'", required=True),
              Param("box_threshold", "float", "minimum box confidence to start with", default=0.35, minimum=0.01, maximum=0.99),
              Param("text_threshold", "float", "minimum phrase confidence", default=0.25, minimum=0.01, maximum=0.99),
              Param("min_threshold", "float", "never lower the box threshold below this", default=0.1, minimum=0.0, maximum=0.99),
              Param("use_sam", "bool", "refine boxes into object masks with segment-anything", default=True)),
             ground, keywords=("find", "select", "locate", "mask of"), speed="slow", needs_model=True,
             needs_runtime=True, **{**MASK_IO, "input": "the image to search", "category": "localise"}),
    ToolSpec("segment_box", "Cut out the object inside a box as a mask (segment-anything).",
             "Segment-anything's best mask for a box prompt.",
             (Param("box", "box", "region as [x0, y0, x1, y1], fractions of width and height", default=[0.25, 0.25, 0.75, 0.75]),),
             segment_box, speed="slow", needs_model=True, needs_runtime=True,
             **{**MASK_IO, "input": "the image", "category": "localise"}),
)
