"""The agent nodes on a real ComfyUI server: roles unrolled through FEEDBACK, both loops offline and
driven by the scripted OpenAI-compatible endpoint, interrupts, and clear errors."""
from __future__ import annotations

import json
import threading
import time
import urllib.request

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from helpers import mcts_prompt
from llm_server import Reply, overlapping
from scripted_loops import respond

RULE = {"class_type": "EditAgentsBrain", "inputs": {
    "provider": "rule (offline)", "model": "", "base_url": "", "api_key_env": "", "temperature": 0.2, "max_tokens": 1024,
    "timeout": 60.0, "image_side": 768, "concurrency": 4, "max_retries": 3, "structured_output": "json_schema",
    "rule_boldness": 1.0}}


def llm_brain(url: str, **kw) -> dict:
    node = json.loads(json.dumps(RULE))
    node["inputs"].update({"provider": "custom", "model": "scripted-vlm", "base_url": url, "max_retries": 1, **kw})
    return node


@pytest.fixture(scope="module")
def photo(comfy_server, photos):
    Image.fromarray((photos["coffee"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cup.png")
    return "cup.png"


@pytest.fixture(scope="module")
def dim_photo(comfy_server, photos):
    Image.fromarray((photos["coffee"][::2, ::2] * 0.4 * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "dim_cup.png")
    return "dim_cup.png"


def trace_of(result) -> dict:
    return next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)


def texts(result) -> list[str]:
    return [t for o in result.outputs.values() for t in o.get("text", [])]


def test_unrolled_rounds_chained_through_feedback(comfy, photo):
    def role(cls, **inputs):
        return {"class_type": cls, "inputs": {"rerun_every_time": False, **inputs}}
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": RULE,
        "p1": role("EditAgentsPlanner", image=["1", 0], instruction="brighter and more contrast", mode="instructed",
                   mood="", caption="a cup of coffee", brain=["b", 0]),
        "e1": role("EditAgentsExecutor", image=["1", 0], plan=["p1", 0], brain=["b", 0], trace=["p1", 1]),
        "c1": role("EditAgentsCritic", original=["1", 0], plan=["e1", 1], mode="discriminator (CCA)", trace=["e1", 2]),
        "a1": role("EditAgentsAggregator", feedback_1=["c1", 0], mode="merge critiques (IMAGAgent)", accept_score=7.0,
                   trace=["c1", 1]),
        "p2": role("EditAgentsPlanner", image=["1", 0], instruction="brighter and more contrast", mode="instructed",
                   mood="", caption="", feedback=["a1", 0], trace=["a1", 3]),
        "e2": role("EditAgentsExecutor", image=["1", 0], plan=["p2", 0], feedback=["a1", 0], trace=["p2", 1]),
        "c2": role("EditAgentsCritic", original=["1", 0], plan=["e2", 1], mode="expert: intent", trace=["e2", 2]),
        "s": {"class_type": "SaveImage", "inputs": {"images": ["e2", 0], "filename_prefix": "unrolled"}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["c2", 1]}},
    }
    result = comfy.call("run", prompt)
    trace = trace_of(result)
    roles_in_order = [s["role"] for s in trace["steps"]]
    assert roles_in_order.count("planner") == 2 and roles_in_order.count("executor") >= 4
    assert {"questions", "answers", "aggregator", "expert"} <= set(roles_in_order)
    assert max(s["round"] or 0 for s in trace["steps"]) == 1  # the second round knows it is round 1
    assert any("score" in t for t in texts(result))  # on-node previews of plan and feedback


def test_cca_loop_node_offline_stops_early(comfy, photo):
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": "make it brighter, more contrast and crop to square", "caption": "",
            "rounds": 5, "early_stop": True, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": False}},
        "s": {"class_type": "SaveImage", "inputs": {"images": ["l", 0], "filename_prefix": "cca"}},
        "r": {"class_type": "PreviewImage", "inputs": {"images": ["l", 1]}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    summary = trace_of(result)["summary"]
    assert summary["stopped_early"] and summary["rounds"] < 5
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    assert saved["filename"].startswith("cca")
    assert any(e["type"] == "progress" and e["data"]["node"] == "l" for e in events)


def closed_loop_offline(photo: str, instruction: str) -> dict:
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "l": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": instruction, "max_attempts": 3, "accept_score": 7.0,
            "rerun_every_time": False}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }


def test_cca_loop_node_says_what_was_not_done_and_does_not_stop_early(comfy, photo):
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": "warmer, then add a hat", "caption": "", "rounds": 2, "early_stop": True,
            "restart_from_original": True, "min_score": 7.0, "rerun_every_time": False}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }
    result = comfy.call("run", prompt)
    summary = trace_of(result)["summary"]
    assert summary["rounds"] == 2 and not summary["stopped_early"] and summary["unsupported"]
    text = " ".join(t for o in result.outputs.values() for t in o.get("text", []))
    assert "not done: " in text and "hat" in text


def test_closed_loop_node_offline(comfy, photo):
    prompt = closed_loop_offline(photo, "warmer and sharper, then add a hat")
    prompt["s"] = {"class_type": "PreviewImage", "inputs": {"images": ["l", 1]}}
    result = comfy.call("run", prompt)
    summary = trace_of(result)["summary"]
    assert summary["accepted"] == [True, True] and summary["unsupported"]  # honest about the hat
    assert summary["unjudged"] == []


def test_closed_loop_node_reports_a_subtask_no_expert_could_judge(comfy, photo):
    result = comfy.call("run", closed_loop_offline(photo, "give it a cinematic colour grade"))
    summary = trace_of(result)["summary"]
    assert summary["accepted"] == [False] and summary["unjudged"] == [0] and summary["attempts"] == 1
    text = " ".join(t for o in result.outputs.values() for t in o.get("text", []))
    assert "not judged" in text


def test_loops_follow_the_scripted_endpoint(comfy, photo, llm):
    llm.reset(responder=respond, latency=0.2)
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": llm_brain(llm.url),
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": "warmer and punchier", "caption": "coffee", "rounds": 3, "early_stop": True,
            "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True, "planner_brain": ["b", 0]}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }
    result = comfy.call("run", prompt)
    summary = trace_of(result)["summary"]
    assert summary["rounds"] == 1 and summary["best"]["agent"] == "generator-2"  # the scripted competitor's pick
    planners = [s for s in llm.seen if s.role == "planner"]
    assert len(planners) == 3 and overlapping(planners[:2])  # the third: the same plan twice, so generator 2 re-plans
    assert {(s.body.get("temperature"), s.body.get("seed")) for s in planners} == {(0.2, None), (0.7, 2)}


def test_interrupt_mid_loop_then_the_next_prompt_succeeds(comfy, comfy_server, photo, llm):
    llm.reset(responder=respond, latency=1.0)
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": llm_brain(llm.url),
        "l": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": "warmer", "max_attempts": 3, "accept_score": 7.0,
            "rerun_every_time": True, "planner_brain": ["b", 0]}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }
    outcome = {}

    def run():
        try:
            comfy.call("run", prompt)
            outcome["done"] = True
        except RuntimeError as err:
            outcome["error"] = str(err)
    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 30
    while not llm.seen and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    urllib.request.urlopen(urllib.request.Request(comfy_server.url + "/interrupt", data=b"", method="POST"), timeout=10)
    worker.join(timeout=60)
    assert "interrupted" in outcome.get("error", ""), outcome
    assert time.monotonic() - started < 5  # within about one LLM call
    calls_made = len(llm.seen)
    assert calls_made < 6  # plan + execute + 3 experts + aggregator would be 6 for even one attempt
    offline = {k: v for k, v in prompt.items() if k != "b"}
    offline["l"]["inputs"].pop("planner_brain")
    assert comfy.call("run", offline).outputs  # the server is healthy


def test_clear_errors_from_agent_nodes(comfy, comfy_server, photo, monkeypatch):
    secret_env = "EDIT_AGENTS_NODE_TEST_KEY"
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": llm_brain("https://203.0.113.9/v1", api_key_env=secret_env),
        "p": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["1", 0], "instruction": "brighter", "mode": "instructed", "mood": "", "caption": "",
            "brain": ["b", 0], "rerun_every_time": True}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["p", 1]}},
    }
    with pytest.raises(ExecutionFailed, match=f"environment variable {secret_env}, which is not set"):
        comfy.call("run", prompt)
    prompt["p"]["inputs"]["instruction"] = "   "
    prompt["p"]["inputs"].pop("brain")
    with pytest.raises(ExecutionFailed, match="needs an instruction"):
        comfy.call("run", prompt)
    prompt["p"]["inputs"]["instruction"] = "brighter"
    prompt["2"] = {"class_type": "RepeatImageBatch", "inputs": {"image": ["1", 0], "amount": 2}}
    prompt["p"]["inputs"]["image"] = ["2", 0]
    with pytest.raises(ExecutionFailed, match="one image at a time but got a batch of 2"):
        comfy.call("run", prompt)


def test_perceiver_then_executor(comfy, photo):
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "p": {"class_type": "EditAgentsPerceiver", "inputs": {"image": ["1", 0], "k": 3, "mood": "warm and cosy",
                                                              "rerun_every_time": False}},
        "e": {"class_type": "EditAgentsExecutor", "inputs": {"image": ["1", 0], "plan": ["p", 0], "trace": ["p", 1],
                                                             "rerun_every_time": False}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["e", 2]}},
    }
    result = comfy.call("run", prompt)
    steps = trace_of(result)["steps"]
    assert steps[0]["role"] == "perceiver" and steps[0]["outputs"]["actions"][0]["tool"] == "temperature_tint"


def test_loop_rounds_run_as_expanded_clones_of_the_loop_node(comfy, photo):
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": "make it brighter and sharper", "caption": "", "rounds": 3,
            "early_stop": False, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True}},
        "r": {"class_type": "PreviewImage", "inputs": {"images": ["l", 1]}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
        "c": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": "warmer, sharper and more contrast", "max_attempts": 2,
            "accept_score": 7.0, "rerun_every_time": True}},
        "t2": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["c", 2]}},
    }
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    ran = [str(e["data"]["node"]) for e in events if e["type"] == "executing" and e["data"].get("node")]
    cca_rounds = [n for n in ran if "round" in n]
    subtasks = [n for n in ran if "subtask" in n]
    assert len(cca_rounds) == 2, ran  # rounds 2 and 3 ran as expanded clones of the loop node
    assert len(subtasks) == 2, ran  # subtasks 2 and 3 likewise
    traces = [o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o]
    cca = next(t for t in traces if t["title"].startswith("CCA"))
    closed = next(t for t in traces if t["title"].startswith("IMAGAgent"))
    assert cca["summary"]["rounds"] == 3 and len({s["round"] for s in cca["steps"] if s["role"] == "planner"}) == 3
    assert closed["summary"]["subtasks"] == 3 and len(closed["summary"]["accepted"]) == 3
    previews = [o for o in result.outputs.values() if "images" in o and any(i["type"] == "temp" for i in o["images"])]
    assert previews and len(previews[0]["images"]) == 3  # the best image after each of the 3 rounds


def test_trace_steps_stream_over_the_websocket(comfy, photo):
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "c": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["1", 0], "instruction": "warmer and sharper", "max_attempts": 2, "accept_score": 7.0,
            "rerun_every_time": True}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["c", 2]}},
    }
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    streamed = [e["data"] for e in events if e["type"] == "edit_agents.trace_step"]
    final = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert [s["step"]["index"] for s in streamed] == list(range(len(final["steps"])))  # every step, once, in order
    assert streamed[0]["step"]["role"] == "planner" and streamed[0]["node"] == "c"


def test_mcts_planner_node(comfy, dim_photo):
    prompt = mcts_prompt(dim_photo)
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    trace = trace_of(result)
    tree = next(s for s in trace["steps"] if s["role"] == "planner")["outputs"]["tree"]
    assert tree["visits"] == 8 and tree["children"]
    assert trace["summary"]["simulations"] >= 8
    # the search streams its steps while it runs (before the node's 'executed'), tagged with the prompt
    kinds = [(e["type"], e["data"].get("node")) for e in events]
    streamed = [e["data"] for e in events if e["type"] == "edit_agents.trace_step"]
    assert [d["step"]["index"] for d in streamed] == list(range(len(trace["steps"])))
    assert {d["prompt_id"] for d in streamed} == {result.prompt_id} and {d["node"] for d in streamed} == {"mcts"}
    last_progress = max(i for i, k in enumerate(kinds) if k == ("progress", "mcts"))
    assert kinds.index(("edit_agents.trace_step", "mcts")) < last_progress  # interleaved with the progress bar
    assert all(d["step"]["thumb"].startswith("data:image/jpeg") for d in streamed if d["step"]["role"] == "reward")


def reward_node(**weights) -> dict:
    inputs = {"exposure": 1.0, "clipping": 1.0, "contrast": 1.0, "colourfulness": 0.6, "colour_cast": 0.3,
              "sharpness": 0.4, "noise": 0.6, "preservation": 1.5, "brisque": 0.5, "niqe": 0.5, "aesthetic": 2.0,
              "clip": 1.0, "image_reward": 2.0, "vlm": 0.8, "mood": "warm and cosy", "clip_model": "tiny-clip",
              "aesthetic_model": "tiny-aesthetic.pth", "image_reward_model": "(first available)"}
    inputs.update(weights)
    return {"class_type": "EditAgentsReward", "inputs": inputs}


def test_mcts_with_the_reward_ensemble_and_a_vlm_perceiver(comfy, photo, llm):
    first = {"scene": "food", "actions": [{"tool": "temperature_tint", "params": {"temperature": 0.25}},
                                          {"tool": "contrast", "params": {"amount": 0.2}}]}
    later = {"scene": "food", "actions": [{"tool": "vibrance", "params": {"amount": 0.2}}]}
    llm.reset(responder=lambda seen: Reply(first if len(llm.seen) == 1 else later))
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": llm_brain(llm.url),
        "r": reward_node(),
        "m": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
            "image": ["1", 0], "simulations": 6, "depth": 2, "exploration": 1.0, "branching": 4, "top_k": 1,
            "max_steps": 2, "patience": 2, "preview_side": 96, "time_budget_s": 30.0, "seed": 0, "mood": "warm and cosy",
            "reward": ["r", 0], "perceiver_brain": ["b", 0], "perceiver_calls": 1}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["m", 2]}},
    }
    trace = trace_of(comfy.call("run", prompt))
    scored = next(s for s in trace["steps"] if s["role"] == "reward")
    report = scored["outputs"]["reward"]
    # learned components ran on the tiny CLIP and aesthetic head; ImageReward and the VLM rating were skipped with notes
    assert {"aesthetic", "clip", "brisque", "niqe"} <= set(report["components"])
    assert set(report["skipped"]) == {"image_reward", "vlm"}
    assert "aesthetic" in scored["inputs"]["ensemble"]
    planners = [s for s in trace["steps"] if s["role"] == "planner"]
    assert [p["tool"] for p in planners[0]["outputs"]["proposals"]] == ["temperature_tint", "contrast"]
    perceiver_calls = [s for s in llm.seen if s.role == "perceiver"]
    assert len(perceiver_calls) == len(planners)  # perceiver_calls=1: one VLM call per step, the rest reuse it
    assert "warm and cosy" in perceiver_calls[0].body["messages"][0]["content"]
