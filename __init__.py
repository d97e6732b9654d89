"""Edit Agents: a ComfyUI custom node pack that makes ComfyUI an agentic image editor."""
