"""IMAGE tensor <-> float numpy conversion (ComfyUI IMAGE is B x H x W x C, float in [0, 1])."""
from __future__ import annotations

import numpy as np
import torch

from ..tools.classic import max_megapixels
from ..tools.imageops import as_image, resize


def image_batch_to_arrays(images: torch.Tensor) -> list[np.ndarray]:
    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        shape = tuple(images.shape) if hasattr(images, "shape") else type(images).__name__
        raise ValueError(f"expected an IMAGE batch (B x H x W x C), got {shape}; connect an IMAGE output (e.g. Load Image)")
    _, h, w, _ = images.shape
    limit = max_megapixels()
    if h * w > limit * 1e6:
        raise ValueError(f"the image is {h * w / 1e6:.0f} MP ({w} x {h}); the agent nodes take at most {limit:g} MP. "
                         "Downscale it first (e.g. with an Upscale Image By node at 0.5), or raise the limit with the "
                         "environment variable EDIT_AGENTS_MAX_MEGAPIXELS")
    return [as_image(img.detach().cpu().float().numpy()) for img in images]


def arrays_to_image_batch(arrays: list[np.ndarray]) -> torch.Tensor:
    """Stack images into one batch; images of other sizes are resized to the first's size."""
    h, w = arrays[0].shape[:2]
    channels = max(a.shape[2] for a in arrays)
    out = []
    for a in arrays:
        if a.shape[:2] != (h, w):
            a = resize(a, (w, h), "area")
        if a.shape[2] != channels:
            a = np.repeat(a, 3, axis=2) if a.shape[2] == 1 else a[:, :, :3]
            if channels == 4:
                a = np.concatenate([a, np.ones_like(a[:, :, :1])], axis=2)
        out.append(torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)))
    return torch.stack(out)
