"""What of an image the improve loops judge: the photo inside a frame of one flat colour, and whether it can be judged.

A frame (a border, letterbox bars, a white background: imageops.uniform_frame) is no part of the photo: read as one,
a white mount is blown highlights to darken and black bars crushed shadows. The loops read and edit the photo inside
it and put the frame back as it came.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...tools.imageops import FLAT_TOLERANCE, as_image, uniform_frame
from ..quality.perception import RulePerceiver
from ..trace import Trace

# the shortest side a photo can be judged on: its noise, sharpness, JPEG grid and BRISQUE are read on squares of at
# least 16 px (metrics.texture_boxes), and a thumbnail's few pixels would steer the tone and colour statistics alone
MIN_JUDGED_SIDE = 16

Frame = tuple[int, int, int, int]  # top, bottom, left, right, in px


def photo_in_frame(image) -> tuple[np.ndarray, np.ndarray, Frame | None]:
    """(the image as the statistics read it, the photo inside its frame, the frame or None). 8 or 16 bits are read as
    0..1; a float photo as it comes, in single precision. A frame of one flat colour (a border, letterbox bars, a white
    background: imageops.uniform_frame) is no part of the photo: read as one, a white mount is blown highlights to
    darken and black bars crushed shadows."""
    image = np.asarray(image)
    image = as_image(image) if image.dtype.kind in "ui" or image.ndim == 2 else image.astype(np.float32, copy=False)
    frame = uniform_frame(image, inside=MIN_JUDGED_SIDE)
    if frame is None:
        return image, image, None
    top, bottom, left, right = frame
    return image, np.ascontiguousarray(image[top:image.shape[0] - bottom, left:image.shape[1] - right]), frame


def put_back(result, image: np.ndarray, frame: Frame | None):
    """A loop's ``result`` (its ``image`` and ``steps``) of the photo inside ``frame``, as the whole ``image``: each image
    put back in the frame as it came."""
    if frame is None:
        return result
    top, bottom, left, right = frame
    h, w = image.shape[:2]

    def whole(inside: np.ndarray) -> np.ndarray:
        out = image.copy()
        out[top:h - bottom, left:w - right] = inside
        return out
    return replace(result, image=whole(result.image), steps=[image] + [whole(x) for x in result.steps[1:]])


def note_frame(trace: Trace, agent: str, frame: Frame | None, inside: np.ndarray) -> None:
    """Says in the trace that a frame (if any) is left as it is and the photo inside it is what is judged."""
    if frame is not None:
        top, bottom, left, right = frame
        trace.add("perceiver", agent, f"a frame of one flat colour around the photo ({top}, {bottom}, {left} and "
                                      f"{right} px: top, bottom, left, right) is left as it is; the photo inside it, "
                                      f"{inside.shape[1]}x{inside.shape[0]} px, is what is read and edited",
                  round=0, outputs={"frame": {"top": top, "bottom": bottom, "left": left, "right": right}})


def not_judged(image: np.ndarray, perceiver, scorer) -> str | None:
    """Why the rule perceiver and the classic reward cannot judge ``image`` (too small, or one flat colour), or None. A
    brain judging a thumbnail with a reward of its own may."""
    if not (isinstance(perceiver, RulePerceiver) or scorer.classic):
        return None
    if min(image.shape[:2]) < MIN_JUDGED_SIDE:
        return (f"the photo is {image.shape[1]}x{image.shape[0]} px, too small to judge (noise, blur and the quality "
                f"scores need at least {MIN_JUDGED_SIDE} px a side)")
    if float(np.ptp(image[..., :3])) <= FLAT_TOLERANCE:  # a blank canvas: its white read as blown highlights
        return "the image is one flat colour, nothing in it to enhance"
    return None
