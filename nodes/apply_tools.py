"""Apply Tools node: run a tool chain (JSON data, validated against the tool specs) on an image."""
from __future__ import annotations

import json
import time

import numpy as np
from comfy_api.latest import io

from ..agents.records import ToolCall, check_chain
from ..agents.trace import Trace
from ..tools import ToolCallError, default_registry
from .convert import arrays_to_image_batch, image_batch_to_arrays
from .types import CATEGORY, TOOLBOX, TRACE

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
            ],
            outputs=[
                io.Image.Output(display_name="image", tooltip="The result of the last image step."),
                io.Mask.Output(display_name="mask", tooltip="The last mask the chain made (empty if none)."),
                TRACE.Output(display_name="trace", tooltip="Each step with its parameters, notes and time."),
            ],
        )

    @classmethod
    def execute(cls, image, chain: str, toolbox=None) -> io.NodeOutput:
        import comfy.model_management
        import torch

        tools = toolbox if toolbox is not None else default_registry().subset(categories=["classic"])
        try:
            steps = json.loads(chain)
            if not isinstance(steps, list) or not all(isinstance(s, dict) and "tool" in s for s in steps):
                raise ValueError("expected a JSON list of {\"tool\": ..., \"params\": {...}} objects")
            calls = [ToolCall.from_dict(s) for s in steps]
            check_chain(calls)
        except (ValueError, KeyError, TypeError) as err:  # json.JSONDecodeError is a ValueError
            raise ValueError(f"Apply Tools: the chain is not valid: {err}. Example: {EXAMPLE}") from None
        trace = Trace(title="Apply Tools")
        finals, masks = [], []
        for i, img in enumerate(image_batch_to_arrays(image)):
            outputs: list[np.ndarray] = []
            last_image, last_mask = img, np.zeros(img.shape[:2], np.float32)
            for n, call in enumerate(calls):
                comfy.model_management.throw_exception_if_processing_interrupted()
                src = img if call.source == "input" else outputs[int(call.source.split(":")[1])]
                start = time.perf_counter()
                try:
                    out, params, notes = tools.call(call.tool, src, call.params, refs=outputs)
                except ToolCallError as err:
                    raise ValueError(f"Apply Tools, step {n}: {err}") from None
                outputs.append(out)
                if tools.get(call.tool).returns == "mask":
                    last_mask = out[:, :, 0]
                else:
                    last_image = out
                trace.add("executor", f"apply[{i}]" if image.shape[0] > 1 else "apply", call.label(), started=start,
                          subtask=n, inputs={"tool": call.tool, "params": params, "source": call.source},
                          outputs={"notes": notes})
            finals.append(last_image)
            masks.append(last_mask)
        loads = dict(tools.runtime.loads) if tools.runtime is not None else {}
        trace.summary = {"steps": len(calls), "images": len(finals), "model_loads": loads}
        mask_batch = torch.from_numpy(np.stack([m if m.shape == masks[0].shape else np.zeros_like(masks[0]) for m in masks]))
        return io.NodeOutput(arrays_to_image_batch(finals), mask_batch, trace)


NODES = [ApplyTools]
