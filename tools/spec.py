"""Tool specifications: each tool is declared once (CCA's hierarchical tool config).

The planner sees ``name`` + ``description``; the executor sees ``manual()``; validation,
the README's tool table and the UI read the same ``ToolSpec``. Tool calls from any brain
(model output) are plain data checked here against the spec — never code.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

ParamType = Literal["float", "int", "bool", "enum", "string", "box", "mask", "image"]
Category = Literal["classic", "localise", "generative", "vlm", "graph"]


class ToolCallError(ValueError):
    """A tool call that does not fit its tool's spec; the message says what to change."""


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

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params if not p.required}

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


def _coerce(tool: str, p: Param, value: Any) -> tuple[Any, str]:
    where = f"{tool}.{p.name}"
    if p.type in ("float", "int"):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ToolCallError(f"{where} must be a number, got {type(value).__name__} {value!r}")
        try:
            num = float(value)
        except ValueError:
            raise ToolCallError(f"{where} must be a number, got {value!r}") from None
        if not math.isfinite(num):
            raise ToolCallError(f"{where} must be a finite number, got {value!r}")
        note = ""
        lo, hi = p.minimum, p.maximum
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            if p.out_of_range == "reject":
                raise ToolCallError(f"{where}={num:g} is outside {lo:g}..{hi:g}")
            clamped = min(max(num, lo if lo is not None else num), hi if hi is not None else num)
            note = f"{where}={num:g} clamped to {clamped:g} (range {lo:g}..{hi:g})"
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
    return value, ""  # mask / image references are resolved by the runner


class ToolRegistry:
    """The tools an agent may use. Lookup errors name the closest known tools."""

    def __init__(self, specs: Sequence[ToolSpec] = ()):
        self._specs: dict[str, ToolSpec] = {}
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
        return ToolRegistry(picked)

    def planner_catalogue(self) -> str:
        """What a planner sees: one line per tool."""
        return "\n".join(f"- {s.name}: {s.description}" for s in self._specs.values())

    def call(self, name: str, image: np.ndarray, params: Mapping[str, Any] | None = None
             ) -> tuple[np.ndarray, dict[str, Any], list[str]]:
        """Validate and run one tool call; returns (image, clean params, notes)."""
        spec = self.get(name)
        clean, notes = spec.validate(params)
        return spec.run(image, **clean), clean, notes
