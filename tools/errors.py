"""How the pack's errors are named where users read them."""
from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=type)


def shown_by_name(cls: E) -> E:
    """Make ComfyUI (and Python's tracebacks) name this exception by its class alone. ComfyUI names an error by
    its module and class, and a custom node's module name is its file-system path, so users read
    ``/.../custom_nodes/edit_agents.agents.brain.BrainError``; with this they read ``BrainError``."""
    cls.__module__ = "builtins"
    return cls
