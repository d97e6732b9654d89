"""Typed records shared by the roles and loops."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation as data (never code): validated against the tool's spec before it runs."""

    tool: str
    params: dict[str, Any] = field(default_factory=dict)
    rationale: str = ""

    def key(self) -> str:
        """A stable identity for caching and memory (same tool + same parameters)."""
        return self.tool + json.dumps(self.params, sort_keys=True, default=str)

    def label(self) -> str:
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return f"{self.tool}({args})"

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "params": dict(self.params), "rationale": self.rationale}


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)
