"""Custom socket types of the pack.

Prefixed, so they cannot meet another pack's BRAIN or PLAN: the canvas would let the two connect and the
nodes would receive objects they do not know. Workflows saved with the old unprefixed names still load and
run: links are kept by slot, and the slots' types come from these definitions.
"""
from comfy_api.latest import io

PREFIX = "EDIT_AGENTS_"
BRAIN = io.Custom(PREFIX + "BRAIN")
TOOLBOX = io.Custom(PREFIX + "TOOLBOX")
PLAN = io.Custom(PREFIX + "PLAN")
FEEDBACK = io.Custom(PREFIX + "FEEDBACK")
TRACE = io.Custom(PREFIX + "TRACE")
REWARD = io.Custom(PREFIX + "REWARD")
RESUME = io.Custom(PREFIX + "RESUME")  # a loop's state, carried to the clone of a node it expands; never wired by hand

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
