"""The local brain: tiny random-weight models of real transformers classes (Qwen2-VL, Qwen2.5-VL, SmolVLM /
Idefics3, a text-only Llama), built in fixtures, loaded from a model folder by the product's own code.

Random weights know nothing, so every valid answer here is the grammar's doing: with decoding constrained
to the schema they answer every role validly, without it they do not.
"""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from edit_agents.agents import schemas
from edit_agents.agents.brain import BrainRequest, InvalidAnswerError, validate
from edit_agents.agents.local_brain import (GenerationCancelled, LocalBrain, LocalBrainConfig, ModelShelf, find_model,
                                            preferred_dtype)
from edit_agents.agents.roles import interruptible
from edit_agents.tools import default_registry
from edit_agents.tools.models import MissingModelError

FAMILIES = ("qwen2-vl", "qwen2.5-vl", "smolvlm", "text")


@pytest.fixture(scope="module")
def llm_dir(model_root):
    return model_root / "LLM"


@pytest.fixture()
def shelf():
    return ModelShelf()  # each test counts its own loads


def local(llm_dir, family: str, shelf: ModelShelf, **kw) -> LocalBrain:
    return LocalBrain(LocalBrainConfig(model=f"tiny-{family}", folders=(llm_dir,), **{"max_tokens": 160, **kw}),
                      shelf=shelf)


def role_requests() -> list[BrainRequest]:
    """One request per answer shape the loops ask for, with the schemas the roles build."""
    tools = default_registry().subset(categories=["classic"])
    spec = tools.get("brightness")
    image = np.random.default_rng(0).random((48, 64, 3)).astype(np.float32)
    asks = [("planner", schemas.plan_schema(tools.names())), ("executor", schemas.chain_schema(spec)),
            ("questions", schemas.QUESTIONS), ("answers", schemas.answers_schema(3)), ("expert", schemas.EXPERT),
            ("competitor", schemas.compete_schema(2)),
            ("caption", schemas.CAPTION), ("perceiver", schemas.perceive_schema(tools.specs()[:6], 3))]
    return [BrainRequest(role, f"You are the {role}.", "Make the photo brighter.", schema, images=[image])
            for role, schema in asks]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_answers_every_role_validly_at_the_first_try(llm_dir, shelf, family):
    brain = local(llm_dir, family, shelf)
    for request in role_requests():
        answer = asyncio.run(brain.ask(request))
        assert validate(answer.data, request.schema) is None
        assert not [n for n in answer.notes if "rejected" in n], answer.notes  # no re-ask was needed
        assert answer.requests == 1 and answer.tokens_in > 0 and answer.tokens_out > 0
        assert answer.brain == f"local/tiny-{family}"
    assert brain.vision == (family != "text")


@pytest.mark.parametrize("family", ["qwen2-vl", "text"])
def test_the_prompt_is_counted_by_the_models_own_processor_and_fitted_to_its_context(llm_dir, shelf, family):
    """The local brain counts a request with its own processor (images included) before generating: the count
    is exactly the prompt it then runs, the schema stays out of the prompt (decoding follows it), and a request
    beyond the Brain's context is refused by name with the setting to raise."""
    from edit_agents.agents.budget import ContextError

    request = role_requests()[1]  # the executor's, with its chain schema
    answer = asyncio.run(local(llm_dir, family, shelf).ask(request))
    assert answer.prompt_tokens == answer.tokens_in > 0
    small = local(llm_dir, family, shelf, context=answer.prompt_tokens + 100)
    with pytest.raises(ContextError) as err:
        asyncio.run(small.ask(role_requests()[1]))
    assert "executor request" in str(err.value) and "the model's context" in str(err.value)


def test_without_the_grammar_the_same_weights_do_not_answer_validly(llm_dir, shelf):
    brain = local(llm_dir, "qwen2-vl", shelf, constrained=False, reasks=1)
    request = role_requests()[4]  # the expert
    with pytest.raises(InvalidAnswerError, match="gave no valid expert answer in 2 tries"):
        asyncio.run(brain.ask(request))


def test_one_load_shared_by_every_brain_and_concurrent_calls_queue(llm_dir, shelf):
    first, second = local(llm_dir, "smolvlm", shelf), local(llm_dir, "smolvlm", shelf, temperature=0.7)
    requests = role_requests()

    async def together():
        return await asyncio.gather(*(brain.ask(r) for brain in (first, second) for r in requests[3:6]))

    answers = asyncio.run(together())
    assert len(answers) == 6 and all(validate(a.data, r.schema) is None
                                     for a, r in zip(answers, requests[3:6] * 2))
    assert list(shelf.loads.values()) == [1]  # one model for both brains and all six calls
    model = first.model()
    assert model is second.model() and model.tokens_generated == sum(a.tokens_out for a in answers)


def test_cancel_stops_generation_between_tokens_and_frees_the_model(llm_dir, shelf):
    brain = local(llm_dir, "text", shelf, max_tokens=20000, constrained=False, reasks=0)
    model = brain.model()

    def should_stop():  # the user presses Cancel once the model is generating
        if model.tokens_generated > 0:
            raise InterruptedError("cancelled by the user")

    request = BrainRequest("caption", "Describe.", "Describe the photo.", schemas.CAPTION)
    with pytest.raises(InterruptedError):
        asyncio.run(interruptible(brain.ask(request), should_stop, poll_s=0.01))
    assert model.lock.acquire(timeout=60)  # the generating thread stopped and let go of the model
    model.lock.release()
    assert 0 < model.tokens_generated < 20000
    stopped_at = model.tokens_generated
    with pytest.raises(GenerationCancelled, match="cancelled after"):
        brain.generate(model, [{"role": "user", "content": "hi"}], [], None, asyncio.run(_empty_answer()),
                       should_stop=lambda: True)
    assert model.tokens_generated == stopped_at + 1


async def _empty_answer():
    from edit_agents.agents.brain import BrainAnswer

    return BrainAnswer(data={}, brain="test")


def test_text_only_model_says_it_cannot_see_the_image(llm_dir, shelf):
    answer = asyncio.run(local(llm_dir, "text", shelf).ask(role_requests()[5]))
    assert "1 image(s) not shown: tiny-text reads text only" in answer.notes


def test_missing_or_incomplete_model_folder_is_named_with_what_to_get(llm_dir, tmp_path):
    with pytest.raises(MissingModelError, match=r"'nope' is not in .*LLM.*Qwen/Qwen2.5-VL-3B-Instruct"):
        find_model("nope", [llm_dir])
    with pytest.raises(MissingModelError, match="no local model chosen"):
        find_model("", [llm_dir])
    broken = tmp_path / "half-downloaded"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "qwen2_vl"}')
    with pytest.raises(MissingModelError) as err:
        find_model("half-downloaded", [tmp_path])
    text = str(err.value)
    assert str(broken) in text and "*.safetensors" in text and "tokenizer" in text and "image processor" in text


def test_cpu_runs_in_fp32(llm_dir, shelf):
    import torch

    assert preferred_dtype(torch.device("cpu")) == torch.float32
    model = local(llm_dir, "qwen2-vl", shelf).model()
    assert model.dtype == torch.float32 and next(model.model.parameters()).dtype == torch.float32


def test_calls_from_threads_are_served_one_at_a_time(llm_dir, shelf):
    brain = local(llm_dir, "qwen2.5-vl", shelf, max_tokens=64)
    request = role_requests()[5]
    results, errors = [], []

    def call():
        try:
            results.append(asyncio.run(brain.ask(request)))
        except Exception as err:  # collected: the assertion below names it
            errors.append(err)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3
    assert len({repr(r.data) for r in results}) == 1  # greedy: the same question, the same answer, untangled


# -- on the real server: the Brain node's local provider in the shipped workflows -----------------------------

def with_local_brains(prompt: dict, model: str = "tiny-qwen2-vl", max_tokens: int = 128) -> dict:
    for node in prompt.values():
        if node["class_type"] == "EditAgentsBrain":
            node["inputs"].update(provider="local", local_model=model, max_tokens=max_tokens, temperature=0.0)
    return prompt


def brain_steps(result) -> list[dict]:
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    return [s for s in trace["steps"] if s.get("inputs", {}).get("brain")]


def test_brain_node_lists_the_models_in_the_llm_folder(object_info):
    options = object_info["EditAgentsBrain"]["input"]["optional"]["local_model"][1]["options"]
    assert options[0] == "(none)" and {f"tiny-{f}" for f in FAMILIES} <= set(options)
    assert "local" in object_info["EditAgentsBrain"]["input"]["required"]["provider"][1]["options"]


@pytest.mark.parametrize("workflow", ["cca.json", "imagagent.json"])
def test_shipped_loop_workflows_run_with_every_brain_local(workflow, comfy, object_info, comfy_server, photos):
    from PIL import Image

    from edit_agents.cli.workflow import set_image, ui_to_api
    from helpers import WORKFLOWS, load_json

    prompt = with_local_brains(ui_to_api(load_json(WORKFLOWS / workflow), object_info))
    Image.fromarray((photos["chelsea"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "lb.png")
    set_image(prompt, "lb.png")
    result = comfy.call("run", prompt)
    steps = brain_steps(result)
    assert steps and {s["inputs"]["brain"] for s in steps} == {"local/tiny-qwen2-vl"}
    assert all(s["tokens"] > 0 for s in steps)
    schema_rejections = [n for s in steps for n in s["outputs"].get("notes", []) if "rejected: at " in n]
    assert schema_rejections == []  # re-asks, if any, were about meaning: the grammar kept every answer's shape


def test_photoagent_workflow_with_a_local_vlm_perceiver(comfy, object_info, comfy_server, photos):
    from PIL import Image

    from edit_agents.cli.workflow import set_image, ui_to_api
    from helpers import WORKFLOWS, load_json

    prompt = with_local_brains(ui_to_api(load_json(WORKFLOWS / "photoagent.json"), object_info), "tiny-smolvlm")
    for node in prompt.values():
        if node["class_type"] == "EditAgentsMCTSPlanner":
            node["inputs"].update(simulations=6, max_steps=2)
    Image.fromarray((photos["chelsea"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "lb2.png")
    set_image(prompt, "lb2.png")
    result = comfy.call("run", prompt)
    perceiver = [s for s in brain_steps(result) if s["role"] == "perceiver"]
    assert perceiver and {s["inputs"]["brain"] for s in perceiver} == {"local/tiny-smolvlm"}
    assert all(s["tokens"] > 0 and s["inputs"]["images"] == 1 for s in perceiver)


@pytest.mark.parametrize("family", ["qwen2-vl", "text"])
def test_sampling_draws_anew_per_call_and_leaves_the_process_rng_alone(llm_dir, shelf, family):
    """Each call is seeded from the brain's seed and its own count: sampled answers to the same request differ
    (a re-ask, or CCA's second generator, gets other draws), the same seed replays them, and the process-wide
    torch RNG is as it was. Greedy decoding gives one answer."""
    import torch

    request = next(r for r in role_requests() if r.role == "planner")
    torch.manual_seed(1234)
    before = torch.random.get_rng_state()
    sampled = local(llm_dir, family, shelf, temperature=1.5)
    first = [json_of(asyncio.run(sampled.ask(request)).data) for _ in range(4)]
    assert torch.equal(torch.random.get_rng_state(), before)
    assert len(set(first)) > 1, first
    again = local(llm_dir, family, shelf, temperature=1.5)  # a new brain with the same seed replays the draws
    assert [json_of(asyncio.run(again.ask(request)).data) for _ in range(4)] == first
    greedy = local(llm_dir, family, shelf)
    assert len({json_of(asyncio.run(greedy.ask(request)).data) for _ in range(2)}) == 1


def json_of(data) -> str:
    import json

    return json.dumps(data, sort_keys=True)
