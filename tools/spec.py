"""Tool specifications: each tool is declared once (CCA's hierarchical tool config).

The planner sees ``name`` + ``description``; the executor sees ``manual()``; validation,
the README's tool table and the UI read the same ``ToolSpec``. Tool calls from any brain
(model output) are plain data checked here against the spec — never code.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence

import numpy as np

from .errors import shown_by_name

ParamType = Literal["float", "int", "bool", "enum", "string", "box", "mask", "image"]
Category = Literal["classic", "localise", "generative", "vlm", "graph"]


@shown_by_name
class ToolCallError(ValueError):
    """A tool call that does not fit its tool's spec; the message says what to change."""


@dataclass
class ToolOutput:
    """What a tool may return instead of a bare array: notes for the trace and data (boxes, flags)."""

    array: np.ndarray
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Param:
    name: str
    type: ParamType
    description: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    # out-of-range numbers are clamped (and the clamp is reported) unless this is "reject"
    out_of_range: Literal["clamp", "reject"] = "clamp"
    effect: str = ""  # what raising the value does, for the manual
    neutral: float | None = None  # the value that changes nothing; feedback moves a value away from / toward it
    pixels: bool = False  # a length in pixels of the image it runs on: a reduced copy needs it scaled down

    def brief(self) -> str:
        """The parameter in a few words: name, range or choices, default (the compact manual's form)."""
        if self.choices:
            kind = "|".join(self.choices)
        elif self.minimum is not None or self.maximum is not None:
            kind = f"{_num(self.minimum)}..{_num(self.maximum)}"
        else:
            kind = self.type
        return f"{self.name} {kind}" + ("" if self.required else f"={_num(self.default)}")

    def describe(self) -> str:
        parts = [f"- {self.name} ({self.type}"]
        if self.minimum is not None or self.maximum is not None:
            parts.append(f", {self.minimum} to {self.maximum}")
        if self.choices:
            parts.append(", one of " + "/".join(self.choices))
        parts.append(", required" if self.required else f", default {self.default!r}")
        parts.append(f"): {self.description}")
        if self.effect:
            parts.append(f" {self.effect}")
        return "".join(parts)


def _num(value: Any) -> str:
    """A number as short as it reads (0.2, 3, not 0.2000 or 3.0); anything else as repr."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, (int, bool)) or value is None else repr(value)


class Vision(Protocol):
    """A vision-language model lent to the tools (the VLM tools, the reward's VLM rating) by whoever holds one: the
    agents lend a brain this way, so the tools never import them."""

    def unavailable(self) -> str | None:
        """Why it cannot look at a photo (e.g. the offline rule brain cannot see), or None."""

    def ask(self, role: str, system: str, text: str, schema: dict[str, Any], image: np.ndarray) -> dict[str, Any]:
        """One answer about ``image`` that fits ``schema``, from synchronous code."""


@dataclass(frozen=True)
class Moves:
    """What a tool changes that a rule critic can measure: one of the metrics of ``agents/quality/metrics.py``, which way
    it goes when a request asks for more of the tool, and whether the request's wording ("darker", "less")
    turns it around (an auto white balance only ever lowers the cast)."""

    metric: str
    direction: Literal["up", "down"] = "up"
    follows_wording: bool = True


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str  # one line: what the planner sees
    purpose: str  # the manual's opening: when to use it, what it changes
    params: tuple[Param, ...]
    run: Callable[..., np.ndarray] = field(compare=False, repr=False)
    category: Category = "classic"
    keywords: tuple[str, ...] = ()  # phrases the rule brain maps to this tool
    speed: Literal["fast", "slow"] = "fast"
    needs_model: bool = False
    needs_gpu: bool = False
    input: str = "an RGB(A) or grayscale image"
    output: str = "the edited image, same size unless stated"
    returns: Literal["image", "mask"] = "image"  # a mask (H x W x 1) feeds a later step's mask parameter
    needs_runtime: bool = False  # model tools get the registry's ToolRuntime (model store, device, brain)
    # What the tool measures on the whole image (a white balance's illuminant, the levels' black and white
    # points), as keyword arguments that make it do the same to a crop of that image; ``pixel_pins`` are
    # lengths among them, in pixels of the image measured.
    pins: Callable[[np.ndarray, Mapping[str, Any]], dict[str, Any]] | None = field(default=None, compare=False,
                                                                                  repr=False)
    pixel_pins: tuple[str, ...] = ()
    # the pins hold a place in the image (centre_x, centre_y, pixels): a crop of it gets them moved by its own corner
    # (pins_in_crop), as a lens's centre is a place in the photo, not in each crop
    placed: bool = False
    # the tool moves pixels (the geometry) or one colour channel against another: what is measured of where things
    # are (a lens's colour fringes) is read again after it, while every other classic edit leaves that as it was
    moves_pixels: bool = False
    # each output pixel is a function of that pixel alone (what the tool measures on the whole photo pinned): a tone or
    # colour curve. A curve removes none of the distortion the no-reference quality scores read (blur, noise, blocks)
    # though it moves them, so PhotoAgent holds a curve's result to the readings of the photo without it
    # (agents/quality/reward.Reward.score's ``held_readings``)
    pointwise: bool = False
    # tools that would work against this one's result, so a plan does not follow it with them (a sharpen or a
    # deconvolution after a deblock brings the blocks back and reads the lost detail as blur)
    conflicts: tuple[str, ...] = ()
    moves: Moves | None = None  # what the offline brain measures to judge the tool's effect
    # A restoration's model of the defect it removes, applied to its result with the same (clean, scaled) params:
    # the photo it says it started from (a deconvolution's kernel blurs again). PhotoAgent's reward compares that
    # with the input beside the result itself, so the detail a restoration brings back is charged only a quarter as a
    # change of content (agents/quality/reward.preserved). None when the params do not fix the model.
    forward: Callable[[np.ndarray, Mapping[str, Any]], np.ndarray | None] | None = field(default=None, compare=False,
                                                                                      repr=False)

    @property
    def stands_alone(self) -> bool:
        """Whether one call of it edits a photo by itself: it returns an image and needs no earlier step's output
        (a mask or an image). Only such a tool is an action for PhotoAgent's perceiver; one that needs a mask is
        reached through a chain (ground -> mask -> edit), in the loops that write chains."""
        return self.returns == "image" and not any(p.required and p.type in ("mask", "image") for p in self.params)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params if not p.required and p.default is not None}

    def at_scale(self, params: Mapping[str, Any], scale: float) -> dict[str, Any]:
        """``params`` for a copy ``scale`` times the size (search previews): lengths in pixels scale with it,
        so a sharpen or blur does to the copy what it does to the photo."""
        out = dict(params)
        if scale == 1.0:
            return out
        for p in self.params:
            if p.pixels and p.type in ("float", "int"):
                value = out.get(p.name, p.default)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    # not clamped to the parameter's range: that range is for the photo, and a 1.5 px radius
                    # on a copy a tenth of the size is 0.15 px, whatever the smallest radius a user may ask for
                    out[p.name] = max(1, round(value * scale)) if p.type == "int" else value * scale
        return out

    def pinned(self, whole: np.ndarray, params: Mapping[str, Any]) -> dict[str, Any]:
        """The ``pins`` measured on ``whole`` (an image or a reduced copy of it) with clean ``params``: what
        makes the tool treat a crop as part of the whole image."""
        return {} if self.pins is None else self.pins(whole, params)

    def pins_at_scale(self, pins: Mapping[str, Any], scale: float) -> dict[str, Any]:
        """``pins`` for an image ``scale`` times the size of the one they were measured on."""
        return {k: v * scale if k in self.pixel_pins else v for k, v in pins.items()}

    def pins_in_crop(self, pins: Mapping[str, Any], x0: int, y0: int) -> dict[str, Any]:
        """``pins`` for the crop of the image whose top-left corner is at (x0, y0) (a placed tool's centre moves)."""
        if not self.placed:
            return dict(pins)
        out = dict(pins)
        if "centre_x" in out:
            out["centre_x"] = out["centre_x"] - x0
        if "centre_y" in out:
            out["centre_y"] = out["centre_y"] - y0
        return out

    def brief(self) -> str:
        """One line: the tool, its parameters in a few words, what it does (for tools other than the one asked)."""
        return f"- {self.name}({', '.join(p.brief() for p in self.params)}): {self.description}"

    def manual(self) -> str:
        lines = [f"Tool {self.name}: {self.description}", self.purpose,
                 f"Input: {self.input}. Output: {self.output}.", "Parameters:"]
        lines += [p.describe() for p in self.params] or ["- none"]
        return "\n".join(lines)

    def validate(self, params: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
        """Return (clean parameters with defaults filled, notes about clamps)."""
        params = dict(params or {})
        known = {p.name for p in self.params}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ToolCallError(
                f"tool {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters are: {', '.join(sorted(known)) or 'none'}")
        clean: dict[str, Any] = {}
        notes: list[str] = []
        for p in self.params:
            if p.name not in params or params[p.name] is None:
                if p.required:
                    raise ToolCallError(f"tool {self.name!r} needs parameter {p.name!r} ({p.description})")
                clean[p.name] = p.default
                continue
            clean[p.name], note = _coerce(self.name, p, params[p.name])
            if note:
                notes.append(note)
        return clean, notes


def _bound(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _coerce(tool: str, p: Param, value: Any) -> tuple[Any, str]:
    where = f"{tool}.{p.name}"
    if p.type in ("float", "int"):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ToolCallError(f"{where} must be a number, got {type(value).__name__} {value!r}")
        try:
            num = float(value)
        except ValueError:
            raise ToolCallError(f"{where} must be a number, got {value!r}") from None
        except OverflowError:  # an integer too long for a float (a model wrote 400 digits): beyond any bound
            num = math.inf if value > 0 else -math.inf
        lo, hi = p.minimum, p.maximum
        if math.isnan(num) or (math.isinf(num) and (p.out_of_range == "reject" or (hi if num > 0 else lo) is None)):
            raise ToolCallError(f"{where} must be a finite number, got {str(value)[:40]!r}")
        note = ""
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            if p.out_of_range == "reject":
                raise ToolCallError(f"{where}={num:g} is outside {lo:g}..{hi:g}")
            clamped = min(max(num, lo if lo is not None else num), hi if hi is not None else num)
            note = f"{where}={num:g} clamped to {clamped:g} (range {_bound(lo)}..{_bound(hi)})"
            num = clamped
        return (int(round(num)) if p.type == "int" else num), note
    if p.type == "bool":
        if isinstance(value, bool):
            return value, ""
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1"), ""
        raise ToolCallError(f"{where} must be true or false, got {value!r}")
    if p.type == "enum":
        if value in p.choices:
            return value, ""
        close = difflib.get_close_matches(str(value), p.choices, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ToolCallError(f"{where} must be one of {', '.join(p.choices)}; got {value!r}{hint}")
    if p.type == "string":
        if not isinstance(value, str):
            raise ToolCallError(f"{where} must be text, got {type(value).__name__}")
        return value, ""
    if p.type == "box":
        if (not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 4
                or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in value)):
            raise ToolCallError(f"{where} must be [x0, y0, x1, y1] as fractions of width/height, got {value!r}")
        x0, y0, x1, y1 = (min(max(float(v), 0.0), 1.0) for v in value)
        if x1 <= x0 or y1 <= y0:
            raise ToolCallError(f"{where} must have x0 < x1 and y0 < y1, got {value!r}")
        return (x0, y0, x1, y1), ""
    if p.type in ("mask", "image"):
        if isinstance(value, str):
            kind, _, num = value.partition(":")
            if kind == "step" and num.isdigit():
                return value, ""
            raise ToolCallError(f"{where} must reference an earlier step's output as 'step:N', got {value!r}")
        if isinstance(value, np.ndarray):
            return value, ""
        raise ToolCallError(f"{where} must be 'step:N' (an earlier step's output), got {type(value).__name__}")
    return value, ""


class ToolRegistry:
    """The tools an agent may use. Lookup errors name the closest known tools."""

    def __init__(self, specs: Sequence[ToolSpec] = (), runtime: Any = None):
        self._specs: dict[str, ToolSpec] = {}
        self.runtime = runtime  # a ToolRuntime for model tools; None = classic tools only
        for s in specs:
            self.register(s)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is registered twice")
        self._specs[spec.name] = spec

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def names(self) -> list[str]:
        return list(self._specs)

    def specs(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def get(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._specs, n=3, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ToolCallError(f"unknown tool {name!r}{hint}. Available tools: {', '.join(self._specs)}") from None

    def subset(self, names: Sequence[str] = (), categories: Sequence[str] = ()) -> "ToolRegistry":
        """A registry restricted to the named tools and/or categories (a toolbox)."""
        for n in names:
            self.get(n)  # unknown names fail loudly with suggestions
        picked = [s for s in self._specs.values() if s.name in names or s.category in categories]
        return ToolRegistry(picked, runtime=self.runtime)

    def runnable(self) -> "ToolRegistry":
        """The tools that can run here: a model tool needs the registry's model runtime (a Toolbox gives one)."""
        if self.runtime is not None:
            return self
        return ToolRegistry([s for s in self._specs.values() if not s.needs_runtime], runtime=None)

    def brief_catalogue(self) -> str:
        """Every tool on one line with its parameters (what an executor or a perceiver chooses from)."""
        return "\n".join(s.brief() for s in self._specs.values())

    def planner_catalogue(self) -> str:
        """What a planner sees: one line per tool."""
        return "\n".join(f"- {s.name}: {s.description}" for s in self._specs.values())

    def call(self, name: str, image: np.ndarray, params: Mapping[str, Any] | None = None,
             refs: Sequence[np.ndarray] = (), *, scale: float = 1.0,
             pins: Mapping[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any], list[str]]:
        """Validate and run one tool call; returns (output array, clean params, notes).

        ``refs`` are the outputs of earlier steps of the same chain, for "step:N" parameters. ``scale`` and
        ``pins`` are for the search's reduced copy and native crops: the parameters are validated as given
        (for the photo), then pixel lengths scaled, and ``pins`` (from ``ToolSpec.pinned``) passed on.
        """
        spec = self.get(name)
        clean, notes = spec.validate(params)
        args = {**spec.at_scale(clean, scale), **(pins or {})}
        for p in spec.params:
            value = args.get(p.name)
            if isinstance(value, str) and p.type in ("mask", "image"):
                n = int(value.split(":")[1])
                if n >= len(refs):
                    raise ToolCallError(f"{name}.{p.name} reads {value}, but only {len(refs)} earlier step(s) exist")
                args[p.name] = as_mask(refs[n], image.shape[:2]) if p.type == "mask" else refs[n]
        if spec.needs_runtime:
            if self.runtime is None:
                raise ToolCallError(f"tool {name!r} needs models, but this toolbox has no model runtime")
            args["runtime"] = self.runtime
        out = spec.run(image, **args)
        if isinstance(out, ToolOutput):
            return checked_output(name, out.array), clean, notes + out.notes
        return checked_output(name, out), clean, notes


def checked_output(name: str, out: np.ndarray) -> np.ndarray:
    """``out`` if it is an image (H x W x C, at least a pixel each way, finite); otherwise a ToolCallError, so the
    step fails as an attempt and what reads the image next (a thumbnail, a critic) never meets it."""
    arr = np.asarray(out)
    if arr.ndim != 3 or arr.shape[0] == 0 or arr.shape[1] == 0 or arr.shape[2] == 0:
        raise ToolCallError(f"tool {name!r} returned an empty or malformed image (shape {tuple(arr.shape)}); "
                            "the step is dropped")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ToolCallError(f"tool {name!r} returned NaN or infinite pixels; the step is dropped")
    return out


def as_mask(arr: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """An H x W float mask in [0, 1] of the given size from a mask or an image."""
    m = np.asarray(arr, dtype=np.float32)
    if m.ndim == 3:
        m = m[:, :, 0] if m.shape[2] == 1 else m[:, :, :3].mean(axis=2)
    if m.shape != tuple(size):
        raise ToolCallError(f"the mask is {m.shape[1]}x{m.shape[0]} but the image is {size[1]}x{size[0]}; "
                            "masks must match the image they edit")
    return np.clip(m, 0.0, 1.0)
