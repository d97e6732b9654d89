"""Edit Agents: a ComfyUI custom node pack that makes ComfyUI an agentic image editor.

Imported by ComfyUI as a custom node pack, and as ``edit_agents`` by the CLI and tests:
nothing ComfyUI-specific is imported until ComfyUI calls ``comfy_entrypoint``.
"""

WEB_DIRECTORY = "./web"


async def comfy_entrypoint():
    from .nodes import EditAgentsExtension

    return EditAgentsExtension()
