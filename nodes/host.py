"""What the nodes take from the running ComfyUI beyond ``comfy_api``: its graph builder, interrupt flag, progress
bar, server and executing context.

Imported when called, not at import time: ``comfy.model_management`` probes the devices when it is first
imported, and the pack's modules load before a prompt runs.
"""
from __future__ import annotations

from typing import Any, Callable


def graph_builder() -> Any:
    """A GraphBuilder for node expansion. Make it before the node's first ``await``: it reads the executing node's
    id to name what it expands."""
    from comfy_execution.graph_utils import GraphBuilder

    return GraphBuilder()


def stop_check() -> Callable[[], None]:
    """What agents call between steps: raises ComfyUI's interrupt when the user cancelled the prompt."""
    import comfy.model_management

    return comfy.model_management.throw_exception_if_processing_interrupted


def raise_if_interrupted() -> None:
    stop_check()()


def progress_bar(total: int) -> Any:
    """ComfyUI's progress bar for the executing node."""
    import comfy.utils

    return comfy.utils.ProgressBar(total)


def executing() -> tuple[str | None, str | None]:
    """(prompt id, node id) of the node being executed, or (None, None) outside a prompt."""
    from comfy_execution.utils import get_executing_context

    ctx = get_executing_context()
    return (ctx.prompt_id, ctx.node_id) if ctx is not None else (None, None)


def prompt_server() -> Any:
    """The running PromptServer (websocket events, progress text)."""
    from server import PromptServer

    return PromptServer.instance
