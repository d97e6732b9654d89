"""A sub-graph of core nodes made into a tool (scale, then blur), and prompts that hand it to the loops."""
from __future__ import annotations

import json

PARAMS = {"scale": {"from": "number_1", "type": "float", "min": 0.25, "max": 2.0, "default": 1.0,
                    "description": "resize factor"},
          "sigma": {"from": "number_2", "type": "float", "min": 0.1, "max": 10.0, "default": 1.0,
                    "description": "blur strength"}}


def graph_tool_prompt(image: str, chain: list, params=PARAMS) -> dict:
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": image}},
        # the sub-graph: Tool Input -> scale -> blur -> Tool Output (built from ComfyUI's core nodes)
        "10": {"class_type": "EditAgentsToolInput", "inputs": {"number_1": 1.0, "number_2": 1.0, "text": ""}},
        "11": {"class_type": "ImageScaleBy", "inputs": {"image": ["10", 0], "upscale_method": "bilinear", "scale_by": ["10", 1]}},
        "12": {"class_type": "ImageBlur", "inputs": {"image": ["11", 0], "blur_radius": 3, "sigma": ["10", 2]}},
        "13": {"class_type": "EditAgentsToolOutput", "inputs": {
            "image": ["12", 0], "name": "scale_and_blur", "description": "Resize by a factor and blur softly.",
            "parameters": json.dumps(params)}},
        "2": {"class_type": "EditAgentsToolbox", "inputs": {
            "category": "classic", "only": "", "exclude": "", "grounding_dino": "(first available)",
            "sam": "(first available)", "instruct_pix2pix": "(first available)", "inpaint": "(first available)",
            "graph_tool_1": ["13", 0]}},
        "3": {"class_type": "EditAgentsApplyTools", "inputs": {"image": ["1", 0], "chain": json.dumps(chain), "toolbox": ["2", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "graphtool"}},
        "5": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["3", 2]}},
    }


def cca_with_graph_tool(cup, instruction: str, early_stop: bool = True, params=PARAMS) -> dict:
    """The CCA Loop node (2 rounds) with a toolbox holding the scale graph tool (so it runs as role nodes)."""
    prompt = graph_tool_prompt(cup, [], params=params)
    del prompt["3"], prompt["4"], prompt["5"]
    prompt.update({
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": instruction, "caption": "", "toolbox": ["2", 0], "rounds": 2,
            "early_stop": early_stop, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    })
    return prompt


def closed_loop_with_graph_tool(cup, instruction: str, params=PARAMS) -> dict:
    """The Closed Loop node with a toolbox holding the scale graph tool (so it runs as role nodes)."""
    prompt = graph_tool_prompt(cup, [], params=params)
    del prompt["3"], prompt["4"], prompt["5"]
    prompt.update({
        "c": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": instruction, "toolbox": ["2", 0], "max_attempts": 2,
            "accept_score": 7.0, "rerun_every_time": True}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["c", 2]}},
    })
    return prompt
