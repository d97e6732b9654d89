"""Faults on the real server: the endpoint dies mid-loop, the user interrupts, and afterwards the server
keeps serving."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from helpers import mcts_prompt
from llm_server import Reply


def llm_brain(url: str) -> dict:
    return {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "custom", "model": "flaky", "base_url": url, "api_key_env": "", "temperature": 0.2,
        "max_tokens": 1024, "timeout": 30.0, "image_side": 256, "concurrency": 2, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0}}


def dies_after(answers: int, good: Reply):
    """The endpoint answers ``answers`` times, then every call fails (503, as a dying server or its proxy does)."""
    count = {"n": 0}

    def responder(seen):
        count["n"] += 1
        return good if count["n"] <= answers else Reply(status=503, body={"error": {"message": "upstream died"}})
    return responder


@pytest.fixture()
def photo(comfy_server, photos) -> str:
    noisy = photos["coffee"] * 0.4 + np.random.default_rng(0).normal(0, 0.05, photos["coffee"].shape)
    Image.fromarray((np.clip(noisy, 0, 1) * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "faults.png")
    return "faults.png"


def cca_prompt(photo: str, url: str, keep_best: bool) -> dict:
    return {
        "img": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "judge": llm_brain(url),
        "cca": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["img", 0], "instruction": "make it brighter and warmer", "caption": "", "rounds": 3,
            "early_stop": True, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True,
            "competitor_brain": ["judge", 0], "keep_best_on_brain_error": keep_best}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["cca", 2]}},
        "save": {"class_type": "PreviewImage", "inputs": {"images": ["cca", 0]}},
    }


def closed_loop_prompt(photo: str, url: str, instruction: str, llm_role: str, **settings) -> dict:
    """The Closed Loop with one role (e.g. its aggregator) on the scripted endpoint, the others on the rule brain."""
    return {
        "img": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "llm": llm_brain(url),
        "loop": {"class_type": "EditAgentsClosedLoop", "inputs": {
            "image": ["img", 0], "instruction": instruction, "accept_score": 7.0, "rerun_every_time": True,
            llm_role: ["llm", 0], **settings}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
    }


RUNNERS = ["in-process", "executor nodes"]


def runner(prompt: dict, loop: str, mode: str) -> dict:
    """The prompt as is (the loop runs in process), or with a graph tool in a Toolbox (its execute steps then
    run as Executor nodes): both runners must decide the same."""
    if mode == "executor nodes":
        from graph_tools import graph_tool_prompt
        tool = graph_tool_prompt("unused.png", [])
        prompt.update({k: tool[k] for k in ("10", "11", "12", "13", "2")})
        prompt[loop]["inputs"]["toolbox"] = ["2", 0]
    return prompt


def summary_of(result) -> dict:
    return next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)


@pytest.mark.parametrize("mode", RUNNERS)
def test_endpoint_dies_mid_cca_loop_keep_best_or_fail(comfy, photo, llm, mode):
    # the competitor (an LLM) answers round 0 and never stops early, then its endpoint dies
    llm.reset(responder=dies_after(1, Reply({"best": 0, "stop": False, "reason": "keep going"})))
    result = comfy.call("run", runner(cca_prompt(photo, llm.url, keep_best=True), "cca", mode))
    trace = summary_of(result)
    assert trace["summary"]["mode"] == mode
    assert trace["summary"]["rounds"] == 1 and "round 1 failed" in trace["summary"]["error"]
    assert "upstream" in trace["summary"]["error"] or "503" in trace["summary"]["error"]
    stop = [s for s in trace["steps"] if s["action"].startswith("stop: a brain failed in round 1")]
    assert len(stop) == 1 and llm.url.split("/v1")[0] in stop[0]["outputs"]["error"]  # names the endpoint
    assert any(i["type"] == "temp" for o in result.outputs.values() for i in o.get("images", []))  # the best image

    llm.reset(responder=dies_after(1, Reply({"best": 0, "stop": False, "reason": "keep going"})))
    with pytest.raises(ExecutionFailed) as err:  # the default: fail cleanly
        comfy.call("run", runner(cca_prompt(photo, llm.url, keep_best=False), "cca", mode))
    assert "failed 1 time(s)" in str(err.value) and "check that the endpoint is running" in str(err.value)
    # the error reads cleanly: its class, no module path (ComfyUI names a custom node's module by its file path)
    assert err.value.data["exception_type"] == "BrainError" and "custom_nodes" not in str(err.value)
    assert "failed: BrainError: http://" in str(err.value)


@pytest.mark.parametrize("mode", RUNNERS)
def test_executor_endpoint_dies_mid_cca_loop_keeps_the_best_in_both_runners(comfy, photo, llm, mode):
    """The executors' endpoint answers round 0 (2 generators x 2 subtasks) and dies: with keep_best on, the
    Executor node hands the error to the Round End (executor nodes) as the in-process round does."""
    count = {"n": 0}

    def responder(seen):
        count["n"] += 1
        if count["n"] > 4:
            return Reply(status=503, body={"error": {"message": "upstream died"}})
        warm = "warm" in seen.user_text().split("\n", 1)[0]
        return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.3, "tint": 0.0}} if warm
                                else {"tool": "brightness", "params": {"amount": 0.15}}]})
    llm.reset(responder=responder)
    prompt = cca_prompt(photo, llm.url, keep_best=True)
    prompt["cca"]["inputs"].update(early_stop=False, executor_brain=["judge", 0])
    del prompt["cca"]["inputs"]["competitor_brain"]
    trace = summary_of(comfy.call("run", runner(prompt, "cca", mode)))
    assert trace["summary"]["mode"] == mode and trace["summary"]["rounds"] == 1
    assert trace["summary"]["error"].startswith("round 1 failed") and "HTTP 503" in trace["summary"]["error"]


@pytest.mark.parametrize("mode", RUNNERS)
def test_endpoint_dies_mid_closed_loop_keeps_the_subtasks_done(comfy, photo, llm, mode):
    llm.reset(responder=dies_after(1, Reply({"positive": "good", "negative": ""})))  # the aggregator merges text only
    prompt = closed_loop_prompt(photo, llm.url, "brighter, more contrast and warmer", "aggregator_brain",
                                max_attempts=2, keep_best_on_brain_error=True)
    trace = summary_of(comfy.call("run", runner(prompt, "loop", mode)))
    assert trace["summary"]["mode"] == mode
    assert trace["summary"]["subtasks"] == 3 and trace["summary"]["accepted"] == [True]
    assert trace["summary"]["error"].startswith("subtask 1 failed")


def run_in_background(comfy, prompt: dict) -> tuple[threading.Thread, dict]:
    """Run ``prompt`` in a thread; ``outcome`` gets its result or error and the websocket events so far."""
    outcome: dict = {"events": []}

    def go():
        try:
            outcome["result"] = comfy.call("run", prompt, on_event=outcome["events"].append)
        except Exception as err:  # noqa: BLE001 - handed to the test to assert on
            outcome["error"] = err
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, outcome


def wait_for(condition, what: str, limit_s: float = 120.0, outcome: dict | None = None) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if outcome is not None and "error" in outcome:
            raise AssertionError(f"the prompt failed while waiting for {what}: {outcome['error']}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def interrupt(comfy_server) -> None:
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(comfy_server.url + "/interrupt", data=b"", method="POST"))


def assert_interrupted_then_serving(comfy, thread, outcome, photo) -> None:
    thread.join(timeout=120)
    assert not thread.is_alive(), "the prompt did not stop after the interrupt"
    assert "interrupted" in str(outcome.get("error")), outcome
    # the next prompt runs normally
    quick = {"img": {"class_type": "LoadImage", "inputs": {"image": photo}},
             "apply": {"class_type": "EditAgentsApplyTools", "inputs": {
                 "image": ["img", 0], "chain": '[{"tool": "exposure", "params": {"stops": 0.3}}]'}},
             "out": {"class_type": "PreviewImage", "inputs": {"images": ["apply", 0]}}}
    assert comfy.call("run", quick).outputs


def traced(outcome, node: str) -> list[dict]:
    return [e["data"]["step"] for e in list(outcome["events"])
            if e["type"] == "edit_agents.trace_step" and e["data"]["node"] == node]


def test_interrupt_during_an_llm_call_abandons_it_and_the_next_prompt_runs(comfy, comfy_server, photo, llm):
    llm.reset(responder=lambda seen: Reply({"subtasks": [{"goal": "brighter", "tool": "exposure"}]}, delay=60.0))
    prompt = {
        "img": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "brain": llm_brain(llm.url),
        "plan": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["img", 0], "instruction": "brighter", "mode": "instructed", "mood": "", "caption": "",
            "rerun_every_time": True, "brain": ["brain", 0]}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["plan", 1]}},
    }
    thread, outcome = run_in_background(comfy, prompt)
    wait_for(lambda: len(llm.seen) == 1, "the planner's request to reach the endpoint", outcome=outcome)
    interrupt(comfy_server)
    assert_interrupted_then_serving(comfy, thread, outcome, photo)
    assert llm.seen[0].end == 0.0  # the run ended while the endpoint was still "thinking": the call was abandoned


def test_interrupt_during_mcts_stops_the_search(comfy, comfy_server, photo):
    prompt = mcts_prompt(photo, simulations=2000, depth=3, branching=6, max_steps=4, preview_side=256, time_budget_s=600.0)
    thread, outcome = run_in_background(comfy, prompt)
    wait_for(lambda: traced(outcome, "mcts"), "the search to start", outcome=outcome)  # "score the input" comes first
    interrupt(comfy_server)
    assert_interrupted_then_serving(comfy, thread, outcome, photo)
    assert not [s for s in traced(outcome, "mcts") if s["role"] == "planner"]  # the first search never finished


def test_interrupt_during_a_tool_chain_stops_after_the_current_tool(comfy, comfy_server, photos):
    big = np.tile((photos["astronaut"] * 255).astype(np.uint8), (5, 5, 1))  # 2560 x 2560
    Image.fromarray(big).save(comfy_server.dirs()["input"] / "big.png")
    chain = [{"tool": tool, "params": {}} for tool in ("tone_curve", "highlights_shadows", "vibrance", "white_balance")] * 10
    import json
    prompt = {"img": {"class_type": "LoadImage", "inputs": {"image": "big.png"}},
              "apply": {"class_type": "EditAgentsApplyTools", "inputs": {"image": ["img", 0], "chain": json.dumps(chain)}},
              "out": {"class_type": "PreviewImage", "inputs": {"images": ["apply", 0]}}}
    thread, outcome = run_in_background(comfy, prompt)
    wait_for(lambda: traced(outcome, "apply"), "the first tool to finish", outcome=outcome)
    interrupt(comfy_server)
    assert_interrupted_then_serving(comfy, thread, outcome, "big.png")
    assert len(traced(outcome, "apply")) < len(chain) // 2  # stopped long before the end of the 40-step chain


@pytest.mark.parametrize("mode", RUNNERS)
def test_an_executor_that_never_answers_validly_fails_one_attempt_in_both_runners(comfy, photo, llm, mode):
    """The executor's endpoint sends a chain whose second step reads itself three times (every re-ask; which
    step it meant cannot be known, so it is not mended): that attempt fails, the loop goes on, and the next
    attempt, told why, succeeds. In process and as Executor nodes."""
    count = {"n": 0}

    def responder(seen):
        count["n"] += 1
        source = "step:1" if count["n"] <= 3 else "step:0"
        # an exposure, not a flat brightness offset: lifting the blacks of this dark photo by 0.25 is a fade
        return Reply({"steps": [{"tool": "exposure", "params": {"stops": 0.25}},
                                {"tool": "exposure", "params": {"stops": 0.25}, "source": source}]})
    llm.reset(responder=responder)
    prompt = closed_loop_prompt(photo, llm.url, "brighter", "executor_brain", max_attempts=3)
    trace = summary_of(comfy.call("run", runner(prompt, "loop", mode)))
    assert trace["summary"]["mode"] == mode and trace["summary"]["attempts"] == 2
    assert trace["summary"]["accepted"] == [True] and trace["summary"]["failed"] == []
    failed = [s for s in trace["steps"] if s["action"].startswith("subtask 0 attempt 0 failed: InvalidAnswerError")]
    # the schema says which steps step 1 may read (position by position), and the re-asks quoted it
    assert len(failed) == 1 and "at steps/1/source: 'step:1' is not one of ['input', 'step:0']" in failed[0]["outputs"]["error"]
    assert "the last attempt failed" in llm.seen[3].body["messages"][1]["content"][0]["text"]  # told why
