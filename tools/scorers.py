"""Learned reward components: aesthetic predictor, CLIP similarity, ImageReward, VLM score.

Each is a ``LearnedScorer`` (as agents/quality/reward.py reads them): ``unavailable()`` says why it cannot run here
(missing weights, package or brain) without loading anything, so the reward can skip it with a
note and renormalise the other weights; ``measure()`` loads the model once through the runtime
and rates an image. Model output is a number, never code.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .backends import MissingBackendError, require
from .models import MissingModelError, ToolRuntime
from .spec import Vision

GENERIC_PROMPT = "a beautiful, well-exposed, high quality photograph"


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def _pil(img: np.ndarray):
    from PIL import Image

    gray = img[..., 0] if img.ndim == 3 and img.shape[2] < 3 else img  # one channel (or gray + alpha)
    arr = np.clip(np.nan_to_num(img[..., :3] if gray.ndim == 3 else np.stack([gray] * 3, -1)), 0, 1)
    return Image.fromarray((arr * 255 + 0.5).astype(np.uint8))


def _missing(runtime: ToolRuntime | None, kind: str, packages: tuple[str, ...] = ()) -> str | None:
    if runtime is None:
        return "no model runtime"
    for module in packages:
        try:
            require(module)
        except MissingBackendError as err:
            return str(err)
    try:
        runtime.path(kind)
    except MissingModelError as err:
        return str(err)
    return None


class _Clip:
    """A CLIP model (transformers layout) with its processor, loaded once per runtime."""

    def __init__(self, folder: Path, runtime: ToolRuntime):
        transformers = require("transformers")
        self.model = transformers.CLIPModel.from_pretrained(folder).eval()
        self.processor = transformers.CLIPProcessor.from_pretrained(folder)
        self.device = runtime.manager.place(self.model)

    def image_embedding(self, img: np.ndarray):
        import torch

        pixels = self.processor(images=_pil(img), return_tensors="pt")["pixel_values"].to(self.device)
        with torch.inference_mode():
            pooled = self.model.vision_model(pixel_values=pixels.to(self.model.dtype)).pooler_output
            emb = self.model.visual_projection(pooled)
        return torch.nn.functional.normalize(emb.float(), dim=-1)

    def text_embedding(self, text: str):
        import torch

        tokens = self.processor(text=[text], return_tensors="pt", padding=True, truncation=True)
        with torch.inference_mode():
            pooled = self.model.text_model(input_ids=tokens["input_ids"].to(self.device),
                                           attention_mask=tokens["attention_mask"].to(self.device)).pooler_output
            emb = self.model.text_projection(pooled)
        return torch.nn.functional.normalize(emb.float(), dim=-1)


def _clip(runtime: ToolRuntime) -> _Clip:
    return runtime.load("clip", lambda folder: _Clip(folder, runtime))


def load_aesthetic_head(path: Path):
    """The LAION aesthetic predictor: an MLP on L2-normalised CLIP image embeddings (sizes read from the file)."""
    import torch

    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(str(path), map_location="cpu", weights_only=True)  # tensors only: no code runs
    state = {k.removeprefix("module."): v for k, v in state.items()}
    linear = sorted({int(k.split(".")[1]) for k in state if k.startswith("layers.") and k.endswith(".weight")})
    if not linear:
        raise ValueError(f"{path.name} is not a LAION aesthetic predictor: no 'layers.N.weight' tensors in it")
    modules: list[Any] = []
    for position, index in enumerate(linear):
        while len(modules) < index:
            modules.append(torch.nn.Dropout(0.0))  # the original's dropout slots keep the layer indices
        out_f, in_f = state[f"layers.{index}.weight"].shape
        modules.append(torch.nn.Linear(in_f, out_f))
    head = torch.nn.Module()
    head.layers = torch.nn.Sequential(*modules)
    head.load_state_dict(state)
    return head.eval()


class AestheticScorer:
    name = "aesthetic"

    def __init__(self, runtime: ToolRuntime | None):
        self.runtime = runtime

    def unavailable(self) -> str | None:
        return _missing(self.runtime, "clip", ("torch", "transformers")) or _missing(self.runtime, "aesthetic")

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        import torch

        clip = _clip(self.runtime)
        head = self.runtime.load("aesthetic", load_aesthetic_head)
        emb = clip.image_embedding(img)
        with torch.inference_mode():
            head.to(emb.device)
            if head.layers[0].in_features != emb.shape[-1]:
                raise ValueError(f"the aesthetic head expects {head.layers[0].in_features}-d CLIP features but the "
                                 f"CLIP model gives {emb.shape[-1]}-d: pair the head with its CLIP (ViT-L/14 for "
                                 "sac+logos+ava1-l14-linearMSE)")
            value = float(head.layers(emb)[0, 0])
        return value, _clip01((value - 1.0) / 9.0)  # the predictor rates on a 1..10 scale


class ClipSimilarityScorer:
    """Cosine similarity between the image and the target mood text (mood-guided mode)."""

    name = "clip"

    def __init__(self, runtime: ToolRuntime | None):
        self.runtime = runtime

    def unavailable(self) -> str | None:
        return _missing(self.runtime, "clip", ("torch", "transformers"))

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        clip = _clip(self.runtime)
        cos = float((clip.image_embedding(img) * clip.text_embedding(mood or GENERIC_PROMPT)).sum())
        return cos, _clip01((cos - 0.1) / 0.25)  # CLIP ViT cosine for a matching caption is about 0.25-0.35


class ImageRewardScorer:
    """THUDM's ImageReward through its own package (BLIP-based; ``pip install image-reward``)."""

    name = "image_reward"

    def __init__(self, runtime: ToolRuntime | None):
        self.runtime = runtime

    def unavailable(self) -> str | None:
        return _missing(self.runtime, "image-reward", ("ImageReward",))

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        def load(folder: Path):
            rm = require("ImageReward")
            ckpt = folder / "ImageReward.pt" if folder.is_dir() else folder
            config = ckpt.parent / "med_config.json"
            if not ckpt.exists() or not config.exists():
                raise MissingModelError(f"ImageReward needs ImageReward.pt and med_config.json in {ckpt.parent} "
                                        "(from huggingface.co/THUDM/ImageReward)")
            model = rm.load(str(ckpt), device="cpu", med_config=str(config))
            device = self.runtime.manager.place(model)
            model.device = device
            return model

        model = self.runtime.load("image-reward", load)
        value = float(model.score(mood or GENERIC_PROMPT, _pil(img)))
        return value, 1.0 / (1.0 + math.exp(-value))  # scores are standardised (mean 0, std 1 on its data)


VLM_SCORE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["score"],
                    "properties": {"score": {"type": "number", "minimum": 1, "maximum": 10},
                                   "reason": {"type": "string", "maxLength": 1000}}}


class VLMScorer:
    """A vision-language brain rates the photo 1..10 (a UGC-style quality score); one call per image."""

    name = "vlm"

    def __init__(self, vision: Vision | None):
        self.vision = vision
        self._cache: dict[str, tuple[float, float]] = {}

    def unavailable(self) -> str | None:
        return "no vision brain connected" if self.vision is None else self.vision.unavailable()

    def usage(self) -> dict[str, int]:
        """The VLM's calls and tokens so far (cached ratings cost nothing)."""
        return {"vlm_calls": getattr(self.vision, "calls", 0), "vlm_tokens": getattr(self.vision, "tokens", 0)}

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        import hashlib

        key = hashlib.sha1(np.ascontiguousarray(img).tobytes()).hexdigest() + mood
        if key not in self._cache:
            target = f" as a photo with the mood '{mood}'" if mood else ""
            data = self.vision.ask("reward", "You rate photographs for an image-editing agent: exposure, colour, "
                             "sharpness, noise, composition and overall appeal. Be consistent and strict.",
                             f"Rate this photo{target} from 1 (very poor) to 10 (excellent).", VLM_SCORE_SCHEMA, img)
            value = float(data["score"])
            self._cache[key] = (value, _clip01((value - 1.0) / 9.0))
        return self._cache[key]


def learned_scorers(runtime: ToolRuntime | None, vision: Vision | None = None) -> dict[str, Any]:
    return {"aesthetic": AestheticScorer(runtime), "clip": ClipSimilarityScorer(runtime),
            "image_reward": ImageRewardScorer(runtime), "vlm": VLMScorer(vision)}
