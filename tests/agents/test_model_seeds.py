"""Models the tests did not tune (issue 29, item 6): tiny random-weight models of other seeds than the fixtures'
(seed 0), built here, answer every role of every loop, greedily and sampled, in both runners: in process (the
loop nodes without a graph tool, and the Python API) and as Executor nodes on the real server (a graph tool in
the toolbox). Random weights know nothing, so these runs take whatever the grammar lets through.

The targets: every run ends with an image and a trace whose failures are named, and the grammar keeps every
answer's shape (no answer is re-asked for its shape; re-asks about meaning are allowed).
"""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from edit_agents.agents.cca import CCACast, CCASettings, run_cca
from edit_agents.agents.imagagent import ClosedLoopSettings, IMAGAgentCast, run_closed_loop
from edit_agents.agents.local_brain import LocalBrain, LocalBrainConfig, ModelShelf
from edit_agents.agents.photoagent.perceiver import BrainPerceiver
from edit_agents.agents.photoagent.search import MCTSSettings, mcts_enhance
from edit_agents.agents.records import EditRequest
from edit_agents.tools import default_registry

# (family, seed): each model built with weights no other test uses; a vision model per loop family and a text one
MODELS = (("qwen2-vl", 11), ("smolvlm", 12), ("text", 13))
# Each loop meets every model and both temperatures, and each model both temperatures, in half the runs of every
# combination: the two loops take the temperatures the other way round (pairwise cases, not the full product).
CCA_CASES = ((*MODELS[0], 0.0), (*MODELS[1], 1.0), (*MODELS[2], 0.0))
CLOSED_CASES = ((*MODELS[0], 1.0), (*MODELS[1], 0.0), (*MODELS[2], 1.0))
VISION_CASES = ((*MODELS[0], 0.0), (*MODELS[1], 1.0))
SERVER_CASES = (("cca", 0.0), ("closed", 1.0))
TOOLS = default_registry().subset(categories=["classic"])
SHAPE_REJECTED = "rejected: at "  # what a re-ask for the answer's shape (not its meaning) notes


def name(family: str, seed: int) -> str:
    return f"seed{seed}-{family}"


def ids(cases) -> list[str]:
    return [f"{name(f, s)}-{'greedy' if t == 0 else 'sampled'}" for f, s, t in cases]


@pytest.fixture(scope="module")
def seeded_models(model_root):
    """The seeded models, in the session's models/LLM/ folder beside the fixtures' own (the server lists them)."""
    from tiny_vlms import build_tiny_model

    folder = model_root / "LLM"
    for family, seed in MODELS:
        if not (folder / name(family, seed) / "config.json").is_file():
            build_tiny_model(family, folder / name(family, seed), seed=seed)
    return folder


@pytest.fixture(scope="module")
def shelf():
    return ModelShelf()


def local(folder, family, seed, temperature, shelf) -> LocalBrain:
    return LocalBrain(LocalBrainConfig(model=name(family, seed), folders=(folder,), temperature=temperature,
                                       max_tokens=160, seed=seed), shelf=shelf)


def shape_rejections(steps) -> list[str]:
    return [n for s in steps for n in (s.outputs or {}).get("notes", []) if SHAPE_REJECTED in str(n)]


def assert_ended_well(image: np.ndarray, trace, photo: np.ndarray) -> None:
    assert image.ndim == 3 and image.shape[2] == 3 and np.isfinite(image).all()
    assert 0.0 <= float(image.min()) and float(image.max()) <= 1.0
    assert trace.summary, "the trace has a summary"
    brains = [s for s in trace.steps if s.role not in ("loop",) and s.inputs.get("brain", "").startswith("local/")]
    assert brains, "the local models answered"
    failures = [s for s in trace.steps if (s.outputs or {}).get("error")]
    assert all(str(s.outputs["error"]).strip() for s in failures)  # a failure names what failed
    assert shape_rejections(trace.steps) == []


@pytest.mark.parametrize("family,seed,temperature", CCA_CASES, ids=ids(CCA_CASES))
def test_cca_in_process_with_every_role_a_model_nobody_tuned(seeded_models, shelf, photos, family, seed, temperature):
    photo = photos["chelsea"][::4, ::4]
    make = lambda: local(seeded_models, family, seed, temperature, shelf)  # noqa: E731
    cast = CCACast.of(make(), generator_2=make(), discriminator=make(), competitor=make())
    result = asyncio.run(run_cca(photo, EditRequest("make it brighter and warmer"), TOOLS, cast, CCASettings(rounds=2)))
    assert_ended_well(result.image, result.trace, photo)
    assert 1 <= result.trace.summary["rounds"] <= 2


@pytest.mark.parametrize("family,seed,temperature", CLOSED_CASES, ids=ids(CLOSED_CASES))
def test_closed_loop_in_process_with_every_role_a_model_nobody_tuned(seeded_models, shelf, photos, family, seed,
                                                                      temperature):
    photo = photos["chelsea"][::4, ::4]
    make = lambda: local(seeded_models, family, seed, temperature, shelf)  # noqa: E731
    cast = IMAGAgentCast.of(make(), make(), [make(), make(), make()], make())
    result = asyncio.run(run_closed_loop(photo, EditRequest("make it brighter and warmer"), TOOLS, cast,
                                         ClosedLoopSettings(max_attempts=2)))
    assert_ended_well(result.image, result.trace, photo)
    assert len(result.accepted) == len(result.plan.subtasks)  # every subtask planned was seen to an end


@pytest.mark.parametrize("family,seed,temperature", VISION_CASES, ids=ids(VISION_CASES))
def test_photoagent_search_with_a_vision_perceiver_nobody_tuned(seeded_models, shelf, photos, family, seed,
                                                                temperature):
    photo = photos["chelsea"][::4, ::4]
    perceiver = BrainPerceiver(local(seeded_models, family, seed, temperature, shelf), TOOLS)
    result = mcts_enhance(photo, TOOLS, settings=MCTSSettings(simulations=6, max_steps=2, perceiver_calls=2),
                          perceiver=perceiver)
    assert_ended_well(result.image, result.trace, photo)
    asked = [s for s in result.trace.steps if s.role == "perceiver" and s.inputs.get("brain", "").startswith("local/")]
    assert asked and all(s.tokens > 0 for s in asked)


def loop_with_graph_tool(loop: str, cup: str, model: str, temperature: float) -> dict:
    """A loop node whose toolbox holds a graph tool, so its execute steps run as Executor nodes on the server,
    with every role's brain the seeded local model."""
    from graph_tools import cca_with_graph_tool, closed_loop_with_graph_tool

    prompt = (cca_with_graph_tool(cup, "brighter and warmer", early_stop=True) if loop == "cca"
              else closed_loop_with_graph_tool(cup, "brighter and warmer"))
    prompt["b"] = {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "local", "model": "", "base_url": "", "api_key_env": "", "temperature": temperature,
        "max_tokens": 160, "timeout": 60.0, "image_side": 128, "concurrency": 1, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0, "local_model": model}}
    node = prompt["l" if loop == "cca" else "c"]["inputs"]
    node["planner_brain"] = ["b", 0]  # every other role defaults to the planner's brain
    node["image"] = ["small", 0]
    prompt["small"] = {"class_type": "ImageScaleBy", "inputs": {"image": ["1", 0], "upscale_method": "area",
                                                                "scale_by": 0.5}}
    prompt["s"] = {"class_type": "PreviewImage", "inputs": {"images": ["l" if loop == "cca" else "c", 0]}}
    return prompt


@pytest.mark.parametrize("loop,temperature", SERVER_CASES, ids=["cca-greedy", "closed-sampled"])
def test_both_loops_as_executor_nodes_on_the_server_with_a_model_nobody_tuned(comfy, comfy_server, seeded_models,
                                                                              photos, loop, temperature):
    from PIL import Image

    Image.fromarray((photos["coffee"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "seeds.png")
    family, seed = MODELS[0] if loop == "cca" else MODELS[1]
    result = comfy.call("run", loop_with_graph_tool(loop, "seeds.png", name(family, seed), temperature))
    assert any(i["type"] == "temp" for o in result.outputs.values() for i in o.get("images", []))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert trace["summary"]["mode"] == "executor nodes"
    brains = {s["inputs"]["brain"] for s in trace["steps"] if s.get("inputs", {}).get("brain")}
    assert brains == {f"local/{name(family, seed)}"}
    notes = [str(n) for s in trace["steps"] for n in s["outputs"].get("notes", [])]
    assert [n for n in notes if SHAPE_REJECTED in n] == []
    assert all(str(s["outputs"]["error"]).strip() for s in trace["steps"] if s["outputs"].get("error"))
