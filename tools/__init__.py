"""The agents' hands: the tool registry and the tools. Never imports ComfyUI."""
from .spec import Moves, Param, ToolCallError, ToolOutput, ToolRegistry, ToolSpec


def default_registry(runtime=None) -> ToolRegistry:
    """A fresh registry holding every built-in tool (no module-level shared state).

    Model tools need a ``runtime`` (a tools.models.ToolRuntime); without one they report so when called.
    """
    from .classic import CLASSIC_TOOLS
    from .generative import GENERATIVE_TOOLS
    from .localise import LOCALISE_TOOLS
    from .masks import MASK_TOOLS
    from .restore.specs import RESTORE_TOOLS
    from .vlm import VLM_TOOLS

    return ToolRegistry(CLASSIC_TOOLS + RESTORE_TOOLS + MASK_TOOLS + LOCALISE_TOOLS + GENERATIVE_TOOLS + VLM_TOOLS, runtime=runtime)


__all__ = ["Moves", "Param", "ToolCallError", "ToolOutput", "ToolRegistry", "ToolSpec", "default_registry"]
