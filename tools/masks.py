"""Mask tools: make a mask from a box, and grow, feather, invert, union and intersect masks.

Masks are H x W x 1 float arrays in [0, 1]. A chain passes them on by reference:
ground "the dog" -> mask_grow(source="step:0") -> edit_region(mask="step:1").
"""
from __future__ import annotations

import numpy as np

from .imageops import morphology, sampled_gaussian
from .spec import Param, ToolSpec, as_mask


def _m(img: np.ndarray) -> np.ndarray:
    return as_mask(img, img.shape[:2])


def _out(m: np.ndarray) -> np.ndarray:
    return np.clip(m, 0.0, 1.0).astype(np.float32)[:, :, None]


def box_mask(img, box=(0.25, 0.25, 0.75, 0.75)):
    h, w = img.shape[:2]
    m = np.zeros((h, w), np.float32)
    x0, y0, x1, y1 = box
    m[int(round(y0 * h)):max(int(round(y0 * h)) + 1, int(round(y1 * h))),
      int(round(x0 * w)):max(int(round(x0 * w)) + 1, int(round(x1 * w)))] = 1.0
    return _out(m)


def mask_grow(img, pixels=8):
    return _out(morphology(_m(img), int(pixels)))


def mask_feather(img, radius=6.0):
    return _out(sampled_gaussian(_m(img), max(0.1, radius)))


def mask_invert(img):
    return _out(1.0 - _m(img))


def mask_union(img, other=None):
    return _out(np.maximum(_m(img), other))


def mask_intersect(img, other=None):
    return _out(np.minimum(_m(img), other))


OTHER = Param("other", "mask", "the second mask, from an earlier step ('step:N')", required=True)
MASK_IO = dict(category="localise", returns="mask", input="a mask (or an image, read as its gray level)",
               output="a mask (H x W x 1, 0..1)")

MASK_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("box_mask", "Make a mask from a box.", "A rectangular mask, e.g. for a region the planner located.",
             (Param("box", "box", "region as [x0, y0, x1, y1], fractions of width and height", default=[0.25, 0.25, 0.75, 0.75]),),
             box_mask, keywords=("mask the box",), **{**MASK_IO, "input": "the image (only its size is used)"}),
    ToolSpec("mask_grow", "Grow (or shrink, with negative pixels) a mask.", "Dilates a mask so an edit covers the object's edges.",
             (Param("pixels", "int", "pixels to grow by (negative shrinks)", default=8, minimum=-256, maximum=256),),
             mask_grow, keywords=("grow the mask", "dilate"), **MASK_IO),
    ToolSpec("mask_feather", "Soften a mask's edges.", "Blurs the mask so edits blend in.",
             (Param("radius", "float", "blur radius in pixels", default=6.0, minimum=0.1, maximum=200.0),),
             mask_feather, keywords=("feather",), **MASK_IO),
    ToolSpec("mask_invert", "Invert a mask (the background instead of the object).", "Swaps inside and outside.",
             (), mask_invert, keywords=("invert the mask",), **MASK_IO),
    ToolSpec("mask_union", "Combine two masks (either one).", "The union of this mask and another step's mask.",
             (OTHER,), mask_union, **MASK_IO),
    ToolSpec("mask_intersect", "Keep where two masks overlap.", "The intersection of this mask and another step's mask.",
             (OTHER,), mask_intersect, **MASK_IO),
)
