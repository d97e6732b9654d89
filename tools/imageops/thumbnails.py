"""Thumbnails as ``data:`` URLs for the trace and the search's tree in the browser."""
from __future__ import annotations

import numpy as np

from .arrays import as_image, to_rgb, to_uint8
from .resample import resize_longest

THUMB_SAMPLES = 4  # a thumbnail averages at least this many sampled pixels per pixel along each side


def thumbnail_data_url(img: np.ndarray, side: int = 96, quality: int = 80) -> str:
    """A small JPEG as a ``data:`` URL, for trace steps and tree nodes the browser shows
    (a few kB: small enough to stream over the websocket and keep in /history)."""
    import base64
    import io

    from PIL import Image

    arr = np.asarray(img)
    # shrink first: a thumbnail of a 12 MP state (the search's tree shows one per node) need not convert it all
    if arr.dtype in (np.uint8, np.uint16, np.float32, np.float64) and arr.ndim in (2, 3) and min(arr.shape[:2]) > 0:
        # ... nor average every pixel: every step-th pixel of each row and column still leaves at least
        # THUMB_SAMPLES times the thumbnail's side to average (an area resize of 2048 px cost 12 ms a tree node)
        step = max(arr.shape[:2]) // (side * THUMB_SAMPLES)
        arr = resize_longest(arr[::step, ::step] if step > 1 else arr, side)
    small = to_rgb(as_image(arr))
    buf = io.BytesIO()
    Image.fromarray(to_uint8(small)).save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
