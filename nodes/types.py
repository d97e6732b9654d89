"""Custom socket types of the pack."""
from comfy_api.latest import io

BRAIN = io.Custom("BRAIN")
TOOLBOX = io.Custom("TOOLBOX")
PLAN = io.Custom("PLAN")
FEEDBACK = io.Custom("FEEDBACK")
TRACE = io.Custom("TRACE")
REWARD = io.Custom("REWARD")

CATEGORY = "Edit Agents"


def internal_node() -> dict:
    """Schema flags that keep a node the pack makes itself (in a loop's expanded graph) out of the node search
    and menus: ComfyUI's dev-only flag where the running version has one, else the deprecated flag, which the
    frontend hides from search and the node library by default. Such nodes never appear on a user's canvas."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(io.Schema)}
    for flag in ("is_dev_only", "is_deprecated"):
        if flag in fields:
            return {flag: True}
    return {}
