"""A sub-graph of core nodes made into a tool and called by an agent node with the parameters it chose."""
from __future__ import annotations


import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from graph_tools import PARAMS, cca_with_graph_tool, closed_loop_with_graph_tool, graph_tool_prompt

@pytest.fixture(scope="module")
def cup(comfy_server, photos):
    Image.fromarray((photos["coffee"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cup2.png")
    return "cup2.png"


def test_graph_tool_runs_as_expanded_nodes_with_the_agents_parameters(comfy, comfy_server, cup):
    chain = [{"tool": "exposure", "params": {"stops": 0.3}},
             {"tool": "scale_and_blur", "params": {"scale": 0.5, "sigma": 3.0}, "source": "step:0"},
             {"tool": "contrast", "params": {"amount": 0.2}, "source": "step:1"}]
    events = []
    result = comfy.call("run", graph_tool_prompt(cup, chain), on_event=events.append)
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    out = Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"])
    assert out.size == (150, 100)  # 300 x 200 scaled by the agent's 0.5
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    steps = trace["steps"]
    assert [s["inputs"]["tool"] for s in steps] == ["exposure", "scale_and_blur", "contrast"]
    assert steps[1]["inputs"]["params"] == {"scale": 0.5, "sigma": 3.0}
    expanded = steps[1]["outputs"]["expanded_nodes"]
    assert any(e.endswith("step1.11") for e in expanded) and any(e.endswith("step1.12") for e in expanded)
    ran = {e["data"].get("node") for e in events if e["type"] == "executing"}
    assert any(str(n).endswith("step1.12") for n in ran if n), "the cloned blur node did not run as a ComfyUI node"


def test_graph_tool_parameters_are_validated(comfy, cup):
    chain = [{"tool": "scale_and_blur", "params": {"scale": 99, "sigma": 1.0}}]
    result = comfy.call("run", graph_tool_prompt(cup, chain))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert trace["steps"][0]["inputs"]["params"]["scale"] == 2.0  # clamped to the declared range
    bad = graph_tool_prompt(cup, chain, params={"scale": {"from": "nowhere", "type": "float"}})
    with pytest.raises(ExecutionFailed, match="'from' one of number_1, number_2"):
        comfy.call("run", bad)


def test_executor_calls_a_graph_tool_with_the_parameters_its_brain_chose(comfy, comfy_server, cup, llm):
    from llm_server import Reply

    def executor_only(seen):
        if "scale" in seen.user_text().split("\n", 1)[0]:
            return Reply({"steps": [{"tool": "scale_and_blur", "params": {"scale": 0.5, "sigma": 2.0}}]})
        return Reply({"steps": [{"tool": "brightness", "params": {"amount": 0.1}}]})
    llm.reset(responder=executor_only)
    prompt = graph_tool_prompt(cup, [])
    del prompt["3"], prompt["4"], prompt["5"]
    brain = {"provider": "custom", "model": "scripted", "base_url": llm.url, "api_key_env": "", "temperature": 0.2,
             "max_tokens": 1024, "timeout": 60.0, "image_side": 256, "concurrency": 4, "max_retries": 1,
             "structured_output": "json_schema", "rule_boldness": 1.0}
    prompt.update({
        "b": {"class_type": "EditAgentsBrain", "inputs": brain},
        "p": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["1", 0], "instruction": "brighter, then scale and blur", "mode": "instructed", "mood": "",
            "caption": "", "toolbox": ["2", 0], "rerun_every_time": True}},
        "e": {"class_type": "EditAgentsExecutor", "inputs": {
            "image": ["1", 0], "plan": ["p", 0], "brain": ["b", 0], "toolbox": ["2", 0], "trace": ["p", 1],
            "rerun_every_time": True}},
        "s": {"class_type": "SaveImage", "inputs": {"images": ["e", 0], "filename_prefix": "exec_graph"}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["e", 2]}},
    })
    result = comfy.call("run", prompt)
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    assert Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]).size == (150, 100)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    planned = next(s for s in trace["steps"] if s["role"] == "planner")["outputs"]["subtasks"]
    assert [s["tool"] for s in planned] == ["brightness", "scale_and_blur"]  # the rule planner found the graph tool
    graph_step = next(s for s in trace["steps"] if "graph tool" in s["action"])
    assert graph_step["inputs"]["params"] == {"scale": 0.5, "sigma": 2.0}


def test_cca_loop_calls_graph_tools_through_role_nodes(comfy, comfy_server, cup):
    prompt = cca_with_graph_tool(cup, "brighter, then scale and blur", False,
                                 {**PARAMS, "scale": {**PARAMS["scale"], "default": 0.5}})
    prompt["s"] = {"class_type": "SaveImage", "inputs": {"images": ["l", 0], "filename_prefix": "cca_graph"}}
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    assert Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]).size == (150, 100)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert trace["summary"]["rounds"] == 2 and trace["summary"]["mode"] == "executor nodes"
    graph_calls = [s for s in trace["steps"] if "graph tool" in s["action"]]
    assert len(graph_calls) == 4  # two generators x two rounds
    ran = {str(e["data"].get("node")) for e in events if e["type"] == "executing"}
    assert any(n.endswith("r1.generator-2.execute") for n in ran) and any(".12" in n for n in ran)
    # as in-process: the request's questions are written once and every critic answers the same ones
    asked = [s for s in trace["steps"] if s["role"] == "questions"]
    answered = [s for s in trace["steps"] if s["role"] == "answers" and "text" in s["inputs"]]
    assert len(asked) == 1 and len(answered) == 4 and len({s["inputs"]["text"] for s in answered}) == 1
    # the toolbox's model folders hold the (tiny) aesthetic predictor: the quality score averages it in
    rated = [s for s in trace["steps"] if s["action"].startswith("overall quality")]
    assert len(rated) == 4 and all("aesthetic" in s["scores"] for s in rated)


def test_cca_role_nodes_do_not_stop_early_while_part_of_the_request_is_not_done(comfy, comfy_server, cup):
    result = comfy.call("run", cca_with_graph_tool(cup, "brighter, then add a hat", True))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    summary = trace["summary"]
    assert summary["mode"] == "executor nodes" and summary["rounds"] == 2 and not summary["stopped_early"]
    assert summary["unsupported"] and any(s["action"].startswith("no early stop") for s in trace["steps"])
    text = " ".join(t for o in result.outputs.values() for t in o.get("text", []))
    assert "not done: " in text


@pytest.mark.parametrize("loop", ["cca", "closed"])
def test_both_runners_decide_the_same(comfy, comfy_server, cup, loop):
    """One loop, two runners: with the graph tool in the Toolbox's selection the execute steps run as Executor
    nodes; left out (wired but excluded) the loop runs in process. On the same request both make the same
    decisions, step by step, and the same image; their summaries have the same keys."""
    build = cca_with_graph_tool if loop == "cca" else closed_loop_with_graph_tool
    instruction = "brighter and more contrast" if loop == "cca" else "darker, more contrast and cooler"
    outcomes = []
    for excluded in ("", "scale_and_blur"):
        prompt = build(cup, instruction, **({"early_stop": False} if loop == "cca" else {}))
        prompt["2"]["inputs"]["exclude"] = excluded
        prompt["s"] = {"class_type": "SaveImage", "inputs": {"images": ["l" if loop == "cca" else "c", 0],
                                                              "filename_prefix": f"runners_{loop}"}}
        result = comfy.call("run", prompt)
        trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
        saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
        image = np.asarray(Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]))
        outcomes.append((trace, image))
    (nodes, a), (in_process, b) = outcomes
    assert (nodes["summary"]["mode"], in_process["summary"]["mode"]) == ("executor nodes", "in-process")
    assert set(nodes["summary"]) == set(in_process["summary"])
    same = lambda summary: {k: v for k, v in summary.items() if k not in ("mode", "wall_s")}  # noqa: E731
    assert same(nodes["summary"]) == same(in_process["summary"])
    # the same steps (concurrent ones, e.g. the two candidates' answers, may interleave in either order) and the
    # same loop decisions in the same order
    decisions = lambda t: sorted((s["role"], s["action"]) for s in t["steps"] if s["role"] != "executor")  # noqa: E731
    assert decisions(nodes) == decisions(in_process) and len(decisions(nodes)) > 5
    loop_steps = lambda t: [s["action"] for s in t["steps"] if s["role"] == "loop"]  # noqa: E731
    assert loop_steps(nodes) == loop_steps(in_process) and loop_steps(nodes)
    assert np.array_equal(a, b)


def test_closed_loop_calls_graph_tools_through_role_nodes(comfy, comfy_server, cup):
    prompt = closed_loop_with_graph_tool(cup, "warmer, then scale and blur",
                                         {**PARAMS, "scale": {**PARAMS["scale"], "default": 0.5}})
    prompt["s"] = {"class_type": "SaveImage", "inputs": {"images": ["c", 0], "filename_prefix": "closed_graph"}}
    events = []
    result = comfy.call("run", prompt, on_event=events.append)
    saved = next(i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output")
    assert Image.open(comfy_server.dirs()["output"] / saved["subfolder"] / saved["filename"]).size == (150, 100)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    summary = trace["summary"]
    assert summary["mode"] == "executor nodes" and summary["subtasks"] == 2 and len(summary["accepted"]) == 2
    assert summary["tool_calls"] >= 2 and summary["attempts"] >= 2
    assert summary["unjudged"] == [1]  # a rule intent expert cannot measure what a graph tool was asked to do
    assert any("graph tool" in s["action"] for s in trace["steps"])
    assert {"expert", "aggregator"} <= {s["role"] for s in trace["steps"]}
    ran = {str(e["data"].get("node")) for e in events if e["type"] == "executing"}
    assert any(n.endswith("s1.a0.step") for n in ran), sorted(ran)
    # IMAGAgent's history C reaches the executor of the next subtask, as in the in-process loop
    second = [s for s in trace["steps"] if s["role"] == "executor" and s.get("subtask") == 1 and "text" in s["inputs"]]
    assert second and "subtask 0 attempt 0: " in second[0]["inputs"]["text"]
    assert second[0]["inputs"]["images"] == 2  # the photo, and the thumbnail of subtask 0's attempt


def test_role_nodes_report_a_subtask_no_expert_could_judge(comfy, comfy_server, cup):
    """The role-node runner of the closed loop (a graph tool connected) reaches the same verdict as the
    in-process one: the offline intent expert cannot judge a cinematic grade, so it is kept, not accepted."""
    result = comfy.call("run", closed_loop_with_graph_tool(cup, "give it a cinematic colour grade"))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    summary = trace["summary"]
    assert summary["mode"] == "executor nodes" and summary["accepted"] == [False] and summary["unjudged"] == [0]
    assert summary["attempts"] == 1  # not retried: the next attempt could not be judged either
    assert any("unjudged" in s["action"] for s in trace["steps"] if s["role"] == "loop")


def test_shipped_graph_tool_workflow_has_the_agent_call_the_sub_graph(comfy, comfy_server, cup, object_info):
    from edit_agents.cli.workflow import set_image, ui_to_api
    from helpers import WORKFLOWS, load_json

    prompt = ui_to_api(load_json(WORKFLOWS / "graph_tool.json"), object_info)
    set_image(prompt, cup)
    result = comfy.call("run", prompt)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    calls = [s for s in trace["steps"] if s["role"] == "executor" and s["inputs"].get("tool") == "soft_focus"]
    assert calls, [s["action"] for s in trace["steps"]]
    assert calls[0]["outputs"]["expanded_nodes"]  # it ran as cloned ComfyUI nodes
