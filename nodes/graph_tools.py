"""Graph tools: a sub-graph on the canvas, between a Tool Input and a Tool Output node, becomes a
named agent tool with declared parameters. When an agent calls it, the calling node expands a clone of
the sub-graph with the agent's image and parameter values (ComfyUI node expansion), so it runs as
ordinary ComfyUI nodes: visible, with progress, under ComfyUI's model management and cache."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from comfy_api.latest import io

from ..tools.spec import Param, ToolCallError, ToolSpec
from .types import CATEGORY, PREFIX

GRAPH_TOOL = io.Custom(PREFIX + "GRAPH_TOOL")
INPUT_SLOTS = {"image": 0, "number_1": 1, "number_2": 2, "text": 3}  # Tool Input's outputs
PARAM_TYPES = {"float": ("number_1", "number_2"), "int": ("number_1", "number_2"), "string": ("text",)}
EXAMPLE = '{"sigma": {"from": "number_1", "type": "float", "min": 0.1, "max": 10, "default": 2, "description": "blur strength"}}'


@dataclass
class GraphTool:
    spec: ToolSpec
    nodes: dict[str, dict]  # the sub-graph in API format (ids as in the user's prompt)
    input_id: str  # the Tool Input node
    output_link: list  # [node id, slot] that feeds the Tool Output node
    sources: dict[str, str]  # tool parameter -> Tool Input output name

    def build(self, graph, image, params: dict[str, Any], tag: str):
        """Clone the sub-graph into ``graph`` with the agent's image and parameters; return the result's output."""
        clones = {nid: graph.node(node["class_type"], id=f"{tag}.{nid}") for nid, node in self.nodes.items()}
        for nid, node in self.nodes.items():
            for key, value in node["inputs"].items():
                linked = isinstance(value, list) and len(value) == 2 and str(value[0]) in clones
                clones[nid].set_input(key, clones[str(value[0])].out(value[1]) if linked else value)
        entry = clones[self.input_id]
        entry.set_input("image", image)
        for name, source in self.sources.items():
            entry.set_input(source, params[name])
        return clones[str(self.output_link[0])].out(self.output_link[1])


def _never_in_process(img, **params):
    raise ToolCallError("graph tools run as expanded ComfyUI nodes: call them from Apply Tools, an Executor, "
                        "the CCA Loop or the Closed Loop")


def _spec(name: str, description: str, declared: dict) -> tuple[ToolSpec, dict[str, str]]:
    params, sources = [], {}
    for pname, d in declared.items():
        ptype, source = d.get("type", "float"), d.get("from")
        if ptype not in PARAM_TYPES or source not in PARAM_TYPES[ptype]:
            raise ValueError(f"parameter {pname!r}: type must be float, int or string, and 'from' one of "
                             f"{', '.join(PARAM_TYPES.get(ptype, ('number_1', 'number_2', 'text')))}; got {d}")
        if source in sources.values():
            raise ValueError(f"parameter {pname!r}: Tool Input's {source} is already used by another parameter")
        params.append(Param(pname, ptype, d.get("description", pname), default=d.get("default", 1.0 if ptype != "string" else ""),
                            minimum=d.get("min"), maximum=d.get("max")))
        sources[pname] = source
    return ToolSpec(name, description, f"A graph tool: the canvas sub-graph '{name}'.", tuple(params), _never_in_process,
                    category="graph", speed="slow", input="an image", output="the sub-graph's image"), sources


def extract(prompt: dict, output_id: str, name: str, description: str, declared: dict) -> GraphTool:
    link = prompt[output_id]["inputs"].get("image")
    if not (isinstance(link, list) and len(link) == 2):
        raise ValueError("Tool Output: connect the sub-graph's final IMAGE to its image input")
    nodes, stack, entries = {}, [str(link[0])], []
    while stack:  # everything upstream of the Tool Output, stopping at the Tool Input
        nid = stack.pop()
        if nid in nodes:
            continue
        node = prompt[nid]
        nodes[nid] = node
        if node["class_type"] == "EditAgentsToolInput":
            entries.append(nid)
            continue
        stack += [str(v[0]) for v in node["inputs"].values() if isinstance(v, list) and len(v) == 2 and str(v[0]) in prompt]
    if len(entries) != 1:
        raise ValueError(f"Tool Output '{name}': the sub-graph must start at exactly one Tool Input node (found {len(entries)})")
    spec, sources = _spec(name, description, declared)
    entry = {k: v for k, v in nodes[entries[0]]["inputs"].items() if k != "image"}
    nodes[entries[0]] = {"class_type": "EditAgentsToolInput", "inputs": entry}
    return GraphTool(spec, nodes, entries[0], [str(link[0]), link[1]], sources)


class ToolInput(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsToolInput", display_name="Tool Input", category=CATEGORY + "/graph tools",
            description="Where a graph tool starts: the agent's image and chosen parameter values come out here. "
                        "Connect an image to try the sub-graph by hand; agents pass their own.",
            inputs=[io.Image.Input("image", optional=True, tooltip="For trying the sub-graph by hand; agents pass their image."),
                    io.Float.Input("number_1", default=1.0, min=-1e6, max=1e6, step=0.01, tooltip="A numeric parameter (declare it in Tool Output)."),
                    io.Float.Input("number_2", default=1.0, min=-1e6, max=1e6, step=0.01, tooltip="A second numeric parameter."),
                    io.String.Input("text", default="", tooltip="A text parameter (e.g. a prompt).")],
            outputs=[io.Image.Output(display_name="image", tooltip="The agent's image (the test image when run on its own)."),
                     io.Float.Output(display_name="number_1", tooltip="The value the agent chose for the parameter bound to number_1."),
                     io.Float.Output(display_name="number_2", tooltip="The value the agent chose for the parameter bound to number_2."),
                     io.String.Output(display_name="text", tooltip="The text parameter the agent chose, if the tool declares one.")],
        )

    @classmethod
    def execute(cls, number_1, number_2, text, image=None) -> io.NodeOutput:
        if image is None:
            raise ValueError("Tool Input: no image; connect one to try this sub-graph by hand (agents pass their own)")
        return io.NodeOutput(image, number_1, number_2, text)


class ToolOutput(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsToolOutput", display_name="Tool Output", category=CATEGORY + "/graph tools",
            description="Where a graph tool ends. Names the tool, describes it for the planner and declares its "
                        "parameters; connect its output to a Toolbox. The sub-graph does not run here: it runs when "
                        "an agent calls the tool.",
            inputs=[io.Image.Input("image", lazy=True, tooltip="The sub-graph's result."),
                    io.String.Input("name", default="my_graph_tool", tooltip="The tool's name (letters, digits, underscores)."),
                    io.String.Input("description", default="Describe in one line what this sub-graph does.",
                                    tooltip="One line the planner reads to decide when to use the tool."),
                    io.String.Input("parameters", default=EXAMPLE, multiline=True,
                                    tooltip="JSON: each parameter's Tool Input source (number_1, number_2, text), type, range, default and description.")],
            outputs=[GRAPH_TOOL.Output(display_name="graph_tool", tooltip="Connect to a Toolbox's graph_tool input.")],
            hidden=[io.Hidden.prompt, io.Hidden.unique_id],
        )

    @classmethod
    def check_lazy_status(cls, **kwargs) -> list[str]:
        return []  # never evaluate the sub-graph here

    @classmethod
    def execute(cls, name, description, parameters, image=None) -> io.NodeOutput:
        import re

        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise ValueError(f"Tool Output: name {name!r} must be letters, digits and underscores")
        try:
            declared = json.loads(parameters or "{}")
            if not isinstance(declared, dict):
                raise ValueError("expected a JSON object")
        except ValueError as err:
            raise ValueError(f"Tool Output: parameters are not valid JSON ({err}). Example: {EXAMPLE}") from None
        try:
            return io.NodeOutput(extract(cls.hidden.prompt, str(cls.hidden.unique_id), name, description, declared))
        except ValueError as err:
            raise ValueError(f"Tool Output: {err}") from None


NODES = [ToolInput, ToolOutput]
