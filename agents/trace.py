"""The trace: every decision an agent made, serialisable to JSON and back.

Secrets never enter a trace: records hold tool names, parameters, scores and text
summaries only; brains record the *name* of their key's environment variable at most.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

TRACE_VERSION = 1
HISTORY_KEY = "edit_agents_trace"  # where the Trace View node publishes a trace in /history outputs


@dataclass
class TraceStep:
    index: int
    role: str  # planner / executor / critic / aggregator / perceiver / reward / loop
    agent: str  # which agent (e.g. "photoagent", "generator-1")
    action: str  # short human-readable label of what happened
    round: int | None = None
    subtask: int | None = None
    attempt: int | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    wall_ms: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    image: int | None = None  # index into the trace's intermediate images, if any
    thumb: str | None = None  # a small JPEG data URL of the image this step made or judged, for the browser


@dataclass
class Trace:
    title: str = ""
    steps: list[TraceStep] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    version: int = TRACE_VERSION
    # called with each new step (e.g. to stream it to the web extension); never serialised
    listener: Callable[[TraceStep], None] | None = field(default=None, repr=False, compare=False)
    # called with (role, agent, text so far) while a brain streams an answer; never serialised. Unset, a listener's
    # own ``streamer`` attribute is used (the nodes' step sender has one), so a trace an agent makes from a listener
    # alone streams too.
    streamer: Callable[[str, str, str], None] | None = field(default=None, repr=False, compare=False)

    def add(self, role: str, agent: str, action: str, *, started: float | None = None, preview: Any = None,
            **fields: Any) -> TraceStep:
        """Record a step; ``preview`` (an image array) becomes its thumbnail."""
        wall_ms = (time.perf_counter() - started) * 1000.0 if started is not None else 0.0
        if preview is not None:
            from ..tools.imageops import thumbnail_data_url

            fields["thumb"] = thumbnail_data_url(preview)
        step = TraceStep(index=len(self.steps), role=role, agent=agent, action=action, wall_ms=round(wall_ms, 3), **fields)
        self.steps.append(step)
        if self.listener is not None:
            self.listener(step)
        return step

    def live(self, role: str, agent: str, text: str) -> None:
        """Pass a streaming answer's text so far to whoever watches (nothing is recorded: the step comes after)."""
        streamer = self.streamer or getattr(self.listener, "streamer", None)
        if streamer is not None:
            streamer(role, agent, text)

    def listen(self, listener: Callable[[TraceStep], None] | None, replay: bool = True) -> None:
        """Send each new step (and, with ``replay``, every step so far) to ``listener``."""
        self.listener = listener
        if listener is not None and replay:
            for step in self.steps:
                listener(step)

    @classmethod
    def merge(cls, traces: list["Trace"], title: str) -> "Trace":
        """One trace from several (e.g. one per image of a batch), steps renumbered in order."""
        merged = cls(title=title, summary={"parts": [t.summary for t in traces]})
        for t in traces:
            for s in t.steps:
                merged.steps.append(TraceStep(**{**asdict(s), "index": len(merged.steps)}))
        return merged

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "steps": [_jsonable(asdict(s)) for s in self.steps],
                "summary": _jsonable(self.summary), "version": self.version}

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trace":
        if data.get("version") != TRACE_VERSION:
            raise ValueError(f"trace version {data.get('version')!r} is not supported (expected {TRACE_VERSION})")
        steps = [TraceStep(**s) for s in data.get("steps", [])]
        return cls(title=data.get("title", ""), steps=steps, summary=dict(data.get("summary", {})))

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))


def _jsonable(value: Any) -> Any:
    """Tuples -> lists, numpy scalars -> Python numbers, so traces round-trip exactly."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    return value
