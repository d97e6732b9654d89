"""Tool chains inside the loops (issue 14, section 1): ground -> mask -> edit, run by the CCA and closed loops on
the real server with tiny random-weight GroundingDINO, segment-anything and Stable Diffusion inpainting models."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from edit_agents.agents.records import ToolCall
from edit_agents.agents.roles import run_chain
from edit_agents.tools import default_registry
from graph_tools import PARAMS, graph_tool_prompt


@pytest.fixture(scope="module")
def landscape(comfy_server, photos):
    Image.fromarray((photos["chelsea"][::3, ::3] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "land.png")
    return "land.png"


def loop_prompt(image: str, loop: str, instruction: str, graph_tool: bool = False) -> dict:
    """A loop node on a Toolbox with the localisation and generative tools (the server's tiny models)."""
    prompt = graph_tool_prompt(image, [], params=PARAMS) if graph_tool else {
        "1": {"class_type": "LoadImage", "inputs": {"image": image}},
        "2": {"class_type": "EditAgentsToolbox", "inputs": {
            "category": "", "only": "", "exclude": "", "grounding_dino": "(first available)",
            "sam": "(first available)", "instruct_pix2pix": "(first available)", "inpaint": "(first available)"}}}
    for stale in ("3", "4", "5"):
        prompt.pop(stale, None)
    prompt["2"]["inputs"]["category"] = "classic + localise + generative"
    if loop == "cca":
        node = {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": instruction, "caption": "", "toolbox": ["2", 0], "rounds": 1,
            "early_stop": True, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True}}
    else:
        node = {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": instruction, "toolbox": ["2", 0], "max_attempts": 2,
            "accept_score": 7.0, "rerun_every_time": True}}
    prompt.update({"l": node, "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
                   "s": {"class_type": "SaveImage", "inputs": {"images": ["l", 0], "filename_prefix": "chain"}}})
    return prompt


def run(comfy, comfy_server, prompt: dict) -> tuple[dict, np.ndarray]:
    result = comfy.call("run", prompt)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    image = Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]).convert("RGB")
    return trace, np.asarray(image, np.float32) / 255.0


def chains(trace: dict) -> list[list[str]]:
    return [[step["tool"] for step in s["outputs"]["steps"]] for s in trace["steps"]
            if s["role"] == "executor" and "steps" in s["outputs"]]


@pytest.mark.parametrize("loop", ["cca", "closed"])
@pytest.mark.parametrize("instruction,tool,found", [
    ("blur the background", "edit_region", "the main subject"),
    ("replace the sky with a sunset", "inpaint", "the sky"),
])
def test_loops_run_ground_mask_edit_chains(comfy, comfy_server, runtime, landscape, loop, instruction, tool, found):
    trace, out = run(comfy, comfy_server, loop_prompt(landscape, loop, instruction))
    ran = chains(trace)
    assert ran and all(c == ["ground", "mask_grow", tool] for c in ran), ran
    recorded = [s["outputs"]["steps"] for s in trace["steps"] if s["role"] == "executor" and "steps" in s["outputs"]]
    assert recorded[0][0]["params"]["text"] == found and recorded[0][2]["params"]["mask"] == "step:1"
    original = np.asarray(Image.open(comfy_server.dirs()["input"] / landscape).convert("RGB"), np.float32) / 255.0
    if tool == "inpaint":  # the random models find "the sky" nearly everywhere: it is repainted
        assert out.shape == original.shape and np.abs(out - original).mean() > 0.02
    else:  # the result is what a recorded chain gives, run here on the same tiny models
        expected = [run_chain(default_registry(runtime), [ToolCall.from_dict(s) for s in steps], original)
                    for steps in recorded]
        assert min(float(np.abs(out - e).mean()) for e in expected) < 0.01
    summary = trace["summary"]
    assert summary["mode"] == "in-process" and not summary["unsupported"]


def test_role_node_closed_loop_runs_the_same_chain(comfy, comfy_server, landscape):
    """With a graph tool in the toolbox the closed loop runs as role nodes; its Executor chains the same way."""
    trace, _ = run(comfy, comfy_server, loop_prompt(landscape, "closed", "replace the sky with a sunset", graph_tool=True))
    assert trace["summary"]["mode"] == "executor nodes"
    assert chains(trace) and all(c == ["ground", "mask_grow", "inpaint"] for c in chains(trace))
