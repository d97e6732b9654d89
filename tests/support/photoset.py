"""The photos and degradations that calibrate the offline reward and benchmark PhotoAgent.

Real photos that ship with what `make setup` installs (scikit-image's data, the IQA calibration
images in tests/data/iqa), split once: the reward is fitted on CALIBRATION only; the benchmark and
the held-out ranking accuracy use EVALUATION only. Each degradation is a known defect with a
strength; calibration uses three strengths per kind, the benchmark one strength of its own.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from edit_agents.tools import default_registry
from edit_agents.tools.imageops import as_image, resize_longest

IQA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "iqa"
MAX_SIDE = 512  # photos are used at this size: it is their "native" resolution for the search and the metrics

# Evaluation photos: a portrait, two black-and-white photos, a dusk scene, a night sky, a low-key still life,
# an animal, a seascape.
EVALUATION = ("astronaut", "camera", "rocket", "hubble_deep_field", "coffee", "chelsea", "I06", "moon")
# Calibration photos: an indoor scene in warm light, a desaturated portrait, a street, a micrograph,
# black-and-white objects, textures and a page of text.
CALIBRATION = ("stereo_motorcycle", "I04", "I08", "immunohistochemistry", "coins", "clock", "brick",
               "gravel", "page")


# Pictures no project file was tuned on: the ones ComfyUI's workflow templates show (its template packages, which
# ComfyUI's requirements install), mostly generated: portraits, products, interiors, landscapes, illustrations. A
# still, or an animation's first frame; at least MIN_PICTURE px a side; each picture once. Named "comfy:<file>".
COMFY_PREFIX = "comfy:"
MIN_PICTURE = 256


@lru_cache(maxsize=1)
def comfy_pictures() -> dict[str, Path]:
    """ComfyUI's template pictures by name ("comfy:<package>/<file>"), in name order; empty where none is installed."""
    import hashlib
    import importlib.util

    from PIL import Image

    out, seen = {}, set()
    for kind in ("image", "other", "video", "api"):
        spec = importlib.util.find_spec(f"comfyui_workflow_templates_media_{kind}")
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations))) / "templates"
        for path in sorted(folder.glob("*.webp")):
            with Image.open(path) as im:
                if min(im.size) < MIN_PICTURE:
                    continue
                im.seek(0)
                first = np.asarray(im.convert("RGB"))
            digest = hashlib.sha1(first[::8, ::8].tobytes()).hexdigest()  # one template's picture shown by two
            if digest not in seen:
                seen.add(digest)
                out[f"{COMFY_PREFIX}{kind}/{path.name}"] = path
    return out


def load(name: str, max_side: int = MAX_SIDE) -> np.ndarray:
    if name.startswith(COMFY_PREFIX):
        from PIL import Image

        pictures = comfy_pictures()
        if name not in pictures:
            raise ValueError(f"{name}: no such picture among ComfyUI's templates (installed: {len(pictures)})")
        with Image.open(pictures[name]) as im:
            im.seek(0)  # an animation's first frame
            return resize_longest(as_image(np.asarray(im.convert("RGB"))), max_side)
    if name.startswith("I") and (IQA_DIR / f"{name}.png").exists():
        from PIL import Image

        arr = np.asarray(Image.open(IQA_DIR / f"{name}.png").convert("RGB"))
    else:
        from skimage import data

        arr = getattr(data, name)()
        arr = arr[0] if isinstance(arr, tuple) else arr  # stereo pairs: the left view
    img = as_image(arr)
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)  # black-and-white photos as RGB, as a user's file would be
    return resize_longest(img, max_side)


_TOOLS = default_registry()


def _noise(img: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return img + rng.normal(0.0, sigma, img.shape[:2] + (1,)).astype(np.float32) * 0.6 \
        + rng.normal(0.0, sigma, img.shape).astype(np.float32) * 0.8  # luma plus chroma noise, as sensors make


def _tool(name: str, **params) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: _TOOLS.call(name, x, params)[0]


Degrade = Callable[[np.ndarray, float], np.ndarray]
# kind -> (function of (image, strength), calibration strengths mildest first, benchmark strength)
DEFECTS: dict[str, tuple[Degrade, tuple[float, ...], float]] = {
    "under-exposed": (lambda x, s: x * (1 - s), (0.3, 0.5, 0.65), 0.55),
    "over-exposed": (lambda x, s: x * (1 + s) + 0.15 * s, (0.25, 0.5, 0.8), 0.6),
    "low contrast": (lambda x, s: x * (1 - s) + 0.5 * s, (0.25, 0.45, 0.6), 0.5),
    "warm cast": (lambda x, s: x * np.array([1.0, 1 - 0.35 * s, 1 - s], np.float32), (0.15, 0.28, 0.42), 0.36),
    "cool cast": (lambda x, s: x * np.array([1 - s, 1 - 0.3 * s, 1.0], np.float32), (0.15, 0.28, 0.42), 0.3),
    "noise": (lambda x, s: _noise(x, s), (0.02, 0.04, 0.07), 0.05),
    "blur": (lambda x, s: _tool("gaussian_blur", sigma=s)(x), (0.8, 1.4, 2.2), 1.5),
    "dark and noisy": (lambda x, s: _noise(x * (1 - s), 0.06 * s), (0.3, 0.5, 0.65), 0.5),
}
# Over-processing: what an eager auto-enhance does to a good photo. The reward must rank these below the clean photo.
OVERDONE: dict[str, tuple[Degrade, tuple[float, ...]]] = {
    "brightened": (lambda x, s: _tool("gamma", gamma=s)(x), (1.25, 1.5, 1.8)),
    "darkened": (lambda x, s: _tool("gamma", gamma=s)(x), (0.8, 0.65, 0.5)),
    "over-contrast": (lambda x, s: _tool("contrast", amount=s)(x), (0.2, 0.4, 0.7)),
    "over-saturated": (lambda x, s: _tool("saturation", amount=s)(x), (0.3, 0.6, 1.0)),
    "over-sharpened": (lambda x, s: _tool("sharpen", amount=s, radius=1.5)(x), (0.8, 1.6, 3.0)),
    "warmed": (lambda x, s: _tool("temperature_tint", temperature=s)(x), (0.2, 0.4, 0.7)),
    "local contrast": (lambda x, s: _tool("clahe", clip_limit=s, tile=8)(x), (1.8, 3.0, 5.0)),
}


def degrade(img: np.ndarray, kind: str, strength: float) -> np.ndarray:
    fn = DEFECTS[kind][0] if kind in DEFECTS else OVERDONE[kind][0]
    return np.clip(fn(img, strength), 0.0, 1.0).astype(np.float32)


def ladders(kinds: dict) -> list[tuple[str, tuple[float, ...]]]:
    return [(kind, spec[1]) for kind, spec in kinds.items()]
