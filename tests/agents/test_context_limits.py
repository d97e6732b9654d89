"""Every request fits the brain's context (issue 67): counted before it is sent, trimmed where it carries history,
refused by name where it cannot fit, and never cut silently by an endpoint that enforces its context as Ollama
does. The endpoint counts with Qwen2.5-VL's own tokenizer and image grid; the pack estimates, and the estimate
must never fall below that count."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from edit_agents.agents.brain import BrainRequest
from edit_agents.agents import budget
from edit_agents.agents.budget import ContextError
from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca
from edit_agents.agents.imagagent import ClosedLoopSettings, IMAGAgentCast, run_closed_loop
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.records import EditRequest, HistoryContext
from edit_agents.agents.roles import with_history
from edit_agents.tools import default_registry
from llm_answers import valid_answer, with_tiny_editor
from llm_server import Reply

TOOLS = default_registry().subset(categories=["classic"])


def brain(llm, context: int = 0, **kw) -> OpenAIBrain:
    return OpenAIBrain(BrainConfig(provider="ollama", base_url=llm.url, model="qwen2.5vl:7b", context=context,
                                   backoff=0.0, max_retries=0, **kw))


def big_photo(photos) -> np.ndarray:
    """A 2000 x 1333 photo, as a phone's is after the Load node (the size the issue measured)."""
    from PIL import Image

    small = Image.fromarray((photos["chelsea"] * 255).astype(np.uint8))
    return np.asarray(small.resize((2000, 1333)), np.float32) / 255.0


def answered(llm):
    llm.reset(responder=lambda seen: Reply(valid_answer(seen.body)), context=llm.context)


@pytest.mark.parametrize("context", [4096, 8192])
def test_both_loops_fit_the_context_and_the_estimate_is_never_below_the_count(llm, photos, context):
    llm.reset(responder=lambda seen: Reply(valid_answer(seen.body)), context=context)
    b = brain(llm, context=context)
    image = big_photo(photos)
    closed = asyncio.run(run_closed_loop(image, EditRequest("warmer and punchier"), TOOLS,
                                         IMAGAgentCast(b, b, [b, b, b], b), ClosedLoopSettings(max_attempts=3)))
    closed_seen = list(llm.seen)
    gens = [Generator("generator-1", b, b), Generator("generator-2", b, b)]
    cca = asyncio.run(run_cca(image, EditRequest("warmer and brighter"), TOOLS, CCACast(gens, b, b),
                              CCASettings(rounds=2)))
    cca_seen = llm.seen[len(closed_seen):]
    assert {"planner", "executor", "expert", "aggregator", "caption", "questions", "answers",
            "competitor"} <= {s.role for s in llm.seen}
    assert not [s for s in llm.seen if s.cut], [(s.role, s.tokens) for s in llm.seen if s.cut]
    assert max(s.tokens for s in llm.seen) <= context
    for result, seen in ((closed, closed_seen), (cca, cca_seen)):  # the pack's estimate against the endpoint's count
        steps = [s for s in result.trace.steps if "prompt_tokens" in s.inputs]
        assert steps, "the trace shows what each call weighed"
        for role in {s.role for s in steps}:
            estimated = sorted(s.inputs["prompt_tokens"] for s in steps if s.role == role)
            counted = sorted(s.tokens for s in seen if s.role == role)
            assert len(estimated) == len(counted) and all(e >= c for e, c in zip(estimated, counted)), \
                (role, estimated, counted)


def test_a_request_that_cannot_fit_names_the_role_its_size_and_the_setting(llm, photos):
    llm.reset(responder=lambda seen: Reply(valid_answer(seen.body)))
    b = brain(llm, context=1024)
    with pytest.raises(ContextError) as err:
        asyncio.run(run_closed_loop(big_photo(photos), EditRequest("warmer"), TOOLS, IMAGAgentCast(b, b, [b, b, b], b),
                                    ClosedLoopSettings()))
    said = str(err.value)
    assert "planner request" in said and "tokens" in said and "the Brain's context (now 1024)" in said
    assert "num_ctx" in said and not llm.seen  # nothing was sent


def test_history_is_left_out_oldest_first_to_fit():
    thumbs = HistoryContext()
    for n in range(6):
        thumbs.add("attempt", f"attempt {n} " + "words " * 40, 5.0, np.full((64, 64, 3), n / 6, np.float32))
    photo = np.zeros((512, 768, 3), np.float32)
    req = with_history(BrainRequest(role="executor", system="s" * 3000, text="", schema={}), thumbs,
                       lambda h: h.render(), photo)
    assert len(req.images) == 5 and "attempt 2" in req.text  # the window: 12 entries, 4 thumbnails
    full = budget.request_tokens(req.system, req.text, req.images, 768)
    _, size, notes = budget.fit(req, lambda r: r.system, context=full + 1474 - 60, answer_tokens=1024, side=768,
                                model="", who="x", setting="y")
    assert notes[0].startswith("the oldest history thumbnail") and size <= full - 60
    assert len(req.images) == 4 and req.images[0] is photo  # the photo stays; the oldest thumbnail went first
    assert "[thumbnail 1]" in req.text and "attempt 5" in req.text


def test_a_re_ask_fits_the_reserve(llm):
    """A rejected answer is quoted back cut short, and only the last one: the re-ask stays within the reserve."""
    long_wrong = {"subtasks": [{"goal": "x" * 5000, "tool": "nope"}]}
    llm.reset(Reply(long_wrong), Reply(long_wrong), Reply({"subtasks": [{"goal": "warm", "tool": "temperature_tint"}]}),
              context=4096)
    b = brain(llm, context=4096)
    from edit_agents.agents import schemas

    req = BrainRequest(role="planner", system="Plan.", text="warmer", schema=schemas.plan_schema(TOOLS.names()))
    asyncio.run(b.ask(req))
    first, *reasks = [s.tokens for s in llm.seen]
    assert len(reasks) == 2 and all(t - first <= budget.REASK_TOKENS for t in reasks), (first, reasks)
    assert len(llm.seen[-1].body["messages"]) == 4  # system, user, the last answer, the problem: no pile-up


# -- the shipped LLM workflows on a real server, against an Ollama that enforces its context ------------------

LLM_WORKFLOWS = ("cca_ollama.json", "imagagent_ollama.json", "photoagent.json", "cca_kontext.json",
                 "photoagent_kontext.json", "imagagent_qwen_edit.json")
CCA_ROLES = {"caption", "questions", "planner", "executor", "answers", "competitor"}
IMAGAGENT_ROLES = {"planner", "executor", "expert", "aggregator"}
ROLES_OF = {"cca_ollama.json": CCA_ROLES, "cca_kontext.json": CCA_ROLES, "imagagent_ollama.json": IMAGAGENT_ROLES,
            "imagagent_qwen_edit.json": IMAGAGENT_ROLES, "photoagent.json": {"perceiver"},
            "photoagent_kontext.json": {"perceiver"}}
GRAPH_TOOL = "scale_and_blur"


@pytest.fixture(scope="module")
def ollama():
    from ollama_server import OllamaStandIn

    server = OllamaStandIn().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def phone_photo(comfy_server, photos):
    """A 2000 x 1333 photo in the server's input folder (the size the issue measured the requests at)."""
    from PIL import Image

    Image.fromarray((big_photo(photos) * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "phone2000.png")
    return "phone2000.png"


def with_graph_tool(prompt: dict) -> dict:
    """The same workflow with a graph tool in its Toolbox's selection: its loop then runs the execute steps as
    Executor nodes (the other runner)."""
    from graph_tools import graph_tool_prompt

    tool = {f"gt{k}": v for k, v in graph_tool_prompt("unused.png", []).items() if k in ("10", "11", "12", "13")}
    for node in tool.values():
        node["inputs"] = {k: ([f"gt{v[0]}", v[1]] if isinstance(v, list) else v) for k, v in node["inputs"].items()}
    box = next(n for n in prompt.values() if n["class_type"] == "EditAgentsToolbox")
    box["inputs"]["graph_tool_1"] = ["gt13", 0]
    return {**prompt, **tool}


CASES = [(w, c, r) for w in LLM_WORKFLOWS for c in (4096, 8192)
         for r in (("in-process", "executor nodes") if not w.startswith("photoagent") else ("in-process",))]


@pytest.mark.server
@pytest.mark.parametrize("workflow,context,runner", CASES, ids=[f"{w[:-5]}-{c}-{r.split()[0]}" for w, c, r in CASES])
def test_shipped_llm_workflows_fit_an_ollama_context_for_every_role(workflow, context, runner, comfy, object_info,
                                                                    ollama, phone_photo):
    from edit_agents.cli.workflow import ui_to_api
    from helpers import WORKFLOWS, load_json
    from llm_answers import pointed_at, role_of
    from llm_server import prompt_tokens
    from ollama_server import OllamaReply

    count = lambda body: prompt_tokens(body.get("messages", []))  # noqa: E731 - Qwen2.5-VL's own count
    ollama.reset(responder=lambda call: OllamaReply(valid_answer(call.body)), count=count)
    prompt = pointed_at(ui_to_api(load_json(WORKFLOWS / workflow), object_info), ollama.url, context, phone_photo)
    if runner == "executor nodes":
        prompt = with_graph_tool(prompt)
    editor = "kontext" in workflow or "qwen_edit" in workflow
    if editor:
        prompt = with_tiny_editor(prompt)
    result = comfy.call("run", prompt)
    chats = ollama.chats
    assert chats and not [c for c in chats if c.truncated], [(role_of(c.body), count(c.body)) for c in chats if c.truncated]
    assert all(c.body["options"]["num_ctx"] == context for c in chats)
    assert max(count(c.body) for c in chats) <= context
    assert ROLES_OF[workflow] <= {role_of(c.body) for c in chats}  # every role spoke, and every one fitted
    trace = next(t for out in result.outputs.values() for t in out.get("edit_agents_trace", []))
    rejected = [n for s in trace["steps"] for n in s.get("outputs", {}).get("notes", []) if "rejected" in str(n)]
    assert not rejected, rejected  # every answer valid at the first try: nobody answered from half a prompt
    assert not [s for s in trace["steps"] if s.get("outputs", {}).get("fallback")]  # the VLM perceiver kept going
    if runner != "in-process":
        assert trace["summary"]["mode"] == runner
    if editor:  # the requests carried the edit tools, as on a machine with the model files
        assert any("comfy_edit" in str(c.body.get("format")) for c in chats)
    assert any(img["type"] == "output" for out in result.outputs.values() for img in out.get("images", []))
