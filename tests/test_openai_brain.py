"""Contract tests: the real `openai` SDK, through our brain, against a scripted endpoint on 127.0.0.1."""
from __future__ import annotations

import asyncio
import base64
import io

import pytest
from PIL import Image

from edit_agents.agents.brain import BrainError, BrainRequest, extract_json
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from llm_server import Reply, overlapping

SCHEMA = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 10},
                                           "why": {"type": "string"}},
          "required": ["score"], "additionalProperties": False}
KEY_ENV = "EDIT_AGENTS_TEST_KEY"
SECRET = "sk-test-3f9a7c1e5b2d4a6f8e0c"


def brain(llm, **kw) -> OpenAIBrain:
    cfg = dict(provider="custom", base_url=llm.url, model="scripted", backoff=0.01, timeout=2.0)
    cfg.update(kw)
    return OpenAIBrain(BrainConfig(**cfg))


def ask(b, images=(), role="expert"):
    return asyncio.run(b.ask(BrainRequest(role=role, system="You are a critic.", text="Score it.",
                                          schema=SCHEMA, images=list(images))))


def test_valid_json(llm):
    llm.reset(Reply({"score": 7, "why": "good"}))
    answer = ask(brain(llm))
    assert answer.data == {"score": 7, "why": "good"} and answer.requests == 1
    assert answer.tokens_in == 100 and answer.tokens_out > 0
    sent = llm.seen[0].body
    assert sent["response_format"]["type"] == "json_schema" and sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["model"] == "scripted"


def test_fenced_json_and_prose_are_extracted(llm):
    llm.reset(Reply('Sure! Here it is:\n```json\n{"score": 4}\n```\nHope that helps.'))
    assert ask(brain(llm)).data == {"score": 4}
    assert extract_json('The result is {"a": {"b": "}"}} as asked.') == {"a": {"b": "}"}}
    with pytest.raises(ValueError, match="not JSON"):
        extract_json("no json here")


def test_invalid_then_valid_reasks_quoting_the_problem(llm):
    llm.reset(Reply("{score: seven"), Reply({"score": 7}))
    answer = ask(brain(llm))
    assert answer.data == {"score": 7} and answer.requests == 2
    reask = llm.seen[1].body["messages"][-1]["content"]
    assert "not valid" in reask and "not JSON" in reask


def test_schema_violation_then_valid(llm):
    llm.reset(Reply({"score": 42}), Reply({"score": 8}))
    answer = ask(brain(llm))
    assert answer.data == {"score": 8}
    assert "42 is greater than the maximum of 10" in llm.seen[1].body["messages"][-1]["content"]
    assert any("rejected" in n for n in answer.notes)


def test_reasks_are_bounded(llm):
    llm.reset(*[Reply({"score": "high"})] * 5)
    with pytest.raises(BrainError, match="no valid expert answer in 3 tries"):
        ask(brain(llm, reasks=2))
    assert len(llm.seen) == 3


def test_429_then_ok_is_retried(llm):
    llm.reset(Reply(status=429, body={"error": {"message": "slow down"}}), Reply({"score": 5}))
    answer = ask(brain(llm))
    assert answer.data == {"score": 5} and len(llm.seen) == 2
    assert "HTTP 429" in answer.notes[0]


def test_timeout_is_retried_then_reported(llm):
    llm.reset(Reply({"score": 1}, delay=1.0), Reply({"score": 2}))
    assert ask(brain(llm, timeout=0.3)).data == {"score": 2}
    llm.reset(*[Reply({"score": 1}, delay=1.0)] * 3)
    with pytest.raises(BrainError, match="no answer within 0.3 s"):
        ask(brain(llm, timeout=0.3, max_retries=1))


def test_500_until_the_retry_budget_ends(llm):
    llm.reset(*[Reply(status=500)] * 10)
    with pytest.raises(BrainError) as err:
        ask(brain(llm, max_retries=3))
    assert len(llm.seen) == 4
    assert llm.url in str(err.value) and "failed 4 time(s), last: HTTP 500" in str(err.value)


def test_401_is_not_retried_and_names_the_env_var(llm, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    llm.reset(*[Reply(status=401, body={"error": {"message": "bad key"}})] * 3)
    with pytest.raises(BrainError) as err:
        ask(brain(llm, api_key_env=KEY_ENV))
    assert len(llm.seen) == 1
    assert KEY_ENV in str(err.value) and SECRET not in str(err.value)
    assert llm.seen[0].headers["Authorization"] == f"Bearer {SECRET}"  # the key went to the endpoint, only there


def test_missing_key_env_is_named(llm, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(BrainError, match=f"environment variable {KEY_ENV}, which is not set"):
        ask(brain(llm, api_key_env=KEY_ENV))
    assert llm.seen == []


def test_key_over_plain_http_to_a_remote_host_is_refused(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    b = OpenAIBrain(BrainConfig(provider="custom", base_url="http://203.0.113.7/v1", model="m", api_key_env=KEY_ENV))
    with pytest.raises(BrainError, match="plain HTTP") as err:
        asyncio.run(b.ask(BrainRequest("expert", "s", "t", SCHEMA)))
    assert SECRET not in str(err.value)


def test_unsupported_response_format_steps_down(llm):
    llm.reset(Reply(status=400, body={"error": {"message": "response_format json_schema not supported"}}),
              Reply(status=400, body={"error": {"message": "response_format not supported"}}),
              Reply('{"score": 3}'))
    b = brain(llm)
    assert ask(b).data == {"score": 3}
    assert llm.seen[1].body["response_format"] == {"type": "json_object"}
    assert "response_format" not in llm.seen[2].body
    llm.reset(Reply('{"score": 6}'))
    assert ask(b).data == {"score": 6} and "response_format" not in llm.seen[0].body  # remembered


def test_images_are_sent_downscaled(llm, photos):
    llm.reset(Reply({"score": 9}))
    ask(brain(llm, image_side=128), images=[photos["coffee"], photos["camera"]])
    urls = llm.seen[0].images()
    assert len(urls) == 2 and all(u.startswith("data:image/jpeg;base64,") for u in urls)
    sizes = [Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).size for u in urls]
    assert sizes == [(128, 85), (128, 128)]


def test_concurrent_calls_overlap_and_respect_the_limit(llm):
    llm.reset(responder=lambda seen: Reply({"score": 5}), latency=0.3)
    b = brain(llm, concurrency=3)

    async def three():
        req = BrainRequest("expert", "s", "t", SCHEMA)
        return await asyncio.gather(*(b.ask(req) for _ in range(3)))
    asyncio.run(three())
    assert overlapping(llm.seen)
    llm.reset(responder=lambda seen: Reply({"score": 5}), latency=0.2)
    b = brain(llm, concurrency=1)
    asyncio.run(three())
    assert not overlapping(llm.seen)  # the limit serialises them


def test_cost_from_the_price_table(llm):
    llm.reset(Reply({"score": 5}))
    answer = ask(brain(llm, prices={"scripted": (2.0, 8.0)}))
    assert answer.cost == pytest.approx((100 * 2.0 + answer.tokens_out * 8.0) / 1e6)


def test_openai_provider_honours_the_sdk_environment(llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    llm.reset(Reply({"score": 1}))
    b = OpenAIBrain(BrainConfig(provider="openai", model="gpt-test", backoff=0.01))
    assert asyncio.run(b.ask(BrainRequest("expert", "s", "t", SCHEMA))).data == {"score": 1}
    assert llm.seen[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_bad_config_is_explained():
    with pytest.raises(BrainError, match="unknown provider 'openia'"):
        BrainConfig(provider="openia", model="m")
    with pytest.raises(BrainError, match="no model name"):
        BrainConfig(provider="ollama")
    with pytest.raises(BrainError, match="needs a base URL"):
        BrainConfig(provider="custom", model="m")


def test_unreachable_endpoint_names_the_url():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = OpenAIBrain(BrainConfig(provider="custom", base_url=f"http://127.0.0.1:{port}/v1", model="m",
                                max_retries=1, backoff=0.01))
    with pytest.raises(BrainError, match=f"127.0.0.1:{port}.*connection error"):
        asyncio.run(b.ask(BrainRequest("expert", "s", "t", SCHEMA)))


def test_html_answer_is_reported(llm):
    llm.reset(*[Reply(raw="<html>gateway</html>")] * 3)
    with pytest.raises(BrainError, match="did not answer like an OpenAI-compatible endpoint.*<html>gateway"):
        ask(brain(llm, reasks=2))
    assert len(llm.seen) == 1
