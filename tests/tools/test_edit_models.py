"""Instruction editing on the user's own edit model (issue 30): a tiny FLUX-architecture model built from ComfyUI's
own classes (tests/support/build_tiny_flux.py), loaded by ComfyUI's Load Diffusion Model, its VAE by Load VAE, and driven
by the comfy_edit tool (Kontext's nodes: ReferenceLatent, FluxGuidance, ConditioningZeroOut) on the real server:
as a tool, in a loop and in PhotoAgent's search. Random weights paint noise; what is checked is the plumbing:
the family found, the size kept, the mask kept, one model call per search edit, errors that say what to connect."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed

FAST = {"steps": 2, "work_side": 64}  # a 0.5 B model on CPU: two steps at 64 px


def edit_model_graph(image: str, **toolbox) -> dict:
    """Load Diffusion Model (the tiny FLUX), a CLIP-L (from the tiny SD1.5 checkpoint: the tiny FLUX reads 768-wide
    text) and Load VAE, into the Toolbox, as a user wires Kontext."""
    return {
        "img": {"class_type": "LoadImage", "inputs": {"image": image}},
        "unet": {"class_type": "UNETLoader", "inputs": {"unet_name": "tiny-flux-kontext.safetensors",
                                                        "weight_dtype": "default"}},
        "ckpt": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "tiny-sd15.safetensors"}},
        "vae": {"class_type": "VAELoader", "inputs": {"vae_name": "tiny-flux-vae.safetensors"}},
        "tools": {"class_type": "EditAgentsToolbox", "inputs": {
            "category": "classic + localise + generative", "only": "", "exclude": "",
            "grounding_dino": "(first available)", "sam": "(first available)", "instruct_pix2pix": "(first available)",
            "inpaint": "(first available)", "model": ["unet", 0], "clip": ["ckpt", 1], "vae": ["vae", 0], **toolbox}},
    }


@pytest.fixture(scope="module")
def cat(comfy_server, photos):
    Image.fromarray((photos["chelsea"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cat4.png")
    return "cat4.png"


def saved(result, comfy_server) -> np.ndarray:
    out = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    return np.asarray(Image.open(comfy_server.dirs()["output"] / out["subfolder"] / out["filename"]))


def trace_of(result) -> dict:
    return next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)


def test_the_kontext_tool_edits_on_the_users_flux_model_through_comfyuis_loaders(comfy, comfy_server, cat, photos):
    prompt = edit_model_graph(cat)
    prompt.update({
        "whole": {"class_type": "EditAgentsApplyTools", "inputs": {
            "image": ["img", 0], "toolbox": ["tools", 0],
            "chain": json.dumps([{"tool": "comfy_edit", "params": {"prompt": "make it sunny", **FAST}}])}},
        "save": {"class_type": "SaveImage", "inputs": {"images": ["whole", 0], "filename_prefix": "kontext"}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["whole", 2]}},
        "box": {"class_type": "EditAgentsApplyTools", "inputs": {
            "image": ["img", 0], "toolbox": ["tools", 0],
            "chain": json.dumps([{"tool": "box_mask", "params": {"box": [0.0, 0.0, 0.5, 0.5]}},
                                 {"tool": "comfy_edit_region", "params": {"prompt": "add a red hat", "mask": "step:0",
                                                                          **FAST}}])}},
        "save_box": {"class_type": "SaveImage", "inputs": {"images": ["box", 0], "filename_prefix": "kontext_box"}},
    })
    result = comfy.call("run", prompt)
    images = {i["filename"].split("_0")[0]: np.asarray(Image.open(comfy_server.dirs()["output"] / i["subfolder"] / i["filename"]))
              for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output"}
    original = np.asarray(Image.open(comfy_server.dirs()["input"] / cat))
    assert images["kontext"].shape == original.shape  # edited at 64 px, resized back to the photo's size
    assert np.abs(images["kontext"].astype(int) - original).mean() > 1  # the random model changed it
    step = next(s for s in trace_of(result)["steps"] if s["inputs"].get("tool") == "comfy_edit")
    assert any("kontext edit 'make it sunny' at 64x" in str(n) for n in step["outputs"].get("notes", []))
    boxed = images["kontext_box"]
    h, w = original.shape[:2]
    assert np.array_equal(boxed[h // 2 + 2:, :], original[h // 2 + 2:, :])  # outside the mask: exactly the photo
    assert not np.array_equal(boxed[: h // 2 - 2, : w // 2 - 2], original[: h // 2 - 2, : w // 2 - 2])


def test_a_model_the_edit_tool_cannot_drive_is_named_with_what_to_connect(comfy, cat):
    prompt = edit_model_graph(cat, only="comfy_edit")
    prompt["tools"]["inputs"]["model"] = ["ckpt", 0]  # an SD 1.5 checkpoint's MODEL
    prompt["tools"]["inputs"]["vae"] = ["ckpt", 2]
    prompt["run"] = {"class_type": "EditAgentsApplyTools", "inputs": {
        "image": ["img", 0], "toolbox": ["tools", 0], "chain": json.dumps([{"tool": "comfy_edit", "params": {
            "prompt": "add a hat"}}])}}
    prompt["out"] = {"class_type": "PreviewImage", "inputs": {"images": ["run", 0]}}
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    text = str(err.value)
    assert "instruction-edit model" in text and "BaseModel" in text and "Load Diffusion Model" in text


def test_a_vae_that_gives_nan_is_an_error_not_a_black_photo(comfy, cat, model_root):
    """A VAE whose latent scale is 0 (a damaged or mismatched file) turns every pixel to NaN, which clipped would
    read as a black photo: the tool says what is wrong instead."""
    import safetensors.torch
    import torch

    weights = safetensors.torch.load_file(str(model_root / "vae" / "tiny-flux-vae.safetensors"))
    weights["vae_scale"] = torch.zeros(())
    safetensors.torch.save_file(weights, str(model_root / "vae" / "broken-vae.safetensors"))
    prompt = edit_model_graph(cat, only="comfy_edit")
    prompt["vae"]["inputs"]["vae_name"] = "broken-vae.safetensors"
    prompt["run"] = {"class_type": "EditAgentsApplyTools", "inputs": {
        "image": ["img", 0], "toolbox": ["tools", 0], "chain": json.dumps([{"tool": "comfy_edit", "params": {
            "prompt": "add a hat", **FAST}}])}}
    prompt["out"] = {"class_type": "PreviewImage", "inputs": {"images": ["run", 0]}}
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    assert "NaN or infinity" in str(err.value) and "VAE" in str(err.value)


def scripted_edit_brain(llm) -> dict:
    return {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "custom", "model": "scripted-vlm", "base_url": llm.url, "api_key_env": "", "temperature": 0.0,
        "max_tokens": 512, "timeout": 60.0, "image_side": 64, "concurrency": 1, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0}}


def test_the_closed_loop_plans_an_edit_with_the_kontext_tool(comfy, comfy_server, cat, llm):
    from llm_server import Reply

    def responder(seen):
        if seen.role == "planner":
            return Reply({"subtasks": [{"goal": "add a red hat to the cat", "tool": "comfy_edit"}]})
        if seen.role == "executor":
            return Reply({"steps": [{"tool": "comfy_edit", "params": {"prompt": "add a red hat to the cat", **FAST}}]})
        if seen.role == "expert":
            return Reply({"score": 8, "positive": "a hat", "negative": "", "direction": "keep"})
        return Reply({"positive": "a hat", "negative": ""})
    llm.reset(responder=responder)
    prompt = edit_model_graph(cat)
    prompt.update({
        "b": scripted_edit_brain(llm),
        "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["img", 0], "instruction": "add a red hat to the cat", "max_attempts": 1, "accept_score": 7.0,
            "rerun_every_time": True, "toolbox": ["tools", 0], "planner_brain": ["b", 0]}},
        "save": {"class_type": "SaveImage", "inputs": {"images": ["loop", 0], "filename_prefix": "kontext_loop"}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
    })
    result = comfy.call("run", prompt)
    summary = trace_of(result)["summary"]
    assert summary["accepted"] == [True] and summary["tool_calls"] == 1
    planner = next(s for s in llm.seen if s.role == "planner")
    assert "comfy_edit" in planner.system_text()  # the planner was offered the edit tool from its spec
    assert saved(result, comfy_server).shape == np.asarray(Image.open(comfy_server.dirs()["input"] / cat)).shape


def test_the_search_runs_the_kontext_tool_once_per_edit_on_the_search_copy(comfy, comfy_server, cat, llm):
    """PhotoAgent's search with a VLM perceiver proposing Kontext edits: one model call per search edit (on the
    search copy, not on its crops too); the region variant, which needs a mask, is not offered as an action."""
    from llm_server import Reply

    llm.reset(responder=lambda seen: Reply({"scene": "a cat", "actions": [
        {"tool": "comfy_edit", "params": {"prompt": "make it sunny", **FAST}, "rationale": "a semantic edit"},
        {"tool": "comfy_edit", "params": {"prompt": "make it snowy", **FAST}, "rationale": "another"},
        {"tool": "exposure", "params": {"stops": 0.3}, "rationale": "tone goes to the classic tools"}]}))
    prompt = edit_model_graph(cat)
    prompt["tools"]["inputs"]["only"] = "comfy_edit, comfy_edit_region, exposure"
    prompt.update({
        "b": scripted_edit_brain(llm),
        "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
            "image": ["img", 0], "simulations": 4, "depth": 1, "exploration": 1.0, "branching": 3, "top_k": 1,
            "max_steps": 1, "patience": 1, "preview_side": 64, "time_budget_s": 120.0, "seed": 0, "mood": "",
            "toolbox": ["tools", 0], "perceiver_brain": ["b", 0], "perceiver_calls": 1}},
        "save": {"class_type": "SaveImage", "inputs": {"images": ["mcts", 0], "filename_prefix": "kontext_search"}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}},
    })
    result = comfy.call("run", prompt)
    trace = trace_of(result)
    tree = next(s["outputs"]["tree"] for s in trace["steps"] if "tree" in s.get("outputs", {}))
    edits = {c["action"] for c in tree.get("children", [])}
    assert any(a.startswith("comfy_edit(prompt=make it sunny") for a in edits)
    schema = str(next(s for s in llm.seen if s.role == "perceiver").body["response_format"])
    assert "'comfy_edit'" in schema and "'comfy_edit_region'" not in schema
    summary = trace["summary"]
    assert summary["tool_calls"] == len([a for a in edits if a != "stop()"])  # one call per search edit
    assert saved(result, comfy_server).shape == np.asarray(Image.open(comfy_server.dirs()["input"] / cat)).shape


def test_the_edit_tool_reports_progress_and_stops_when_cancelled(comfy, comfy_server, cat):
    """ComfyUI's own sampler runs the edit: its progress reaches the websocket, and Cancel (POST /interrupt) stops
    it between steps; the server runs the next prompt."""
    import threading
    import urllib.request

    prompt = edit_model_graph(cat)
    prompt.update({
        "run": {"class_type": "EditAgentsApplyTools", "inputs": {
            "image": ["img", 0], "toolbox": ["tools", 0],
            "chain": json.dumps([{"tool": "comfy_edit", "params": {"prompt": "make it sunny", "steps": 100,
                                                                   "work_side": 64}}])}},
        "out": {"class_type": "PreviewImage", "inputs": {"images": ["run", 0]}}})
    progress, outcome, sampling = [], {}, threading.Event()

    def on_event(event):
        if event["type"] == "progress":
            progress.append((event["data"]["value"], event["data"]["max"]))
            sampling.set()

    def run():
        try:
            comfy.call("run", prompt, on_event=on_event)
            outcome["done"] = True
        except RuntimeError as err:
            outcome["error"] = str(err)
    worker = threading.Thread(target=run)
    worker.start()
    assert sampling.wait(timeout=300), "no progress from the sampler"
    urllib.request.urlopen(urllib.request.Request(comfy_server.url + "/interrupt", data=b"", method="POST"), timeout=10)
    worker.join(timeout=300)
    assert "interrupted" in outcome.get("error", ""), outcome
    assert progress and all(total == 100 for _, total in progress) and max(v for v, _ in progress) < 100
    prompt["run"]["inputs"]["chain"] = json.dumps([{"tool": "comfy_edit", "params": {"prompt": "sunny", **FAST}}])
    assert comfy.call("run", prompt).outputs  # the server is fine
