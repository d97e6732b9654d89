"""Toolbox node: which tools an agent may use."""
from __future__ import annotations

from comfy_api.latest import io

from ..tools import ToolCallError, default_registry
from .types import CATEGORY, TOOLBOX


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.replace("\n", ",").split(",") if n.strip()]


class Toolbox(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsToolbox",
            display_name="Toolbox",
            category=CATEGORY,
            description="Chooses which tools an agent may use. Agents can only call tools in their toolbox.",
            inputs=[
                io.Combo.Input("category", options=["classic", "all"], default="classic",
                               tooltip="Tool family: 'classic' = exact, fast PIL/OpenCV edits that need no model; 'all' = every installed tool."),
                io.String.Input("only", default="", multiline=False,
                                tooltip="Comma-separated tool names to allow (empty = every tool of the category), e.g. 'exposure, contrast'."),
                io.String.Input("exclude", default="", multiline=False,
                                tooltip="Comma-separated tool names to forbid, e.g. 'crop, rotate'."),
            ],
            outputs=[TOOLBOX.Output(display_name="toolbox", tooltip="The allowed tools, for an agent or loop node.")],
        )

    @classmethod
    def execute(cls, category: str, only: str, exclude: str) -> io.NodeOutput:
        registry = default_registry()
        try:
            for name in _names(only) + _names(exclude):
                registry.get(name)  # unknown names: an error with the closest tool names
        except ToolCallError as err:
            raise ValueError(f"Toolbox: {err}") from None
        chosen = registry.subset(categories=[category]) if category != "all" else registry
        if _names(only):
            chosen = chosen.subset(names=[n for n in _names(only) if n in chosen])
        dropped = set(_names(exclude))
        chosen = chosen.subset(names=[n for n in chosen.names() if n not in dropped])
        if len(chosen) == 0:
            raise ValueError("Toolbox: no tool is left after 'only' and 'exclude'; allow at least one tool")
        return io.NodeOutput(chosen)


NODES = [Toolbox]
