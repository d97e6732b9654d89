"""ComfyUI adapters. Each node module is imported on its own so one failure never hides the rest."""
from __future__ import annotations

import importlib
import logging

from comfy_api.latest import ComfyExtension, io

from ..tools.backends import missing

LOG = logging.getLogger("edit_agents")
NODE_MODULES = ("brain", "toolbox", "roles", "cca", "imagagent", "photoagent", "reward", "apply_tools", "graph_tools",
                "trace_view", "photo_io")


def load_nodes() -> list[type[io.ComfyNode]]:
    nodes: list[type[io.ComfyNode]] = []
    for name in NODE_MODULES:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ImportError as err:
            LOG.warning("Edit Agents: nodes from %s are unavailable: %s", name, err)
            continue
        nodes.extend(module.NODES)
    for b in missing():
        LOG.warning("Edit Agents: optional package '%s' is not installed; %s will report an error when used. "
                    "Install it with: python -m pip install %s", b.pip_name, b.used_for, b.pip_name)
    return nodes


class EditAgentsExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        from .runtime import register_model_folders

        register_model_folders()
        return load_nodes()
