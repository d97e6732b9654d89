"""Writes the example workflows in workflows/ (UI format) from the API-format graphs below.

The widget order and sockets come from a live server's /object_info, so the files match what the
canvas saves. Run after changing a node's inputs: .venv/bin/python scripts/build_workflows.py
"""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from edit_agents import SAMPLE_IMAGE
from edit_agents.cli.server import LocalServer
from edit_agents.cli.workflow import api_to_ui

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"
RULE_BRAIN = {"provider": "rule (offline)", "model": "", "base_url": "", "api_key_env": "", "temperature": 0.2,
              "max_tokens": 1024, "timeout": 60.0, "image_side": 768, "concurrency": 4, "max_retries": 3,
              "structured_output": "json_schema", "rule_boldness": 1.0}
TOOLBOX = {"category": "classic", "only": "", "exclude": ""}
PROVIDERS = ("To use an LLM instead, set a Brain's provider (OpenAI, Ollama, vLLM, LM Studio, DashScope, ...), its "
             "model, and the *name* of the environment variable that holds the key (never the key itself).")


def brain(boldness: float = 1.0) -> dict:
    return {"class_type": "EditAgentsBrain", "inputs": {**RULE_BRAIN, "rule_boldness": boldness}}


def ollama(model: str = "qwen2.5vl:7b", temperature: float = 0.2, unload: bool = False) -> dict:
    """A Brain on Ollama's own API at its default URL (no key), with the provider's context (4096) and Ollama's
    keep_alive; ``unload``: it unloads Ollama's models before ComfyUI loads an editor (one GPU for both)."""
    return {"class_type": "EditAgentsBrain", "inputs": {**RULE_BRAIN, "provider": "ollama", "model": model,
                                                        "temperature": temperature, "context": 0, "keep_alive": "",
                                                        "unload_before_models": unload, "seed": -1}}


def local_vlm(temperature: float = 0.0) -> dict:
    """A Brain running a model from models/LLM/ inside ComfyUI; the user picks the folder in local_model."""
    return {"class_type": "EditAgentsBrain", "inputs": {**RULE_BRAIN, "provider": "local", "temperature": temperature,
                                                        "max_tokens": 768}}


NEEDS_OLLAMA = ("**Needs** [Ollama](https://ollama.com) running on this machine with a vision model pulled "
                "(`ollama pull qwen2.5vl:7b`); any OpenAI-compatible vision endpoint works instead: set each Brain's "
                "provider, model and, for a hosted one, the *name* of the environment variable that holds the key.")
NEEDS_LOCAL = ("**Needs** a vision-language model folder (Hugging Face layout) in `models/LLM/`, e.g. "
               "Qwen2.5-VL-3B-Instruct or SmolVLM-Instruct, picked in each Brain's *local_model*; it runs inside "
               "ComfyUI, offline, loaded once and shared by every Brain that names it. Decoding follows each role's "
               "JSON schema, so even a small model answers in shape.")


def kontext_loaders() -> dict:
    """FLUX.1 Kontext [dev] as ComfyUI's own template loads it (flux_kontext_dev_basic.json)."""
    return {
        "unet": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev-kontext_fp8_scaled.safetensors",
                                                        "weight_dtype": "default"}},
        "clip": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                            "clip_name2": "t5xxl_fp8_e4m3fn_scaled.safetensors",
                                                            "type": "flux"}},
        "vae": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    }


def qwen_edit_loaders() -> dict:
    """Qwen-Image-Edit-2509 as ComfyUI's own template loads it (image_qwen_image_edit_2509.json), with its
    ModelSamplingAuraFlow before the Toolbox."""
    return {
        "unet": {"class_type": "UNETLoader", "inputs": {"unet_name": "qwen_image_edit_2509_fp8_e4m3fn.safetensors",
                                                        "weight_dtype": "default"}},
        "shift": {"class_type": "ModelSamplingAuraFlow", "inputs": {"model": ["unet", 0], "shift": 3.0}},
        "clip": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_2.5_vl_7b_fp8_scaled.safetensors",
                                                        "type": "qwen_image"}},
        "vae": {"class_type": "VAELoader", "inputs": {"vae_name": "qwen_image_vae.safetensors"}},
    }


def editor_toolbox(model: list) -> dict:
    return {"class_type": "EditAgentsToolbox", "inputs": {
        **TOOLBOX, "category": "classic + localise + generative", "model": model, "clip": ["clip", 0],
        "vae": ["vae", 0]}}


NEEDS_KONTEXT = ("**Needs** FLUX.1 Kontext [dev], as ComfyUI's own Kontext template loads it: "
                 "`flux1-dev-kontext_fp8_scaled.safetensors` in `models/diffusion_models/`, `clip_l.safetensors` and "
                 "`t5xxl_fp8_e4m3fn_scaled.safetensors` in `models/text_encoders/`, `ae.safetensors` in `models/vae/`; "
                 "and a GPU. ")
TAKE_TURNS = ("Its Brains unload Ollama's VLM before ComfyUI loads the editor (*unload_before_models*), so the two "
              "take turns on one 24 GB GPU; Ollama loads the VLM again at its next call. With room for both, turn it "
              "off.")
NEEDS_QWEN_EDIT = ("**Needs** Qwen-Image-Edit-2509, as ComfyUI's own template loads it: "
                   "`qwen_image_edit_2509_fp8_e4m3fn.safetensors` in `models/diffusion_models/`, "
                   "`qwen_2.5_vl_7b_fp8_scaled.safetensors` in `models/text_encoders/`, `qwen_image_vae.safetensors` in "
                   "`models/vae/`; and a GPU. ")


def load(image: str = SAMPLE_IMAGE.name) -> dict:
    """The Load Photo of every workflow (16-bit files, colour profiles, EXIF): the sample photo the pack copies
    into ComfyUI's input folder."""
    return {"class_type": "EditAgentsLoadPhoto", "inputs": {"image": image}}


def saved_as_photos(prompt: dict) -> dict:
    """Every Save Image of a workflow becomes a Save Photo fed by the Load Photo's PHOTO: results keep the input's
    bit depth, profile and EXIF."""
    out = {}
    for nid, node in prompt.items():
        if node["class_type"] == "SaveImage":
            node = {"class_type": "EditAgentsSavePhoto", "inputs": {
                "images": node["inputs"]["images"], "filename_prefix": node["inputs"]["filename_prefix"],
                "format": "png", "bits": "as the original", "quality": 95, "profile": "the original's",
                "photo": ["img", 2]}}
        out[nid] = node
    return out


def role(cls: str, **inputs) -> dict:
    return {"class_type": cls, "inputs": {"rerun_every_time": False, **inputs}}


WORKFLOW_GRAPHS = {
    "cca.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "gen1": brain(1.0), "gen2": brain(1.6), "judge": brain(1.0),
            "loop": {"class_type": "EditAgentsCCALoop", "inputs": {
                "image": ["img", 0], "instruction": "make it warmer and brighter, with more contrast", "caption": "",
                "rounds": 5, "early_stop": True, "restart_from_original": True, "min_score": 7.0,
                "rerun_every_time": False, "toolbox": ["tools", 0], "planner_brain": ["gen1", 0],
                "generator_2_brain": ["gen2", 0], "discriminator_brain": ["judge", 0], "competitor_brain": ["judge", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/cca"}},
            "rounds": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "gen1": "Brain: generator 1", "gen2": "Brain: generator 2 (bolder)",
                "judge": "Brain: discriminator and competitor", "loop": "CCA Loop", "rounds": "Each round's best"},
        note="## CCA: two competing generators and a discriminator\n\nTwo generator agents (plan + execute) edit the "
             "photo from the same instruction; a discriminator asks Yes/No questions about each result and scores "
             "its quality; a competitor picks the better one. Up to **5 rounds** with **early stop**; each round "
             "learns from its own and its rival's feedback.\n\nRuns **offline** with the rule brains shown (the "
             "second is bolder). " + PROVIDERS + "\n\nNeeds no model weights. Edit the instruction on the CCA Loop.",
    ),
    "imagagent.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "planner": brain(), "intent": brain(), "quality": brain(), "fidelity": brain(), "agg": brain(),
            "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
                "image": ["img", 0], "instruction": "warmer and sharper, then add a hat", "max_attempts": 3,
                "accept_score": 7.0, "rerun_every_time": False, "toolbox": ["tools", 0], "planner_brain": ["planner", 0],
                "executor_brain": ["planner", 0], "expert_1_brain": ["intent", 0], "expert_2_brain": ["quality", 0],
                "expert_3_brain": ["fidelity", 0], "aggregator_brain": ["agg", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/imagagent"}},
            "attempts": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "planner": "Brain: planner and executor", "intent": "Brain: expert 1 (intent)",
                "quality": "Brain: expert 2 (quality)", "fidelity": "Brain: expert 3 (fidelity)",
                "agg": "Brain: aggregator", "loop": "Closed Loop (IMAGAgent)", "attempts": "Every attempt"},
        note="## IMAGAgent: plan, execute, reflect\n\nA constraint-aware planner splits the instruction into atomic "
             "subtasks. Each subtask is executed and judged by **three critics** (intent, quality, fidelity), each "
             "with its own Brain, and an aggregator merges their scores and points; below the acceptance score the "
             "subtask is retried with that feedback (up to 3 attempts).\n\nThe rule brains run **offline**. 'Add a "
             "hat' needs a generative tool: offline it is reported as unsupported, not faked. " + PROVIDERS,
    ),
    "unrolled_rounds.json": dict(
        prompt={
            "img": load(),
            "b": brain(),
            "p1": role("EditAgentsPlanner", image=["img", 0], instruction="brighter and more contrast", mode="instructed",
                       mood="", caption="", brain=["b", 0]),
            "e1": role("EditAgentsExecutor", image=["img", 0], plan=["p1", 0], brain=["b", 0], trace=["p1", 1]),
            "c1": role("EditAgentsCritic", original=["img", 0], plan=["e1", 1], mode="discriminator (CCA)",
                       brain=["b", 0], trace=["e1", 2]),
            "a1": role("EditAgentsAggregator", feedback_1=["c1", 0], mode="merge critiques (IMAGAgent)",
                       accept_score=7.0, brain=["b", 0], trace=["c1", 1]),
            "p2": role("EditAgentsPlanner", image=["img", 0], instruction="brighter and more contrast", mode="instructed",
                       mood="", caption="", brain=["b", 0], feedback=["a1", 0], trace=["a1", 3]),
            "e2": role("EditAgentsExecutor", image=["img", 0], plan=["p2", 0], brain=["b", 0], feedback=["a1", 0],
                       trace=["p2", 1]),
            "c2": role("EditAgentsCritic", original=["img", 0], plan=["e2", 1], mode="discriminator (CCA)",
                       brain=["b", 0], trace=["e2", 2]),
            "save": {"class_type": "SaveImage", "inputs": {"images": ["e2", 0], "filename_prefix": "edit_agents/unrolled"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["c2", 1]}},
        },
        titles={"img": "Input Image", "b": "Brain", "p1": "Planner (round 1)", "e1": "Executor (round 1)",
                "c1": "Critic (round 1)", "a1": "Aggregator (round 1)", "p2": "Planner (round 2)",
                "e2": "Executor (round 2)", "c2": "Critic (round 2)"},
        note="## Rounds by hand\n\nPlanner -> Executor -> Critic -> Aggregator, twice: round 2's Planner and Executor "
             "read round 1's **FEEDBACK**, and the **TRACE** is passed along so the Trace View shows both rounds. "
             "Each role node shows its plan or feedback on the node after it runs.\n\nRuns **offline** with the rule "
             "brain. " + PROVIDERS,
    ),
    "graph_tool.json": dict(
        prompt={
            "img": load(),
            "tin": {"class_type": "EditAgentsToolInput", "inputs": {"number_1": 2.0, "number_2": 1.0, "text": ""}},
            "blur": {"class_type": "ImageBlur", "inputs": {"image": ["tin", 0], "blur_radius": 4, "sigma": ["tin", 1]}},
            "tout": {"class_type": "EditAgentsToolOutput", "inputs": {
                "image": ["blur", 0], "name": "soft_focus", "description": "Soft focus: blur the whole photo gently.",
                "parameters": json.dumps({"sigma": {"from": "number_1", "type": "float", "min": 0.3, "max": 8.0,
                                                    "default": 2.0, "description": "blur strength"}})}},
            "tools": {"class_type": "EditAgentsToolbox", "inputs": {**TOOLBOX, "graph_tool_1": ["tout", 0]}},
            "b": brain(),
            "plan": role("EditAgentsPlanner", image=["img", 0], instruction="soft focus, then warmer", mode="instructed",
                         mood="", caption="", brain=["b", 0], toolbox=["tools", 0]),
            "run": role("EditAgentsExecutor", image=["img", 0], plan=["plan", 0], brain=["b", 0], toolbox=["tools", 0],
                        trace=["plan", 1]),
            "save": {"class_type": "SaveImage", "inputs": {"images": ["run", 0], "filename_prefix": "edit_agents/graph_tool"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["run", 2]}},
        },
        titles={"img": "Input Image", "tin": "Tool Input", "blur": "the tool's body: any nodes", "tout": "Tool Output",
                "plan": "Planner", "run": "Executor"},
        note="## A sub-graph as an agent tool\n\n**Tool Input -> (any nodes) -> Tool Output** turns part of the canvas "
             "into a tool with a name, a description and typed parameters (here `soft_focus`, its `sigma` wired to "
             "`number_1`). Connected to the Toolbox, the agent can call it like a built-in tool: the Planner picks it "
             "from the instruction, and when the Executor calls it the sub-graph is cloned with the agent's image and "
             "parameter values and runs as ordinary ComfyUI nodes.\n\nRuns **offline** with the rule brain. " + PROVIDERS,
    ),
    "edit_with_checkpoint.json": dict(
        prompt={
            "img": load(),
            "ckpt": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5-pruned-emaonly-fp16.safetensors"}},
            "tools": {"class_type": "EditAgentsToolbox", "inputs": {**TOOLBOX, "category": "classic + localise + generative",
                                                                  "model": ["ckpt", 0], "clip": ["ckpt", 1],
                                                                  "vae": ["ckpt", 2]}},
            "b": brain(),
            "plan": role("EditAgentsPlanner", image=["img", 0], instruction="restyle it as a watercolor painting, then warmer",
                         mode="instructed", mood="", caption="", brain=["b", 0], toolbox=["tools", 0]),
            "run": role("EditAgentsExecutor", image=["img", 0], plan=["plan", 0], brain=["b", 0], toolbox=["tools", 0],
                        trace=["plan", 1]),
            "save": {"class_type": "SaveImage", "inputs": {"images": ["run", 0], "filename_prefix": "edit_agents/checkpoint"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["run", 2]}},
        },
        titles={"img": "Input Image", "ckpt": "Your checkpoint", "plan": "Planner", "run": "Executor"},
        note="## Agent tools on your own checkpoint\n\nConnect any checkpoint's **MODEL, CLIP and VAE** to the Toolbox "
             "and the agent gains `comfy_img2img`, `comfy_inpaint` and `comfy_instruct_pix2pix`: diffusion edits that "
             "sample through ComfyUI's own sampler and model management (loaded once, offloaded like any model).\n\n"
             "**Needs** a Stable Diffusion checkpoint in `models/checkpoints/` (pick it in *Your checkpoint*). The "
             "rule brain plans offline; " + PROVIDERS,
    ),
    "photoagent.json": dict(
        prompt={
            "img": load(),
            "vlm": ollama(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": {**TOOLBOX, "category": "classic + localise + generative"}},
            "reward": {"class_type": "EditAgentsReward", "inputs": {"preservation": 1.5, "mood": "", "preset": "custom"}},
            "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
                "image": ["img", 0], "simulations": 20, "depth": 3, "exploration": 1.0, "branching": 6, "top_k": 2,
                "max_steps": 3, "patience": 1, "preview_side": 384, "time_budget_s": 120.0, "seed": 0, "mood": "",
                "toolbox": ["tools", 0], "reward": ["reward", 0], "perceiver_brain": ["vlm", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["mcts", 0], "filename_prefix": "edit_agents/photoagent"}},
            "steps": {"class_type": "PreviewImage", "inputs": {"images": ["mcts", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}},
        },
        titles={"img": "Input Image", "vlm": "Brain: VLM perceiver", "mcts": "MCTS Planner (PhotoAgent)",
                "steps": "Each kept step"},
        note="## PhotoAgent with a VLM perceiver\n\nA vision-language model looks at the photo and proposes K edits "
             "each step (autonomous, or toward the **mood** you type on the planner and the Reward), seeing what was "
             "already tried; **MCTS** explores sequences of them on a small copy and keeps the best at full size only "
             "if the **reward ensemble** says it is better.\n\n**Needs**: a vision model behind the Brain (set for "
             "Ollama's `qwen2.5vl:7b` at its default URL; any OpenAI-compatible VLM works). The Reward is on its "
             "**custom** preset: the fitted offline statistics plus the paper's learned components. A CLIP folder in "
             "`models/clip-hf/` and an aesthetic head in `models/aesthetic/` add those (skipped with a note when "
             "missing); generative tools need their models in `models/diffusers/`.",
    ),
    "building_blocks.json": dict(
        prompt={
            "img": load(),
            "defect": {"class_type": "EditAgentsApplyTools", "inputs": {
                "image": ["img", 0],
                "chain": json.dumps([{"tool": "contrast", "params": {"amount": -0.5}}])}},
            "look": role("EditAgentsPerceiver", image=["defect", 0], k=1, mood=""),
            "run": role("EditAgentsExecutor", image=["defect", 0], plan=["look", 0], trace=["look", 1]),
            "enhance": {"class_type": "EditAgentsPhotoAgent", "inputs": {
                "image": ["defect", 0], "max_steps": 3, "candidates": 8, "top_k": 2, "patience": 1, "min_gain": 0.01,
                "preview_side": 384}},
            "degraded": {"class_type": "PreviewImage", "inputs": {"images": ["defect", 0]}},
            "proposed": {"class_type": "PreviewImage", "inputs": {"images": ["run", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["enhance", 0],
                                                           "filename_prefix": "edit_agents/building_blocks"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["run", 2]}},
            "enhance_trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["enhance", 2]}},
        },
        titles={"img": "Input Image", "defect": "Apply Tools: make a defect", "look": "Perceiver",
                "run": "Executor: the proposal as it is", "enhance": "PhotoAgent (enhance)",
                "degraded": "The photo with the defect", "proposed": "After the Perceiver's proposal",
                "trace": "Trace: Perceiver and Executor", "enhance_trace": "Trace: PhotoAgent (enhance)"},
        note="## Building blocks\n\n**Apply Tools** runs a fixed chain of tools, written as JSON (no agent): here it "
             "halves the contrast, to make a flat photo to fix. The **Perceiver** looks at the result and proposes K "
             "edits (here 1), each with the measurement behind it; the **Executor** runs them, in order, as proposed. "
             "**PhotoAgent (enhance)** does the same job on its own, greedily: each step it tries the perceiver's "
             "proposals on a small copy, re-runs the best at full size and keeps one only if the reward says the "
             "photo got better.\n\nRuns **offline**: the rule perceiver and the classic tools. For the paper's "
             "search, see the MCTS Planner in `photoagent_offline.json`.",
    ),
    "photoagent_offline.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "reward": {"class_type": "EditAgentsReward", "inputs": {"preset": "offline"}},  # the fitted weights
            "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
                "image": ["img", 0], "toolbox": ["tools", 0], "reward": ["reward", 0], "simulations": 24, "depth": 3,
                "exploration": 1.0, "branching": 6, "top_k": 2, "max_steps": 4, "patience": 1, "preview_side": 256,
                "time_budget_s": 60.0, "seed": 0, "mood": "", "perceiver_calls": 4}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["mcts", 0], "filename_prefix": "edit_agents/photoagent"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}},
        },
        titles={"img": "Input Image", "mcts": "MCTS Planner (PhotoAgent)"},
        layout={"img": ([20, 320], [360, 132]), "tools": ([20, 720], [320, 250]), "reward": ([380, 560], [360, 596]),
                "mcts": ([720, 320], [330, 340]), "save": ([1100, 320], [360, 276]), "trace": ([1100, 760], [360, 200]),
                "note": ([20, 20], [420, 260])},
        note="## PhotoAgent offline: make it better\n\nAutonomous enhancement by **Monte-Carlo tree search** with **classic tools**, the **rule perceiver** and the **reward ensemble** (image statistics, BRISQUE, NIQE, content preservation). Needs **no model weights, no LLM and no network**.\n\nEach step the planner explores sequences of edits on a small copy (UCT selection, rollouts to depth 3, reward backpropagation), re-runs the most visited first edits at full size and keeps one only if it beats the current image; it stops when nothing helps. An already good photo is left nearly untouched.\n\nLoad your photo in **Input Image** (Load Photo: 8- or 16-bit, any colour profile), press Run; **Save Photo** writes the result in the photo's own bit depth and profile, with its EXIF. The **Trace View** shows every decision and the search trees; `/history` carries them as `edit_agents_trace`.\n\nWith models in `models/clip-hf/` and `models/aesthetic/`, the Reward adds the aesthetic score; connect a vision Brain to the planner's `perceiver_brain` for PhotoAgent's VLM perceiver.",
    ),
    "cca_ollama.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "gen1": ollama(temperature=0.3), "gen2": ollama(temperature=0.9), "judge": ollama(temperature=0.0),
            "loop": {"class_type": "EditAgentsCCALoop", "inputs": {
                "image": ["img", 0], "instruction": "make it warmer and brighter, with more contrast", "caption": "",
                "rounds": 3, "early_stop": True, "restart_from_original": True, "min_score": 7.0,
                "rerun_every_time": True, "toolbox": ["tools", 0], "planner_brain": ["gen1", 0],
                "generator_2_brain": ["gen2", 0], "discriminator_brain": ["judge", 0], "competitor_brain": ["judge", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/cca_llm"}},
            "rounds": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "gen1": "Brain: generator 1 (Ollama VLM)",
                "gen2": "Brain: generator 2 (same model, hotter sampling)", "judge": "Brain: discriminator and competitor",
                "loop": "CCA Loop", "rounds": "Each round's best"},
        note="## CCA with a vision-language model\n\nThe CCA workflow with every role on a VLM: two generators that "
             "plan and execute (the second samples hotter, so the two differ), a discriminator that captions the "
             "photo, writes Yes/No questions for the request and answers them on each result, and a competitor that "
             "keeps the best. The trace shows each call's tokens.\n\n" + NEEDS_OLLAMA,
    ),
    "imagagent_ollama.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "vlm": ollama(temperature=0.2),
            "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
                "image": ["img", 0], "instruction": "warmer and sharper, with a little more contrast",
                "max_attempts": 3, "accept_score": 7.0, "rerun_every_time": True, "toolbox": ["tools", 0],
                "planner_brain": ["vlm", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/imagagent_llm"}},
            "attempts": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "vlm": "Brain: every role (Ollama VLM)", "loop": "Closed Loop (IMAGAgent)",
                "attempts": "Every attempt"},
        note="## IMAGAgent with a vision-language model\n\nOne VLM plays every role (an unconnected role brain "
             "falls back to the planner's): it plans the subtasks, writes each tool chain, judges every attempt as "
             "the intent, quality and fidelity experts, and merges their critiques; an attempt below the acceptance "
             "score is retried with that feedback. Connect a Brain to a role's input to give it another model, as "
             "the paper mixes several.\n\n" + NEEDS_OLLAMA,
    ),
    "photoagent_kontext.json": dict(
        prompt={
            "img": load(), **kontext_loaders(),
            "vlm": ollama(temperature=0.2, unload=True),
            "tools": editor_toolbox(["unet", 0]),
            "reward": {"class_type": "EditAgentsReward", "inputs": {"preservation": 1.5, "mood": "", "preset": "paper",
                                                                   "vision_brain": ["vlm", 0]}},
            "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
                "image": ["img", 0], "simulations": 12, "depth": 2, "exploration": 1.0, "branching": 4, "top_k": 2,
                "max_steps": 3, "patience": 1, "preview_side": 384, "time_budget_s": 300.0, "seed": 0,
                "mood": "warm late-afternoon light", "toolbox": ["tools", 0], "reward": ["reward", 0],
                "perceiver_brain": ["vlm", 0], "perceiver_calls": 2}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["mcts", 0], "filename_prefix": "edit_agents/photoagent_kontext"}},
            "steps": {"class_type": "PreviewImage", "inputs": {"images": ["mcts", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}},
        },
        titles={"img": "Input Image", "unet": "Load Diffusion Model: FLUX.1 Kontext", "clip": "DualCLIPLoader (flux)",
                "vae": "Load VAE", "vlm": "Brain: VLM perceiver and rating", "tools": "Toolbox: classic + Kontext",
                "reward": "Reward: the paper's preset", "mcts": "MCTS Planner (PhotoAgent)", "steps": "Each kept step"},
        note="## PhotoAgent with FLUX.1 Kontext and the paper's reward\n\nThe paper's set-up: a VLM perceiver "
             "proposes edits toward the **mood** (typed once, on the planner: it reaches the Reward too), routing tone "
             "and colour to the classic tools and semantic edits to **Kontext** (`comfy_edit`, through ComfyUI's own "
             "ReferenceLatent, FluxGuidance and sampler). MCTS runs each Kontext edit once, on its small copy, and the "
             "winners again at full size. The Reward uses the **paper** preset: CLIP, the aesthetic predictor, "
             "ImageReward and the VLM's rating (what is missing is skipped with a note).\n\n" + NEEDS_KONTEXT
             + "A CLIP folder in `models/clip-hf/` and an aesthetic head in `models/aesthetic/` add those components. "
             + NEEDS_OLLAMA + " " + TAKE_TURNS,
    ),
    "imagagent_qwen_edit.json": dict(
        prompt={
            "img": load(), **qwen_edit_loaders(),
            "vlm": ollama(temperature=0.2, unload=True),
            "tools": editor_toolbox(["shift", 0]),
            "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
                "image": ["img", 0], "instruction": "put a small red scarf on the cat, then make the light warmer",
                "max_attempts": 3, "accept_score": 7.0, "rerun_every_time": True, "toolbox": ["tools", 0],
                "planner_brain": ["vlm", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/imagagent_qwen_edit"}},
            "attempts": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "unet": "Load Diffusion Model: Qwen-Image-Edit", "shift": "ModelSamplingAuraFlow",
                "clip": "Load CLIP (qwen_image)", "vae": "Load VAE", "vlm": "Brain: every role (Ollama VLM)",
                "tools": "Toolbox: classic + Qwen-Image-Edit", "loop": "Closed Loop (IMAGAgent)",
                "attempts": "Every attempt"},
        note="## IMAGAgent with Qwen-Image-Edit\n\nAs in the paper: the planner splits the request into subtasks, "
             "the orchestrator edits semantic ones with **Qwen-Image-Edit** (`comfy_edit`, through ComfyUI's own "
             "TextEncodeQwenImageEditPlus and sampler) and tone with the classic tools, and three experts judge each "
             "attempt; a subtask they judge not done is retried with their feedback.\n\n" + NEEDS_QWEN_EDIT
             + NEEDS_OLLAMA + " " + TAKE_TURNS,
    ),
    "cca_kontext.json": dict(
        prompt={
            "img": load(), **kontext_loaders(),
            "gen1": ollama(temperature=0.3, unload=True), "gen2": ollama(temperature=0.9, unload=True),
            "judge": ollama(temperature=0.0, unload=True),
            "tools": editor_toolbox(["unet", 0]),
            "loop": {"class_type": "EditAgentsCCALoop", "inputs": {
                "image": ["img", 0], "instruction": "give the cat a tiny wizard hat and make the photo warmer",
                "caption": "", "rounds": 3, "early_stop": True, "restart_from_original": True, "min_score": 7.0,
                "rerun_every_time": True, "toolbox": ["tools", 0], "planner_brain": ["gen1", 0],
                "generator_2_brain": ["gen2", 0], "discriminator_brain": ["judge", 0], "competitor_brain": ["judge", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/cca_kontext"}},
            "rounds": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 1]}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "unet": "Load Diffusion Model: FLUX.1 Kontext", "clip": "DualCLIPLoader (flux)",
                "vae": "Load VAE", "gen1": "Brain: generator 1 (Ollama VLM)",
                "gen2": "Brain: generator 2 (same model, hotter sampling)", "judge": "Brain: discriminator and competitor",
                "tools": "Toolbox: classic + Kontext", "loop": "CCA Loop", "rounds": "Each round's best"},
        note="## CCA with FLUX.1 Kontext\n\nTwo generators compete on your Kontext model: each plans the request, "
             "edits the semantic parts with **Kontext** (`comfy_edit`) and the tone with the classic tools; the "
             "discriminator asks and answers Yes/No questions on both results and the best is kept. Use "
             "`imagagent_qwen_edit.json`'s loaders instead to run it on Qwen-Image-Edit.\n\n" + NEEDS_KONTEXT
             + NEEDS_OLLAMA + " " + TAKE_TURNS,
    ),
    "imagagent_local.json": dict(
        prompt={
            "img": load(),
            "tools": {"class_type": "EditAgentsToolbox", "inputs": TOOLBOX},
            "vlm": local_vlm(),
            "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
                "image": ["img", 0], "instruction": "warmer and sharper", "max_attempts": 2, "accept_score": 7.0,
                "rerun_every_time": False, "toolbox": ["tools", 0], "planner_brain": ["vlm", 0]}},
            "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "edit_agents/imagagent_local"}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        },
        titles={"img": "Input Image", "vlm": "Brain: a local VLM (models/LLM/)", "loop": "Closed Loop (IMAGAgent)"},
        note="## IMAGAgent on a model in your ComfyUI\n\nThe closed loop with every role on a vision-language "
             "model that ComfyUI runs itself: no server, no key, no network.\n\n" + NEEDS_LOCAL,
    ),
}


def lay_out(ui: dict, keys: list[str], layout: dict) -> None:
    """Hand-placed positions and sizes (by graph key; "note" for the note) over the automatic columns."""
    ids = {key: i + 1 for i, key in enumerate(keys)}
    for node in ui["nodes"]:
        key = "note" if node["type"] == "MarkdownNote" else next(k for k, i in ids.items() if i == node["id"])
        if key in layout:
            node["pos"], node["size"] = layout[key]


def main() -> int:
    with LocalServer() as server:
        info = json.load(urllib.request.urlopen(server.url + "/object_info"))
    for name, spec in WORKFLOW_GRAPHS.items():
        ui = api_to_ui(saved_as_photos(spec["prompt"]), info, titles=spec["titles"], note=spec["note"])
        lay_out(ui, list(spec["prompt"]), spec.get("layout", {}))
        (WORKFLOWS / name).write_text(json.dumps(ui, indent=2) + "\n")
        print(f"wrote workflows/{name}: {len(ui['nodes'])} nodes, {len(ui['links'])} links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
