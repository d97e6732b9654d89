"""Bad input on the real server: each gives a clear error naming the problem and the fix (or is handled),
nothing is written half-way, and the server keeps serving."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed, PromptRejected
from llm_server import Reply

VALID_PLAN = {"subtasks": [{"goal": "make it brighter", "tool": "exposure"}]}


@pytest.fixture(scope="module")
def small(comfy_server, photos) -> str:
    Image.fromarray((photos["coffee"][::3, ::3] * 0.6 * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "small.png")
    return "small.png"


def planner(image: str, instruction: str, brain: dict | None = None) -> dict:
    prompt = {"img": {"class_type": "LoadImage", "inputs": {"image": image}},
              "plan": {"class_type": "EditAgentsPlanner", "inputs": {
                  "image": ["img", 0], "instruction": instruction, "mode": "instructed", "mood": "", "caption": "",
                  "rerun_every_time": True}},
              "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["plan", 1]}}}
    if brain:
        prompt["brain"] = brain
        prompt["plan"]["inputs"]["brain"] = ["brain", 0]
    return prompt


def apply(image: str, chain, **toolbox) -> dict:
    prompt = {"img": {"class_type": "LoadImage", "inputs": {"image": image}},
              "apply": {"class_type": "EditAgentsApplyTools", "inputs": {
                  "image": ["img", 0], "chain": chain if isinstance(chain, str) else json.dumps(chain)}},
              "save": {"class_type": "SaveImage", "inputs": {"images": ["apply", 0], "filename_prefix": "bad_input"}}}
    if toolbox:
        models = {k: "(first available)" for k in ("grounding_dino", "sam", "instruct_pix2pix", "inpaint")}
        prompt["tools"] = {"class_type": "EditAgentsToolbox", "inputs": {"category": "classic", "only": "", "exclude": "",
                                                                         **models, **toolbox}}
        prompt["apply"]["inputs"]["toolbox"] = ["tools", 0]
    return prompt


def llm_brain(url: str, **over) -> dict:
    return {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "custom", "model": "scripted", "base_url": url, "api_key_env": "", "temperature": 0.2,
        "max_tokens": 1024, "timeout": 5.0, "image_side": 256, "concurrency": 2, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0, **over}}


def fails_with(comfy, comfy_server, prompt: dict, *phrases: str) -> str:
    """Runs ``prompt``, expects a failure whose message has every phrase; checks nothing was saved."""
    saved_before = set(comfy_server.dirs()["output"].rglob("bad_input*"))
    with pytest.raises((ExecutionFailed, PromptRejected)) as err:
        comfy.call("run", prompt)
    message = err.value.readable() if isinstance(err.value, PromptRejected) else str(err.value)
    for phrase in phrases:
        assert phrase in message, message
    assert set(comfy_server.dirs()["output"].rglob("bad_input*")) == saved_before  # nothing written half-way
    return message


CASES = {
    "empty instruction": (lambda img: planner(img, "   "), ["needs an instruction", "e.g."]),
    "100 kB instruction": (lambda img: planner(img, "brighter " * 12_000), ["108,000 characters", "limit is 20,000"]),
    "toolbox with no tools": (lambda img: apply(img, [{"tool": "exposure"}], only="exposure", exclude="exposure"),
                              ["no tool is left", "allow at least one tool"]),
    "unknown tool": (lambda img: apply(img, [{"tool": "exposur", "params": {}}]), ["unknown tool 'exposur'", "closest: exposure"]),
    "tool not in the toolbox": (lambda img: apply(img, [{"tool": "crop_aspect"}], only="exposure, contrast"),
                                ["crop_aspect", "exposure"]),
    "wrong parameter type": (lambda img: apply(img, [{"tool": "exposure", "params": {"stops": "bright"}}]), ["stops"]),
    "NaN parameter": (lambda img: apply(img, '[{"tool": "exposure", "params": {"stops": NaN}}]'), ["stops", "finite"]),
    "chain that is not JSON": (lambda img: apply(img, "exposure(stops=1)"), ["JSON"]),
    "mask of the wrong size": (lambda img: apply(img, [{"tool": "crop", "params": {"box": [0, 0, 0.5, 0.5]}},
                                                       {"tool": "box_mask", "source": "step:0"},
                                                       {"tool": "edit_region", "params": {"mask": "step:1"}}]),
                               ["mask", "size"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_explained_and_nothing_is_written(comfy, comfy_server, small, case):
    build, phrases = CASES[case]
    fails_with(comfy, comfy_server, build(small), *phrases)


def test_the_server_keeps_serving_after_all_of_them(comfy, small):
    assert comfy.call("run", apply(small, [{"tool": "exposure", "params": {"stops": 9}}])).outputs  # clamped, not failed


def test_odd_but_valid_text_and_images_work(comfy, comfy_server, photos):
    rtl = "اجعلها أكثر إشراقًا — 更亮一点 — brighter please"
    d = comfy_server.dirs()["input"]
    base = (photos["chelsea"][::4, ::4] * 255).astype(np.uint8)
    Image.fromarray(base).convert("L").save(d / "gray.png")
    Image.fromarray(np.dstack([base, np.full(base.shape[:2], 128, np.uint8)])).save(d / "rgba.png")
    Image.fromarray((base[:, :, 0].astype(np.uint16) * 257)).save(d / "deep.png")  # 16-bit grayscale
    Image.fromarray(base[:1, :1]).save(d / "tiny.png")
    for name in ("gray.png", "rgba.png", "deep.png", "tiny.png"):
        result = comfy.call("run", planner(name, rtl))
        trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
        assert "exposure" in json.dumps(trace) or "brightness" in json.dumps(trace), name
        out = comfy.call("run", apply(name, [{"tool": "contrast", "params": {"amount": 0.3}}]))
        saved = [i for o in out.outputs.values() for i in o.get("images", [])]
        with Image.open(comfy_server.dirs()["output"] / saved[0]["subfolder"] / saved[0]["filename"]) as im:
            assert im.size == Image.open(d / name).size, name


def test_a_huge_image_is_refused_with_the_fix(comfy, comfy_server, small):
    # a 16000 x 16000 file: ComfyUI 0.3.75's Load Image refuses it itself (Pillow's decompression-bomb guard);
    # 0.33's loads it, and the agent node refuses it, naming the setting
    Image.new("RGB", (16000, 16000), (90, 90, 90)).save(comfy_server.dirs()["input"] / "huge.png")
    message = fails_with(comfy, comfy_server, apply("huge.png", [{"tool": "exposure"}]))
    assert "exceeds limit" in message or ("256 MP (16000 x 16000)" in message and "EDIT_AGENTS_MAX_MEGAPIXELS" in message), \
        message
    # the same size made on the canvas reaches the agent nodes, which refuse it before copying it around
    prompt = apply(small, [{"tool": "exposure"}])
    prompt["img"] = {"class_type": "EmptyImage", "inputs": {"width": 16000, "height": 16000, "batch_size": 1, "color": 0}}
    fails_with(comfy, comfy_server, prompt, "256 MP (16000 x 16000)", "EDIT_AGENTS_MAX_MEGAPIXELS")


def test_a_batch_into_a_one_image_node_is_explained(comfy, comfy_server, small):
    prompt = planner(small, "brighter")
    prompt["batch"] = {"class_type": "ImageBatch", "inputs": {"image1": ["img", 0], "image2": ["img", 0]}}
    prompt["plan"]["inputs"]["image"] = ["batch", 0]
    fails_with(comfy, comfy_server, prompt, "one image at a time", "batch of 2")


LLM_ANSWERS = {
    "not JSON": Reply("I think you should make it brighter."),
    "truncated JSON": Reply('{"subtasks": [{"goal": "make it brighter", "tool": "expo'),
    "JSON of the wrong shape": Reply({"steps": [{"tool": "exposure"}]}),
    "10 MB answer": Reply("x" * 10_000_000),
}


@pytest.mark.parametrize("case", list(LLM_ANSWERS))
def test_a_bad_llm_answer_is_repaired_by_a_reask(comfy, small, llm, case):
    llm.reset(LLM_ANSWERS[case], Reply(VALID_PLAN))
    result = comfy.call("run", planner(small, "brighter", llm_brain(llm.url)))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    step = next(s for s in trace["steps"] if s["role"] == "planner")
    assert step["outputs"]["subtasks"][0]["tool"] == "exposure" and len(llm.seen) == 2
    assert "rejected" in json.dumps(step["outputs"]["notes"])


@pytest.mark.parametrize("case", list(LLM_ANSWERS))
def test_a_bad_llm_answer_every_time_is_reported(comfy, comfy_server, small, llm, case):
    llm.reset(responder=lambda seen: LLM_ANSWERS[case])
    fails_with(comfy, comfy_server, planner(small, "brighter", llm_brain(llm.url)), "gave no valid planner answer in 3 tries")
    assert len(llm.seen) == 3


ENDPOINTS = {
    "HTML page": (Reply(raw="<html><body>Welcome to nginx!</body></html>"), ["did not answer like an OpenAI-compatible"]),
    "hangs": (Reply(VALID_PLAN, delay=8.0), ["no answer within 1 s", "check that the endpoint is running"]),
    "resets the connection": (Reply(reset=True), ["connection error", "check that the endpoint is running"]),
    "401": (Reply(status=401), ["refused the credentials (HTTP 401)"]),
    "403": (Reply(status=403), ["refused the credentials (HTTP 403)"]),
    "429": (Reply(status=429), ["failed 1 time(s), last: HTTP 429"]),
    "500": (Reply(status=500), ["failed 1 time(s), last: HTTP 500"]),
}


@pytest.mark.parametrize("case", list(ENDPOINTS))
def test_a_bad_endpoint_is_named_and_explained(comfy, comfy_server, small, llm, case):
    reply, phrases = ENDPOINTS[case]
    llm.reset(responder=lambda seen: reply)
    message = fails_with(comfy, comfy_server, planner(small, "brighter", llm_brain(llm.url, timeout=1.0)), *phrases)
    assert llm.url.rsplit("/v1", 1)[0] in message  # the URL is named


def test_a_workflow_from_an_older_version_still_runs(comfy, object_info, small):
    """An API prompt saved before the Reward's learned components and the Brain's allow_insecure_http existed
    (inputs missing), with an input a later version removed (extra): it validates and runs."""
    prompt = {"img": {"class_type": "LoadImage", "inputs": {"image": small}},
              "reward": {"class_type": "EditAgentsReward", "inputs": {
                  "exposure": 1.0, "clipping": 1.0, "contrast": 1.0, "colourfulness": 0.6, "colour_cast": 0.3,
                  "sharpness": 0.4, "noise": 0.6, "preservation": 1.5}},
              "brain": {"class_type": "EditAgentsBrain", "inputs": {k: v for k, v in llm_brain("").items() if k == "inputs"}["inputs"]
                        | {"provider": "rule (offline)", "old_removed_input": 3}},
              "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
                  "image": ["img", 0], "reward": ["reward", 0], "simulations": 4, "depth": 2, "exploration": 1.0,
                  "branching": 3, "top_k": 1, "max_steps": 1, "patience": 1, "preview_side": 64,
                  "time_budget_s": 30.0, "seed": 0, "perceiver_brain": ["brain", 0]}},
              "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}}}
    assert comfy.call("run", prompt).outputs


def test_a_corrupt_or_truncated_model_file_is_named(comfy, comfy_server, model_root, small):
    good = next((model_root / "sams").glob("*.pth"))
    bad = {"zz_truncated_sam.pth": good.read_bytes()[: good.stat().st_size // 3],
           "zz_corrupt_sam.pth": b"\x00not a checkpoint" * 100}  # "zz": never the first available for other tests
    try:
        for name, content in bad.items():
            (model_root / "sams" / name).write_bytes(content)
            prompt = apply(small, [{"tool": "segment_box", "params": {"box": [0.2, 0.2, 0.8, 0.8]}}], sam=name,
                           category="classic + localise")
            fails_with(comfy, comfy_server, prompt, name, "truncated or corrupt", "sam_vit_b_01ec64.pth")
    finally:
        for name in bad:
            (model_root / "sams" / name).unlink(missing_ok=True)
