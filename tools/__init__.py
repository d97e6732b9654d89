"""The agents' hands: the tool registry and the tools. Never imports ComfyUI."""
from .spec import Param, ToolCallError, ToolOutput, ToolRegistry, ToolSpec


def default_registry() -> ToolRegistry:
    """A fresh registry holding every built-in tool (no module-level shared state)."""
    from .classic import CLASSIC_TOOLS
    from .masks import MASK_TOOLS

    return ToolRegistry(CLASSIC_TOOLS + MASK_TOOLS)


__all__ = ["Param", "ToolCallError", "ToolOutput", "ToolRegistry", "ToolSpec", "default_registry"]
