"""Optional backends, imported lazily so one missing extra never breaks the whole pack."""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

from .errors import shown_by_name


@shown_by_name
class MissingBackendError(ImportError):
    """A tool needs a Python package that is not installed; the message says what to install."""


@dataclass(frozen=True)
class Backend:
    module: str
    pip_name: str
    used_for: str


BACKENDS: tuple[Backend, ...] = (
    Backend("openai", "openai", "the OpenAI-compatible brain (OpenAI, Ollama, vLLM, LM Studio, DashScope, ...)"),
    Backend("diffusers", "diffusers", "the diffusers editors (InstructPix2Pix, SD/SDXL inpainting)"),
    Backend("segment_anything", "segment-anything", "SAM masks"),
    Backend("transformers", "transformers", "GroundingDINO and the CLIP-based reward components"),
    Backend("ImageReward", "image-reward", "the ImageReward reward component"),
    Backend("llguidance", "llguidance", "the local brain's answers constrained to their JSON schema"),
)


def require(module: str) -> ModuleType:
    """Import ``module`` or raise an error that names the package to install and why."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        known = {b.module: b for b in BACKENDS}
        b = known.get(module)
        what = f"{b.pip_name}' (needed for {b.used_for})" if b else f"{module}'"
        raise MissingBackendError(
            f"Edit Agents: the Python package '{what} is not installed in the Python that runs ComfyUI. "
            f"Install it with: python -m pip install {b.pip_name if b else module}  ({err})") from err


def missing() -> list[Backend]:
    """The optional backends that are not importable (checked without importing them)."""
    return [b for b in BACKENDS if importlib.util.find_spec(b.module) is None]
