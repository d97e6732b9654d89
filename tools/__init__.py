"""The agents' hands: the tool registry and the tools. Never imports ComfyUI."""
from .spec import Param, ToolCallError, ToolRegistry, ToolSpec


def default_registry() -> ToolRegistry:
    """A fresh registry holding every built-in tool (no module-level shared state)."""
    from .classic import CLASSIC_TOOLS

    return ToolRegistry(CLASSIC_TOOLS)


__all__ = ["Param", "ToolCallError", "ToolRegistry", "ToolSpec", "default_registry"]
