"""A search state: the reduced copy of a photo plus its native-resolution texture crops, and how an edit is made to it.

Tone and colour are judged on the copy, noise and sharpness on the crops, where they are still visible. An edit is
made to the copy with pixel lengths scaled to it, and to the crops as parts of the whole photo.
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np

from ...tools.imageops import STATISTICS_SIDE, resize, resize_longest
from ...tools.spec import ToolRegistry
from ..records import ToolCall
from ..quality.metrics import quality_readings, texture_boxes, texture_crops


@dataclass
class State:
    """What the search edits: the reduced copy and the native-resolution texture crops."""

    preview: np.ndarray = field(repr=False)
    crops: list[np.ndarray] = field(repr=False)
    scale: float = 1.0  # the preview's size relative to the photo: lengths in pixels are scaled by it
    size: tuple[int, int] = (0, 0)  # the photo's height and width, where the crops were cut



def readings_after(tools: ToolRegistry, image: np.ndarray, calls: list[ToolCall]) -> dict[str, float]:
    """BRISQUE and NIQE of ``image`` after ``calls``, read as the search reads a state's: on the texture crops, edited
    as parts of the photo (what a sequence with tone and colour curves among its edits is held to)."""
    state = root_state(image, STATISTICS_SIDE)
    for call in calls:
        state = apply_call(tools, state, call)
    return quality_readings(state.preview, state.crops)


def root_state(image: np.ndarray, side: int) -> State:
    """The search's view of a photo: a copy at most ``side`` long plus its native-resolution texture crops."""
    preview = resize_longest(image, side)
    return State(preview, texture_crops(image), max(preview.shape[:2]) / max(image.shape[:2]), image.shape[:2])


def crops_alone(tools: ToolRegistry, call: ToolCall) -> bool:
    """Whether ``apply_call`` edits a state's crops with ``call`` by themselves: a classic edit that keeps the
    geometry (a model's edit is made to the copy and followed by the crops; a crop or a rotation leaves them)."""
    spec = tools.get(call.tool)
    return not spec.needs_model and (spec.placed or not spec.moves_pixels)


def crops_edited(tools: ToolRegistry, state: State, call: ToolCall, native: dict | None = None) -> list[np.ndarray]:
    """A classic edit made to a search state's native-resolution crops as parts of the whole photo: with what the tool
    measures on the whole (``native``: its pins at the photo's scale; by default read on the state's copy)."""
    spec = tools.get(call.tool)
    if native is None:
        native = spec.pins_at_scale(spec.pinned(state.preview, spec.validate(call.params)[0]), 1.0 / state.scale)
    if spec.placed:  # a place in the photo (a lens's centre) is another place in each crop
        return [tools.call(call.tool, c, call.params, pins=spec.pins_in_crop(native, x0, y0))[0]
                for c, (x0, y0, _) in zip(state.crops, texture_boxes(*state.size))]
    return [tools.call(call.tool, c, call.params, pins=native)[0] for c in state.crops]


def apply_call(tools: ToolRegistry, state: State, call: ToolCall, pool: Executor | None = None) -> State:
    """One edit on a search state: the copy with pixel lengths scaled to it, and the native-resolution crops
    edited as parts of the whole photo (with what the tool measures on the whole, read from the copy).
    ``pool``: a spare thread that edits the crops while this one edits the copy (not for model tools).
    A model tool runs once, on the copy (PhotoAgent's search runs it on the reduced image): each crop takes the
    change it made to the crop's region of the copy (``crops_following``)."""
    spec = tools.get(call.tool)
    if spec.needs_model:
        preview = tools.call(call.tool, state.preview, call.params, scale=state.scale)[0]
        same = preview.shape[:2] == state.preview.shape[:2]
        return State(preview, crops_following(state, preview) if same else state.crops, state.scale, state.size)
    pins = spec.pinned(state.preview, spec.validate(call.params)[0])
    native = spec.pins_at_scale(pins, 1.0 / state.scale)

    def edit_crops() -> list[np.ndarray]:
        return crops_edited(tools, state, call, native)

    crops = pool.submit(edit_crops) if pool is not None and not spec.needs_runtime else None
    preview = tools.call(call.tool, state.preview, call.params, scale=state.scale, pins=pins)[0]
    # a tool that changes the geometry (crop, rotate, resize) leaves the texture crops as they were
    if preview.shape[:2] != state.preview.shape[:2]:
        if crops is not None:
            crops.exception()  # edited for nothing; waited for, so the thread is free again, and not raised
        return State(preview, state.crops, state.scale, state.size)
    return State(preview, crops.result() if crops is not None else edit_crops(), state.scale, state.size)


def crops_following(state: State, preview: np.ndarray) -> list[np.ndarray]:
    """The native-resolution crops of a state whose copy alone was edited: each crop plus the change the edit made
    to the crop's region of the copy, brought to the crop's size. The copy has no finer detail than that, so the
    crop keeps its own (a diffusion edit run on every crop would paint a new subject in each, at 5x the cost)."""
    h, w = state.size
    ph, pw = state.preview.shape[:2]
    change = preview.astype(np.float32) - state.preview.astype(np.float32)
    out = []
    for crop, (x0, y0, side) in zip(state.crops, texture_boxes(h, w)):
        top, left = min(ph - 1, int(y0 * ph / h)), min(pw - 1, int(x0 * pw / w))
        bottom = max(top + 1, min(ph, math.ceil((y0 + side) * ph / h)))
        right = max(left + 1, min(pw, math.ceil((x0 + side) * pw / w)))
        region = change[top:bottom, left:right]
        if region.shape[2] != crop.shape[2]:  # the tool changed the channels: the crop is cut from the copy instead
            out.append(np.clip(resize(preview[top:bottom, left:right], (crop.shape[1], crop.shape[0]), "cubic"), 0, 1)
                       .astype(np.float32))
            continue
        grown = resize(region, (crop.shape[1], crop.shape[0]), "cubic").reshape(crop.shape)
        out.append(np.clip(crop + grown, 0.0, 1.0).astype(np.float32))
    return out

