"""Integration: the pack on a real ComfyUI server, over HTTP and the websocket."""
from __future__ import annotations

import io
import json
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from edit_agents.cli.workflow import set_image, ui_to_api
from helpers import WORKFLOWS, load_json

PACK_NODE_IDS = {"EditAgentsBrain", "EditAgentsToolbox", "EditAgentsPlanner", "EditAgentsExecutor", "EditAgentsCritic", "EditAgentsAggregator", "EditAgentsPerceiver", "EditAgentsCCALoop", "EditAgentsClosedLoop", "EditAgentsApplyTools", "EditAgentsReward", "EditAgentsPhotoAgent", "EditAgentsTraceView"}
NEEDS_NO_WEIGHTS = {"photoagent_offline.json", "cca.json", "imagagent.json", "unrolled_rounds.json", "graph_tool.json",
                    "edit_with_checkpoint.json"}  # the tiny test checkpoint stands in for the user's


def use_tiny_checkpoint(prompt: dict) -> None:
    """Workflows that need the user's checkpoint get the tiny test one instead."""
    for node in prompt.values():
        if node["class_type"] == "CheckpointLoaderSimple":
            node["inputs"]["ckpt_name"] = "tiny-sd15.safetensors"


def test_every_pack_node_is_registered_with_help(object_info):
    ours = {k: v for k, v in object_info.items() if k.startswith("EditAgents")}
    assert PACK_NODE_IDS <= set(ours), f"missing: {PACK_NODE_IDS - set(ours)}"
    assert all(k.startswith("EditAgents") for k in ours)
    for node_id, info in ours.items():
        assert info["description"], f"{node_id} has no description"
        assert info["category"].startswith("Edit Agents")
        for section in ("required", "optional"):
            for name, spec in info["input"].get(section, {}).items():
                opts = spec[1] if len(spec) > 1 else {}
                assert opts.get("tooltip"), f"{node_id}.{name} has no tooltip"
        for name, tip in zip(info["output_name"], info["output_tooltips"]):
            assert tip, f"{node_id} output {name} has no tooltip"


def test_internal_nodes_are_kept_out_of_search_and_menus(object_info):
    internal = {"EditAgentsCCARoundEnd", "EditAgentsClosedLoopStep"}
    for node_id, info in object_info.items():
        if node_id.startswith("EditAgents"):
            hidden = bool(info.get("dev_only") or info.get("deprecated"))  # what the frontend filters on
            assert hidden == (node_id in internal), node_id


def test_workflows_are_listed_as_templates_with_thumbnails(comfy, comfy_server):
    import urllib.request

    templates = comfy.get("/api/workflow_templates")
    listed = {name for names in templates.values() for name in names}
    shipped = {p.stem for p in WORKFLOWS.glob("*.json")}
    assert shipped and shipped <= listed, f"not listed: {shipped - listed}"
    module = next(m for m, names in templates.items() if shipped <= set(names))
    for name in sorted(shipped):  # the template browser asks for <name>.jpg next to the workflow
        with urllib.request.urlopen(f"{comfy_server.url}/api/workflow_templates/{module}/{name}.jpg") as response:
            assert response.headers["Content-Type"] == "image/jpeg", name
            thumb = Image.open(io.BytesIO(response.read()))
        assert thumb.size == (640, 480), name


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.json")), ids=lambda p: p.name)
def test_each_workflow_converts_and_validates(path, comfy, object_info, comfy_server):
    prompt = ui_to_api(load_json(path), object_info)
    assert any(n["class_type"].startswith("EditAgents") for n in prompt.values())
    photo = comfy_server.dirs()["input"] / "validate.png"
    Image.new("RGB", (32, 24), (120, 80, 60)).save(photo)
    set_image(prompt, "validate.png")
    use_tiny_checkpoint(prompt)
    # validation only: an invalid input makes /prompt answer 400 before anything runs. ComfyUI queues a prompt
    # when any output is valid, so every pack node with a bounded integer gets one out of range (a workflow with
    # independent branches, as building_blocks.json, has one in each)
    broken = json.loads(json.dumps(prompt))
    names = set()
    for n in broken.values():
        if n["class_type"].startswith("EditAgents"):
            name = next((name for name, spec in object_info[n["class_type"]]["input"]["required"].items()
                         if spec[0] == "INT" and spec[1].get("min", -1) >= 0 and name in n["inputs"]), None)
            if name is not None:
                n["inputs"][name] = -3
                names.add(name)
    assert names
    # POST /prompt as it is: a workflow with a branch of ComfyUI's nodes only (building_blocks.json previews the
    # photo Apply Tools made) is queued for that branch, with the broken nodes in node_errors; else it is a 400
    request = urllib.request.Request(comfy_server.url + "/prompt", data=json.dumps({"prompt": broken}).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as r:
            body = json.load(r)
        assert path.name == "building_blocks.json", f"{path.name}: queued with inputs out of range"
    except urllib.error.HTTPError as err:
        body = json.load(err)
    reported = {e.get("extra_info", {}).get("input_name") for n in body.get("node_errors", {}).values()
                for e in n.get("errors", [])}
    assert reported & names, body
    if path.name in NEEDS_NO_WEIGHTS:
        result = comfy.call("run", prompt)
        assert result.outputs, "no outputs in /history"


def test_offline_workflow_fixes_a_dim_photo_and_leaves_a_good_one_alone(comfy, object_info, comfy_server, photos,
                                                                          artifacts):
    from skimage.metrics import structural_similarity

    prompt = ui_to_api(load_json(WORKFLOWS / "photoagent_offline.json"), object_info)
    clean = (photos["chelsea"] * 255).astype(np.uint8)
    dim = (photos["chelsea"] * 0.5 * 255).astype(np.uint8)  # under-exposed by one stop
    outputs = {}
    for name, src in (("dim_chelsea.png", dim), ("chelsea.png", clean)):
        Image.fromarray(src).save(comfy_server.dirs()["input"] / name)
        set_image(prompt, name)
        events = []
        result = comfy.call("run", prompt, on_event=events.append)
        assert {"execution_start", "executing", "progress"} <= {e["type"] for e in events}
        trace_out = [o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o]
        assert len(trace_out) == 1
        saved = [img for o in result.outputs.values() for img in o.get("images", []) if img["type"] == "output"]
        assert len(saved) == 1
        out = np.asarray(Image.open(comfy_server.dirs()["output"] / saved[0]["subfolder"] / saved[0]["filename"]))
        assert out.shape == src.shape
        outputs[name] = (trace_out[0]["summary"], out)

    summary, fixed = outputs["dim_chelsea.png"]
    assert summary["score_after"] > summary["score_before"] + 0.02 and summary["steps"] >= 1

    def ssim(a):
        return structural_similarity(a, clean, channel_axis=2)

    assert ssim(fixed) > ssim(dim) + 0.05, "the fix must bring the photo closer to the clean original"
    summary, untouched = outputs["chelsea.png"]
    assert summary["steps"] == 0 and np.abs(untouched.astype(int) - clean).max() <= 1, "a good photo is left alone"
    Image.fromarray(np.concatenate([dim, fixed, clean], axis=1)).save(artifacts / "offline_before_after.png")


def test_execution_error_names_the_node_and_server_keeps_serving(comfy, object_info, comfy_server):
    prompt = ui_to_api(load_json(WORKFLOWS / "photoagent_offline.json"), object_info)
    Image.new("RGB", (40, 30), (90, 90, 90)).save(comfy_server.dirs()["input"] / "gray.png")
    set_image(prompt, "gray.png")
    toolbox = next(k for k, n in prompt.items() if n["class_type"] == "EditAgentsToolbox")
    prompt[toolbox]["inputs"]["only"] = "exposur"
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    assert err.value.data["node_id"] == toolbox
    assert "unknown tool 'exposur'" in str(err.value) and "closest: exposure" in str(err.value)
    prompt[toolbox]["inputs"]["only"] = "exposure, contrast"
    assert comfy.call("run", prompt).outputs


def _apply_prompt(image_name: str, chain: list, category: str = "classic + localise + generative", **models) -> dict:
    choice = {"grounding_dino": "tiny-grounding-dino", "sam": "tiny_sam.pth",
              "instruct_pix2pix": "tiny-instruct-pix2pix", "inpaint": "tiny-sd-inpaint", **models}
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": image_name}},
        "2": {"class_type": "EditAgentsToolbox", "inputs": {"category": category, "only": "", "exclude": "", **choice}},
        "3": {"class_type": "EditAgentsApplyTools", "inputs": {"image": ["1", 0], "chain": json.dumps(chain), "toolbox": ["2", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "apply"}},
        "5": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["3", 2]}},
    }


def test_toolbox_lists_model_files_from_the_model_folders(object_info):
    inputs = object_info["EditAgentsToolbox"]["input"]["required"]
    options = {name: spec[1]["options"] for name, spec in inputs.items() if spec[0] == "COMBO"}
    assert "tiny-grounding-dino" in options["grounding_dino"] and "tiny_sam.pth" in options["sam"]
    assert {"tiny-instruct-pix2pix", "tiny-sd-inpaint", "tiny-sdxl-inpaint"} <= set(options["inpaint"])


def test_model_tools_run_in_comfyui_and_load_once(comfy, comfy_server, photos):
    Image.fromarray((photos["chelsea"] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cat.png")
    chain = [{"tool": "ground", "params": {"text": "the cat", "box_threshold": 0.3}},
             {"tool": "inpaint", "params": {"prompt": "a dog", "mask": "step:0", "steps": 2, "work_side": 64}},
             {"tool": "instruct_pix2pix", "params": {"prompt": "winter", "steps": 2, "work_side": 64}, "source": "step:1"},
             {"tool": "instruct_pix2pix", "params": {"prompt": "snow", "steps": 2, "work_side": 64}, "source": "step:2"},
             {"tool": "ground", "params": {"text": "the cat", "box_threshold": 0.3}, "source": "step:3"}]
    result = comfy.call("run", _apply_prompt("cat.png", chain))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    loads = trace["summary"]["model_loads"]
    assert len(loads) == 4 and set(loads.values()) == {1}  # GroundingDINO, SAM, inpaint, ip2p: each loaded once
    assert [s["inputs"]["tool"] for s in trace["steps"]] == [c["tool"] for c in chain]
    saved = next(img for o in result.outputs.values() for img in o.get("images", []) if img["type"] == "output")
    out = np.asarray(Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]))
    assert out.shape == (300, 451, 3)


def test_sam_safetensors_loads_through_comfyuis_reader(comfy, comfy_server, photos):
    Image.fromarray((photos["coffee"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cup.png")
    chain = [{"tool": "segment_box", "params": {"box": [0.2, 0.2, 0.8, 0.8]}},
             {"tool": "edit_region", "params": {"mask": "step:0", "effect": "desaturate", "amount": 1.0}}]
    result = comfy.call("run", _apply_prompt("cup.png", chain, sam="tiny_sam.safetensors"))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert any("tiny_sam.safetensors" in key for key in trace["summary"]["model_loads"])


def test_apply_tools_rejects_bad_chains_clearly(comfy, comfy_server):
    Image.new("RGB", (40, 30), (90, 90, 90)).save(comfy_server.dirs()["input"] / "g.png")
    for chain, needle in (("not json", "the chain is not valid"),
                          ([{"tool": "exposure"}, {"tool": "contrast", "source": "step:5"}], "an earlier step"),
                          ([{"tool": "ground", "params": {"text": "x"}}], "not allowed|unknown tool 'ground'")):
        prompt = _apply_prompt("g.png", [], category="classic")
        prompt["3"]["inputs"]["chain"] = chain if isinstance(chain, str) else json.dumps(chain)
        with pytest.raises(ExecutionFailed) as err:
            comfy.call("run", prompt)
        import re
        assert re.search(needle, str(err.value)), str(err.value)


def _native_prompt(image_name: str, chain: list, ckpt: str = "tiny-sd15.safetensors") -> dict:
    prompt = _apply_prompt(image_name, chain)
    prompt["6"] = {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": ckpt}}
    prompt["2"]["inputs"].update({"model": ["6", 0], "clip": ["6", 1], "vae": ["6", 2]})
    return prompt


def test_native_tools_run_on_the_users_checkpoint_and_load_it_once(comfy, comfy_server, photos):
    img = (photos["coffee"][::4, ::4] * 255).astype(np.uint8)  # 100 x 150
    Image.fromarray(img).save(comfy_server.dirs()["input"] / "small.png")
    chain = [{"tool": "comfy_img2img", "params": {"prompt": "a cup", "steps": 2, "denoise": 0.6}},
             {"tool": "box_mask", "params": {"box": [0.3, 0.3, 0.7, 0.7]}},
             {"tool": "comfy_inpaint", "params": {"prompt": "a spoon", "mask": "step:1", "steps": 2}, "source": "step:0"},
             {"tool": "comfy_img2img", "params": {"prompt": "a mug", "steps": 2, "denoise": 0.3,
                                                  # from ComfyUI's own lists, not in the pack's old hand-kept one
                                                  "sampler": "dpmpp_2m_sde", "scheduler": "beta"}, "source": "step:2"}]
    before = comfy_server.log_path.read_text().count("Requested to load BaseModel")
    result = comfy.call("run", _native_prompt("small.png", chain))
    loads = comfy_server.log_path.read_text().count("Requested to load BaseModel") - before
    assert loads == 1, f"the checkpoint's UNet was loaded {loads} times for 3 sampler calls"
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert [s["inputs"]["tool"] for s in trace["steps"]] == [c["tool"] for c in chain]
    saved = next(img for o in result.outputs.values() for img in o.get("images", []) if img["type"] == "output")
    out = np.asarray(Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]))
    assert out.shape == img.shape and np.abs(out.astype(float) - img).mean() > 1


def test_native_instruct_pix2pix_and_missing_inputs(comfy, comfy_server, photos):
    Image.fromarray((photos["coffee"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "s2.png")
    chain = [{"tool": "comfy_instruct_pix2pix", "params": {"prompt": "make it winter", "steps": 2}}]
    result = comfy.call("run", _native_prompt("s2.png", chain, ckpt="tiny-sd15-ip2p.safetensors"))
    assert any(img["type"] == "output" for o in result.outputs.values() for img in o.get("images", []))
    prompt = _native_prompt("s2.png", chain)
    del prompt["2"]["inputs"]["vae"]
    with pytest.raises(ExecutionFailed, match="connect MODEL, CLIP and VAE together"):
        comfy.call("run", prompt)


def test_checkpoint_workflow_restyles_with_the_users_model_when_an_llm_plans(comfy, object_info, comfy_server, photos,
                                                                            llm):
    from llm_server import Reply

    # the offline rule brain does not write diffusion prompts (it reports a restyle as unsupported),
    # so an OpenAI-compatible brain plans here: the scripted loopback endpoint
    def answer(seen):
        if seen.role == "planner":
            return Reply({"subtasks": [{"goal": "restyle as a watercolor painting", "tool": "comfy_img2img"},
                                       {"goal": "warmer", "tool": "temperature_tint"}]})
        if "comfy_img2img" in json.dumps(seen.body.get("response_format", {})):
            return Reply({"steps": [{"tool": "comfy_img2img",
                                     "params": {"prompt": "a watercolor painting of a cat", "steps": 2, "denoise": 0.5}}]})
        return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.2}}]})
    llm.reset(responder=answer)
    prompt = ui_to_api(load_json(WORKFLOWS / "edit_with_checkpoint.json"), object_info)
    Image.fromarray((photos["chelsea"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cat.png")
    set_image(prompt, "cat.png")
    use_tiny_checkpoint(prompt)
    for node in prompt.values():
        if node["class_type"] == "EditAgentsBrain":
            node["inputs"].update(provider="custom", model="scripted-vlm", base_url=llm.url)
    result = comfy.call("run", prompt)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    executed = [s["outputs"]["steps"][0]["tool"] for s in trace["steps"] if s["role"] == "executor"
                and s["outputs"].get("steps")]
    assert executed == ["comfy_img2img", "temperature_tint"], executed


def test_photoagent_workflow_with_a_vlm_perceiver_on_the_scripted_endpoint(comfy, object_info, comfy_server, photos,
                                                                           llm):
    from llm_server import Reply

    llm.reset(responder=lambda seen: Reply({"scene": "pet portrait", "actions": [
        {"tool": "contrast", "params": {"amount": 0.25}, "rationale": "flat"},
        {"tool": "vibrance", "params": {"amount": 0.3}, "rationale": "dull fur"}]}))
    prompt = ui_to_api(load_json(WORKFLOWS / "photoagent.json"), object_info)
    Image.fromarray((photos["chelsea"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cat2.png")
    set_image(prompt, "cat2.png")
    for node in prompt.values():
        if node["class_type"] == "EditAgentsBrain":
            node["inputs"].update(provider="custom", model="scripted-vlm", base_url=llm.url)
        if node["class_type"] == "EditAgentsMCTSPlanner":
            node["inputs"].update(simulations=6, max_steps=2)
    result = comfy.call("run", prompt)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    planners = [s for s in trace["steps"] if s["role"] == "planner"]
    vlm_calls = len([s for s in llm.seen if s.role == "perceiver"])
    assert planners and len(planners) <= vlm_calls <= 4 * len(planners)  # perceiver_calls (4) per step at most
    assert {p["tool"] for p in planners[0]["outputs"]["proposals"]} == {"contrast", "vibrance"}
    report = next(s for s in trace["steps"] if s["role"] == "reward")["outputs"]["reward"]
    assert "aesthetic" in report["components"]  # the tiny CLIP and head in the test model folders were found


@pytest.mark.parametrize("name", ["cca.json", "photoagent_offline.json", "graph_tool.json"])
def test_workflows_saved_before_the_socket_types_were_prefixed_still_run(name, comfy, object_info, comfy_server):
    old = load_json(WORKFLOWS.parent / "tests" / "data" / "workflows_v0" / name)
    assert any(link[5] in ("BRAIN", "TOOLBOX", "REWARD") for link in old["links"])  # the old names
    prompt = ui_to_api(old, object_info)
    Image.new("RGB", (48, 36), (90, 70, 50)).save(comfy_server.dirs()["input"] / "old.png")
    set_image(prompt, "old.png")
    assert comfy.call("run", prompt).outputs
