"""Apply Tools node: run a tool chain (JSON data, validated against the tool specs) on an image."""
from __future__ import annotations

import json
import time

import numpy as np
from comfy_api.latest import io

from ..agents.records import ToolCall, check_chain
from ..agents.trace import Trace
from ..tools import ToolCallError, default_registry
from .common import node_id, stream
from .convert import arrays_to_image_batch, image_batch_to_arrays
from . import host
from .types import CATEGORY, RESUME, TOOLBOX, TRACE

EXAMPLE = '[{"tool": "exposure", "params": {"stops": 0.5}}, {"tool": "contrast", "params": {"amount": 0.2}}]'


class ApplyTools(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsApplyTools",
            display_name="Apply Tools",
            category=CATEGORY,
            description="Runs a chain of tool calls on the image, as an agent's executor would: each step is "
                        "{tool, params, source}, checked against the tool's spec (out-of-range values are clamped "
                        "with a note). A step may read an earlier step's output, e.g. a mask as \"step:0\".",
            inputs=[
                io.Image.Input("image", tooltip="The image(s) to edit; each image of a batch is handled on its own."),
                io.String.Input("chain", default=EXAMPLE, multiline=True,
                                tooltip="A JSON list of steps: {\"tool\": name, \"params\": {...}, \"source\": \"input\" or \"step:N\"}."),
                TOOLBOX.Input("toolbox", optional=True, tooltip="Tools the chain may use (default: every classic tool)."),
                RESUME.Input("resume", optional=True, tooltip="Internal: set when this node expands itself around a "
                             "graph tool; leave unconnected."),
            ],
            outputs=[
                io.Image.Output(display_name="image", tooltip="The result of the last image step."),
                io.Mask.Output(display_name="mask", tooltip="The last mask the chain made (empty if none)."),
                TRACE.Output(display_name="trace", tooltip="Each step with its parameters, notes and time."),
            ],
            enable_expand=True,  # graph tools run as expanded ComfyUI nodes
        )

    @classmethod
    def execute(cls, image, chain: str, toolbox=None, resume=None) -> io.NodeOutput:
        import torch

        graph = host.graph_builder()  # for graph-tool steps: the sub-graph and this node's continuation
        tools = toolbox if toolbox is not None else default_registry().subset(categories=["classic"])
        calls = _parse(chain)
        graph_steps = [n for n, c in enumerate(calls) if c.tool in tools and tools.get(c.tool).category == "graph"]
        arrays = image_batch_to_arrays(image)
        if resume is not None:  # a graph tool just ran: its result is the image input
            trace, original, outputs, start = resume["trace"], resume["original"], resume["outputs"] + arrays[:1], resume["at"] + 1
            batch = [(original, outputs)]
        else:
            if graph_steps and len(arrays) > 1:
                raise ValueError(f"Apply Tools: a chain with graph tools edits one image at a time (got {len(arrays)})")
            trace, start = stream(Trace(title="Apply Tools"), node_id()), 0
            batch = [(img, []) for img in arrays]
        finals, masks = [], []
        for i, (img, outputs) in enumerate(batch):
            last_image, last_mask = img, np.zeros(img.shape[:2], np.float32)
            for prev, out in zip(calls, outputs):  # restore what earlier steps made
                if tools.get(prev.tool).returns == "mask":
                    last_mask = out[:, :, 0]
                else:
                    last_image = out
            for n in range(start, len(calls)):
                call = calls[n]
                host.raise_if_interrupted()
                src = img if call.source == "input" else outputs[int(call.source.split(":")[1])]
                agent = f"apply[{i}]" if len(batch) > 1 else "apply"
                if n in graph_steps:
                    return _expand(graph, tools, call, n, src, img, outputs, trace, chain, agent)
                start_t = time.perf_counter()
                try:
                    out, params, notes = tools.call(call.tool, src, call.params, refs=outputs)
                except ToolCallError as err:
                    raise ValueError(f"Apply Tools, step {n}: {err}") from None
                outputs.append(out)
                if tools.get(call.tool).returns == "mask":
                    last_mask = out[:, :, 0]
                else:
                    last_image = out
                trace.add("executor", agent, call.label(), started=start_t, subtask=n,
                          inputs={"tool": call.tool, "params": params, "source": call.source}, outputs={"notes": notes},
                          preview=out)
            finals.append(last_image)
            masks.append(last_mask)
        loads = dict(tools.runtime.loads) if tools.runtime is not None else {}
        trace.summary = {"steps": len(calls), "images": len(finals), "model_loads": loads}
        mask_batch = torch.from_numpy(np.stack([m if m.shape == masks[0].shape else np.zeros_like(masks[0]) for m in masks]))
        return io.NodeOutput(arrays_to_image_batch(finals), mask_batch, trace)


def _parse(chain: str) -> list[ToolCall]:
    try:
        steps = json.loads(chain)
    except ValueError as err:
        raise ValueError(f"Apply Tools: the chain is not valid JSON ({err}). Example: {EXAMPLE}") from None
    try:
        if not isinstance(steps, list) or not all(isinstance(s, dict) and "tool" in s for s in steps):
            raise ValueError("expected a JSON list of {\"tool\": ..., \"params\": {...}} objects")
        calls = [ToolCall.from_dict(s) for s in steps]
        check_chain(calls)
    except (ValueError, KeyError, TypeError) as err:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"Apply Tools: the chain is not valid: {err}. Example: {EXAMPLE}") from None
    return calls


def _expand(graph, tools, call, n, src, original, outputs, trace, chain, agent) -> io.NodeOutput:
    """Run a graph tool as ComfyUI nodes: clone its sub-graph with the agent's image and parameters, and
    clone this node to carry on from the next step with the result."""
    import torch

    spec = tools.get(call.tool)
    try:
        params, notes = spec.validate(call.params)
    except ToolCallError as err:
        raise ValueError(f"Apply Tools, step {n}: {err}") from None
    tool = tools.runtime.extras["graph_tools"][call.tool]
    image = torch.from_numpy(np.ascontiguousarray(src[:, :, :3] if src.shape[2] >= 3 else np.repeat(src, 3, 2)))[None]
    result = tool.build(graph, image, params, tag=f"step{n}")
    trace.add("executor", agent, f"{call.label()} (graph tool, expanded)", subtask=n,
              inputs={"tool": call.tool, "params": params, "source": call.source},
              outputs={"notes": notes, "expanded_nodes": sorted(graph.nodes)})
    resume = {"trace": trace, "original": original, "outputs": list(outputs), "at": n}
    nxt = graph.node("EditAgentsApplyTools", id=f"resume{n}", image=result, chain=chain, toolbox=tools, resume=resume)
    return io.NodeOutput(nxt.out(0), nxt.out(1), nxt.out(2), expand=graph.finalize())


NODES = [ApplyTools]
