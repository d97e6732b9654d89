"""Any answer a model can give (issue 15, item 4): answers generated from each role's own JSON schema by
hypothesis-jsonschema, the hostile ones included (indices out of range, extreme numbers, empty strings,
the longest lists), must end with a result or a clean, named error; no other exception may escape.

Roles and loops are driven through the real OpenAI-compatible brain against the scripted endpoint, which
serves answers generated from the schema of each call, so the brain's re-asks and the roles' meaning checks
run on every answer.
"""
from __future__ import annotations

import asyncio
import functools
import json

import hypothesis_jsonschema._from_schema as _hjs
import numpy as np
import pytest
from unittest import mock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema as _from_schema

from edit_agents.agents import cca, roles, schemas
from edit_agents.agents.brain import BrainError
from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca
from edit_agents.agents.photoagent.perceiver import brain_perceive
from edit_agents.agents.imagagent import ClosedLoopSettings, IMAGAgentCast, run_closed_loop
from edit_agents.agents.loop import LoopFailed
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.records import Candidate, Critique, EditRequest, Feedback, Plan, Question, Subtask
from edit_agents.agents.roles import Where
from edit_agents.agents.trace import Trace
from edit_agents.tools import ToolCallError, default_registry
from llm_server import Reply


def _without_positions(schema):
    """The schema as hypothesis-jsonschema can draw from it: it knows no ``prefixItems`` (draft 2020-12), and
    merging one under ``allOf`` into a chain's 36-tool ``items`` takes it minutes per schema. The draws then cover
    the wider ``items`` (a step may read any step), which the brain's checks re-ask about: any answer still."""
    if isinstance(schema, dict):
        return {k: _without_positions(v) for k, v in schema.items()
                if not (k == "allOf" and all(set(part) == {"prefixItems"} for part in v))}
    if isinstance(schema, list):
        return [_without_positions(v) for v in schema]
    return schema


def _build_each_part_once() -> None:
    """hypothesis-jsonschema builds the strategy of an object's property and of an array's items anew at every
    draw (canonicalising, merging and checking each sub-schema; its validator cache holds 128): an executor's
    36-tool chain then cost about 2 s a draw, the closed loop's 40 examples over 250 s alone and past pytest's
    900 s timeout under coverage on a busy machine, where the timeout's interruption came back as hypothesis's
    "flaky" error. A strategy is a pure description of what to draw, so each sub-schema's is built once; what
    is drawn from it is unchanged."""
    build = _hjs.__dict__["__from_schema"]  # module-level: the library's own calls look it up by this name
    if getattr(build, "cached_per_schema", False):
        return
    built: dict[str, object] = {}

    def once(schema, *, alphabet, custom_formats):
        if custom_formats is not None:  # never here; a format's strategy is not part of the key
            return build(schema, alphabet=alphabet, custom_formats=custom_formats)
        key = json.dumps(schema, sort_keys=True)  # every draw here uses the default alphabet
        if key not in built:
            built[key] = build(schema, alphabet=alphabet, custom_formats=custom_formats)
        return built[key]

    once.cached_per_schema = True
    _hjs.__dict__["__from_schema"] = once


_build_each_part_once()


@functools.lru_cache(maxsize=64)
def _strategy(key: str):
    return _from_schema(_without_positions(json.loads(key)))


def from_schema(schema):
    """hypothesis-jsonschema's strategy for ``schema``, built once per schema (the loops ask with the same few)."""
    return _strategy(json.dumps(schema, sort_keys=True))

TOOLS = default_registry().subset(categories=["classic"])
IMG = np.random.default_rng(0).random((24, 32, 3)).astype(np.float32)
CLEAN = (BrainError, ToolCallError, LoopFailed)  # errors that name what failed; anything else is a bug
FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                       HealthCheck.function_scoped_fixture])


def where() -> Where:
    return Where(Trace(), "test")


def brain(llm) -> OpenAIBrain:
    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="any", backoff=0.0, max_retries=0))


def served(llm, answer, fallback=None):
    """The endpoint serves ``answer`` first; the re-asks get ``fallback`` (or the same answer again)."""
    llm.reset(*([Reply(answer)] + [Reply(fallback if fallback is not None else answer)] * 3))


def outcome(role: str, call):
    try:
        return asyncio.run(call)
    except CLEAN as err:
        assert str(err).strip(), f"{role}: {type(err).__name__} with an empty message"
        return err


SUB = Subtask(0, "make it warmer", "temperature_tint")
PLAN = Plan([SUB])
QUESTIONS = [Question("Is it warmer?", part="warmer"), Question("Is the content kept?")]


@FAST
@given(answer=from_schema(schemas.plan_schema(TOOLS.names())))
def test_planner(llm, answer):
    served(llm, answer)
    got = outcome("planner", roles.plan(brain(llm), EditRequest("warmer"), TOOLS, IMG, where()))
    if isinstance(got, Plan):
        assert all(0 <= d < s.index for s in got.subtasks for d in s.depends_on)
        assert all(s.goal.strip() and s.tool in TOOLS.names() for s in got.subtasks)


@FAST
@given(answer=from_schema(schemas.chain_schema(roles.executor_tools(TOOLS, SUB, any_tool=True))))
def test_executor(llm, answer):
    served(llm, answer)
    got = outcome("executor", roles.execute(brain(llm), SUB, TOOLS, IMG, where(), any_tool=True))
    if isinstance(got, list):  # a valid chain: it runs, or fails cleanly (a tool's own limits)
        try:
            out = roles.run_chain(TOOLS, got, IMG)
        except (ToolCallError, ValueError) as err:
            assert str(err)
        else:
            assert out.ndim == 3 and np.isfinite(out).all()


@FAST
@given(answer=from_schema(schemas.QUESTIONS))
def test_questions(llm, answer):
    served(llm, answer)
    got = outcome("questions", roles.write_questions(brain(llm), EditRequest("warmer"), TOOLS, IMG, where()))
    if isinstance(got, list):
        assert got and all(q.text.strip() for q in got)


def any_count(schema: dict) -> dict:
    """The answers' schema without its count: a model may not keep to it."""
    answers = {k: v for k, v in schema["properties"]["answers"].items() if k not in ("minItems", "maxItems")}
    return {**schema, "properties": {**schema["properties"], "answers": answers}}


@FAST
@given(answer=from_schema(any_count(schemas.answers_schema(len(QUESTIONS), len(PLAN.subtasks)))))
def test_answers(llm, answer):
    """Answers of any count are generated (the schema sent to the endpoint says how many)."""
    served(llm, answer)
    got = outcome("answers", roles.discriminate(brain(llm), EditRequest("warmer"), PLAN, IMG, IMG, where(), QUESTIONS))
    if isinstance(got, Feedback):
        assert len(got.questions) == len(QUESTIONS) and 0.0 <= got.score <= 10.0


@FAST
@given(answer=from_schema(schemas.EXPERT))
def test_expert(llm, answer):
    served(llm, answer)
    got = outcome("expert", roles.critique(brain(llm), "intent", SUB, IMG, IMG, where()))
    if isinstance(got, Critique):
        assert 0.0 <= got.score <= 10.0


@FAST
@given(answer=from_schema(schemas.AGGREGATE), scores=st.lists(st.floats(0, 10), min_size=1, max_size=3))
def test_aggregator(llm, answer, scores):
    served(llm, answer)
    crits = [Critique(f"e{i}", s) for i, s in enumerate(scores)]
    got = outcome("aggregator", roles.aggregate(brain(llm), crits, where()))
    if isinstance(got, Feedback):
        assert got.score == pytest.approx(sum(scores) / len(scores), abs=1e-3)


@FAST
@given(answer=from_schema({**schemas.compete_schema(2), "properties": {**schemas.compete_schema(2)["properties"],
                                                                       "best": {"type": "integer"}}}))
def test_competitor(llm, answer):
    """Indices of any size are generated (the schema sent to the endpoint bounds them; a model may not care)."""
    served(llm, answer, fallback={"best": 0, "stop": False})
    cands = [Candidate(f"g{i}", 0, PLAN, [[]], IMG, Feedback(5.0)) for i in range(2)]
    got = outcome("competitor", roles.compete(brain(llm), cands, 7.0, where()))
    if isinstance(got, tuple):
        assert got[0] in (0, 1)


@FAST
@given(answer=from_schema(schemas.perceive_schema(TOOLS.specs(), 4)))
def test_perceiver(llm, answer):
    served(llm, answer)
    got = outcome("perceiver", brain_perceive(brain(llm), IMG, TOOLS, 4, where()))
    if isinstance(got, tuple):
        scene, actions = got
        assert len(actions) <= 4 and all(a.tool in TOOLS.names() for a in actions)


class DrawingEndpoint:
    """The loops' brain: the real OpenAI-compatible brain, to which the scripted endpoint serves answers drawn
    from the schema of each call (three per call, for its re-asks). Draws happen here, in the test's thread
    (hypothesis cannot draw in the endpoint's); calls go one at a time so each gets its own answers."""

    name = "any-answer"

    def __init__(self, llm, data):
        self.llm, self.data = llm, data
        self.brain = OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="any", backoff=0.0,
                                             max_retries=0))
        self.turn: asyncio.Lock | None = None

    async def ask(self, request):
        self.turn = self.turn or asyncio.Lock()
        async with self.turn:
            self.llm.reset(*[Reply(self.data.draw(from_schema(request.schema), label=request.role))
                             for _ in range(self.brain.config.reasks + 1)])
            return await self.brain.ask(request)

    async def aclose(self):
        await self.brain.aclose()


def loop_outcome(call):
    try:
        result = asyncio.run(call)
    except CLEAN as err:
        assert str(err).strip()
        return err
    assert result.image.ndim == 3 and np.isfinite(result.image).all() and result.trace.steps
    return result


LOOPS = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])


@LOOPS
@given(data=st.data())
def test_the_closed_loop_meets_any_answer(llm, data):
    b = DrawingEndpoint(llm, data)
    loop_outcome(run_closed_loop(IMG, EditRequest("warmer and sharper"), TOOLS, IMAGAgentCast(b, b, [b], b),
                                 ClosedLoopSettings(max_attempts=2)))


class OneAtATime:
    """asyncio as agents/cca.py uses it, its gathers awaited in turn: the two generators' calls then reach the
    endpoint in one order whatever their tools' threads take, so a call's answer is drawn at the same place in
    hypothesis's stream each time a case is replayed (drawn in arrival order, it failed as a FlakyStrategyDefinition).
    That the generators run at once is tested in test_llm_loops.py."""

    def __getattr__(self, name):
        return getattr(asyncio, name)

    @staticmethod
    async def gather(*awaitables, return_exceptions=False):
        out: list = []
        stopped = None  # hypothesis ending the case (StopTest): the others still run to their end, not left unawaited
        for awaitable in awaitables:  # each to its end, as gather's tasks run on when one of them fails
            try:
                out.append(await awaitable)
            except Exception as err:
                out.append(err)
            except BaseException as err:  # re-raised below, once the others have run
                stopped = stopped or err
                out.append(err)
        if stopped is not None:
            raise stopped
        failed = next((x for x in out if isinstance(x, Exception)), None)
        if failed is not None and not return_exceptions:
            raise failed
        return out


@LOOPS
@given(data=st.data())
def test_cca_meets_any_answer(llm, data):
    b = DrawingEndpoint(llm, data)
    with mock.patch.object(cca, "asyncio", OneAtATime()):
        loop_outcome(run_cca(IMG, EditRequest("warmer and sharper", caption="noise"), TOOLS,
                             CCACast([Generator("g1", b, b), Generator("g2", b, b)], b, b), CCASettings(rounds=2)))


def hostile(seen):
    """Schema-valid answers that are wrong, once per role, then sensible ones: what a real model sends."""
    again = len(seen.body["messages"]) > 2
    role = seen.role
    if role == "planner":
        return Reply({"subtasks": [{"goal": "warm it", "tool": "temperature_tint", "depends_on": [] if again else [3]}]})
    if role == "executor":
        return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.3 if again else 1e9},
                                 "source": "input" if again else "step:0"}]})  # both mended: no re-ask
    if role == "questions":
        return Reply({"questions": [{"text": "Is it warmer?", "part": "warm it"}] if again else [{"text": " "}]})
    if role == "answers":
        return Reply({"answers": [{"answer": "yes", "subtask": 0}] * (1 if again else 7), "quality": 0})
    if role == "competitor":
        return Reply({"best": 0 if again else 5, "stop": True})
    if role == "expert":
        return Reply({"score": 10 if again else 0, "positive": "", "negative": "", "judged": again})
    if role == "caption":
        return Reply({"caption": "x" * 1000})
    return Reply({"positive": "", "negative": ""})


@pytest.mark.parametrize("loop", ["EditAgentsCCALoop", "EditAgentsClosedLoop"])
def test_hostile_answers_through_the_real_server_end_with_an_image(comfy, comfy_server, llm, photos, loop):
    from PIL import Image
    Image.fromarray((photos["chelsea"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "any.png")
    llm.reset(responder=hostile)
    b = {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "custom", "model": "any", "base_url": llm.url, "api_key_env": "", "temperature": 0.2,
        "max_tokens": 512, "timeout": 20.0, "image_side": 128, "concurrency": 4, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0}}
    inputs = {"image": ["img", 0], "instruction": "warm it", "planner_brain": ["b", 0], "rerun_every_time": True}
    inputs.update({"caption": "", "rounds": 2, "early_stop": True, "restart_from_original": True, "min_score": 7.0}
                  if loop == "EditAgentsCCALoop" else {"max_attempts": 2, "accept_score": 7.0})
    result = comfy.call("run", {
        "img": {"class_type": "LoadImage", "inputs": {"image": "any.png"}}, "b": b,
        "loop": {"class_type": loop, "inputs": inputs},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["loop", 2]}},
        "save": {"class_type": "PreviewImage", "inputs": {"images": ["loop", 0]}}})
    assert any(i["type"] == "temp" for o in result.outputs.values() for i in o.get("images", []))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    notes = [str(n) for s in trace["steps"] for n in s["outputs"].get("notes", [])]
    rejected, mended = [n for n in notes if "rejected" in n], [n for n in notes if n.startswith("mended")]
    # what is unambiguous is mended, not re-asked: a forward dependency, the first step reading a step, a number
    assert any("subtask 0 depended on [3]" in n for n in mended) and any("step 0 read 'step:0'" in n for n in mended)
    assert any("temperature=1e+09 clamped to 1" in n for n in mended)
    assert not any("depends_on" in n or "step:0" in n for n in rejected)
    if loop == "EditAgentsCCALoop":  # the discriminator's and competitor's wrong answers are re-asked
        assert any("at answers: 7 items; at most 1 expected" in n for n in rejected), rejected
        assert any("question 0 is empty" in n for n in rejected) and any("best: 5 is not one of" in n for n in rejected)
