"""The loops driven by the OpenAI-compatible brain against the scripted loopback endpoint:
they follow its decisions, and independent calls (two generators, three experts) overlap."""
from __future__ import annotations

import asyncio

import numpy as np

from edit_agents.agents.loops import CCASettings, ClosedLoopSettings, Generator, run_cca, run_closed_loop
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.records import EditRequest
from edit_agents.tools import default_registry
from llm_server import Reply, overlapping

TOOLS = default_registry()

ANSWERS = {
    "planner": {"subtasks": [{"goal": "warm the light", "tool": "temperature_tint", "rationale": "asked"},
                             {"goal": "add punch", "tool": "contrast", "depends_on": [0]}], "notes": ""},
    "questions": {"questions": [{"text": "Is it warmer?", "subtask": 0}, {"text": "More contrast?", "subtask": 1}]},
    "answers": {"answers": [{"answer": "yes", "explanation": "warmer"}, {"answer": "yes", "explanation": "punchier"}],
                "quality": 8.5},
    "competitor": {"best": 1, "stop": True, "reason": "the second is cleaner"},
    "expert": {"score": 8, "positive": "nice", "negative": ""},
    "aggregator": {"score": 8, "positive": "nice", "negative": ""},
}


def respond(seen):
    role = seen.role
    if role == "executor":
        goal = seen.user_text().split("\n", 1)[0]  # "Subtask: ..."
        if "warm" in goal:
            return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.45, "tint": 0.0}}]})
        return Reply({"steps": [{"tool": "contrast", "params": {"amount": 0.33}}]})
    return Reply(ANSWERS[role])


def brain(llm, **kw):
    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm", backoff=0.01, **kw))


def test_cca_follows_the_endpoint_and_generators_overlap(llm, photos):
    llm.reset(responder=respond, latency=0.15)
    b = brain(llm)
    gens = [Generator("generator-1", b, b), Generator("generator-2", b, b)]
    result = asyncio.run(run_cca(photos["coffee"], EditRequest("warmer and punchier", caption="a cup of coffee"),
                                 TOOLS, gens, b, b, CCASettings(rounds=5)))
    assert result.rounds == 1 and result.stopped_early  # the scripted competitor said stop
    assert result.best.agent == "generator-2"  # ...and picked candidate 1
    assert [c[0].params for c in result.best.chains] == [{"temperature": 0.45, "tint": 0.0}, {"amount": 0.33}]
    warm = result.image[..., 0].mean() - result.image[..., 2].mean()
    assert warm > photos["coffee"][..., 0].mean() - photos["coffee"][..., 2].mean()
    planners = [s for s in llm.seen if s.role == "planner"]
    assert len(planners) == 2 and overlapping(planners)  # the two generators planned concurrently
    assert "a cup of coffee" in [s for s in llm.seen if s.role == "questions"][0].user_text()
    steps = result.trace.steps
    assert all(s.inputs["brain"] == "custom/scripted-vlm" for s in steps if s.role != "loop")
    assert sum(s.tokens for s in steps) > 0


def test_closed_loop_follows_the_endpoint_and_experts_overlap(llm, photos):
    llm.reset(responder=respond, latency=0.15)
    experts = [brain(llm), brain(llm), brain(llm)]  # each expert its own brain, as IMAGAgent mixes providers
    b = brain(llm)
    result = asyncio.run(run_closed_loop(photos["chelsea"], EditRequest("warmer and punchier"), TOOLS, b, b, experts, b,
                                         ClosedLoopSettings()))
    assert [s.tool for s in result.plan.subtasks] == ["temperature_tint", "contrast"]
    assert result.accepted == [True, True] and len(result.attempts) == 2
    first_panel = [s for s in llm.seen if s.role == "expert"][:3]
    assert len(first_panel) == 3 and overlapping(first_panel)


def test_closed_loop_retries_on_low_scores_with_the_feedback(llm, photos):
    scores = iter([3, 9])

    def low_then_high(seen):
        if seen.role == "aggregator":
            s = next(scores)
            return Reply({"score": s, "positive": "", "negative": "" if s > 7 else "not warm enough"})
        if seen.role == "planner":
            return Reply({"subtasks": [{"goal": "warm the light", "tool": "temperature_tint"}]})
        return respond(seen)
    llm.reset(responder=low_then_high)
    b = brain(llm)
    result = asyncio.run(run_closed_loop(photos["chelsea"], EditRequest("warmer"), TOOLS, b, b, [b], b))
    assert len(result.attempts) == 2 and result.accepted == [True]
    second_executor = [s for s in llm.seen if s.role == "executor"][1]
    assert "not warm enough" in second_executor.user_text()  # the feedback reached the executor
    assert np.isfinite(result.image).all()


def test_the_key_never_enters_the_trace(llm, photos, monkeypatch):
    secret = "sk-never-log-me-7d1e9b3a5c"
    monkeypatch.setenv("EDIT_AGENTS_TRACE_KEY", secret)
    llm.reset(responder=respond)
    b = OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="m", api_key_env="EDIT_AGENTS_TRACE_KEY"))
    result = asyncio.run(run_closed_loop(photos["chelsea"], EditRequest("warmer and punchier"), TOOLS, b, b, [b], b))
    assert llm.seen and all(s.headers["Authorization"] == f"Bearer {secret}" for s in llm.seen)
    assert secret not in result.trace.to_json()
