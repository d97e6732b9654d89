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


# -- what real endpoints send (issue 15, item 3) ---------------------------------------------------

def test_reasoning_models_think_before_the_json(llm):
    """DeepSeek-R1, Qwen3 and QwQ: <think>...</think> (holding braces of its own) before the JSON, or the
    reasoning in a reasoning_content field beside the content."""
    think = "<think>The user wants {a score}. Maybe {\"score\": 1}? No, it looks good.</think>\n{\"score\": 8}"
    llm.reset(Reply(think), Reply(message={"role": "assistant", "content": '{"score": 5}',
                                           "reasoning_content": "{\"score\": 0} would be wrong"}),
              Reply("The user asks... so the answer:</think>{\"score\": 4}"))  # the opening tag left to the template
    b = brain(llm)
    assert ask(b).data == {"score": 8} and ask(b).data == {"score": 5} and ask(b).data == {"score": 4}


def test_content_as_parts_tool_calls_and_prose_are_all_read(llm):
    parts = {"role": "assistant", "content": [{"type": "text", "text": '{"score": '}, {"type": "text", "text": "6}"}]}
    tool_call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "answer", "arguments": '{"score": 7}'}}]}
    llm.reset(Reply(message=parts), Reply(message=tool_call),
              Reply("Sure! Here is my assessment: {\"score\": 3, \"why\": \"flat\"} Hope that helps."))  # ignores the format
    b = brain(llm)
    assert [ask(b).data["score"] for _ in range(3)] == [6, 7, 3]


def test_a_cut_off_answer_gets_more_room_once_then_a_reask(llm):
    llm.reset(Reply('{"score": ', finish_reason="length"), Reply({"score": 9}))
    answer = ask(brain(llm, max_tokens=100))
    assert answer.data == {"score": 9} and llm.seen[1].body["max_tokens"] == 200
    assert any("cut off at max_tokens" in n for n in answer.notes)


def test_a_refusal_and_no_choices_are_reported_not_parsed(llm):
    from edit_agents.agents.brain import InvalidAnswerError
    llm.reset(Reply(message={"role": "assistant", "content": None, "refusal": "I can't help with that."}))
    with pytest.raises(InvalidAnswerError, match="refused the expert request: I can't help with that"):
        ask(brain(llm))
    llm.reset(Reply(choices=[]), Reply({"score": 2}))
    answer = ask(brain(llm))
    assert answer.data == {"score": 2} and any("sent no choices" in n for n in answer.notes)


def test_current_openai_models_get_max_completion_tokens_and_their_default_temperature(llm):
    """o-series and GPT-5.x answer 400 to max_tokens and to a non-default temperature. Each 400 changes only what
    it names; the structured mode is kept (it steps down only when the 400 names response_format)."""
    llm.reset(Reply(status=400, body={"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                                           "this model. Use 'max_completion_tokens' instead."}}),
              Reply(status=400, body={"error": {"message": "Unsupported value: 'temperature' does not support 0.2 with "
                                                           "this model. Only the default (1) value is supported."}}),
              Reply({"score": 5}))
    b = brain(llm, max_tokens=300)
    assert ask(b).data == {"score": 5}
    last = llm.seen[-1].body
    assert "max_tokens" not in last and last["max_completion_tokens"] == 300 and "temperature" not in last
    assert last["response_format"]["type"] == "json_schema"  # not stepped down by the other 400s
    llm.reset(Reply(status=400, body={"error": {"message": "Invalid image URL"}}))
    with pytest.raises(BrainError, match="rejected the request .HTTP 400.: Invalid image URL"):
        ask(b)  # a 400 that names nothing we can change is reported, not taken for a format problem


def test_retry_after_is_honoured_within_the_retry_budget(llm):
    llm.reset(Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.3"}),
              Reply({"score": 1}))
    answer = ask(brain(llm, max_retries=2, backoff=0.0))
    assert answer.data == {"score": 1}
    assert llm.seen[1].start - llm.seen[0].end >= 0.25  # it waited as asked, not the zero backoff
    assert any("Retry-After" in n for n in answer.notes)
    llm.reset(*[Reply(status=503, headers={"Retry-After": "0"}) for _ in range(3)])
    with pytest.raises(BrainError, match="failed 3 time"):
        ask(brain(llm, max_retries=2))
