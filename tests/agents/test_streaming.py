"""Streaming: answers reach ``on_text`` a few times a second while they are written (the OpenAI-compatible brain
over SSE, the Ollama brain over NDJSON), every quirk of a whole answer survives being streamed, an endpoint that
refuses streaming still answers, Cancel closes the stream within a few tokens, and inside ComfyUI the text reaches
the browser as it comes."""
from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request

import numpy as np
import pytest
from PIL import Image

from edit_agents.agents.brain import BrainError, BrainRequest, InvalidAnswerError
from edit_agents.agents.ollama_brain import OllamaBrain
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.roles import interruptible
from edit_agents.agents.streaming import LiveText
from edit_agents.agents.trace import Trace
from llm_server import Reply, ScriptedLLM
from llm_stream import Streams, streamed
from ollama_server import OllamaReply, OllamaStandIn

SCHEMA = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 10},
                                           "why": {"type": "string"}},
          "required": ["score"], "additionalProperties": False}
OLLAMA_MODEL = "qwen2.5vl:7b"
LONG = {"score": 5, "why": "the light falls softly on the cup " * 60}  # about 500 chunks


class StreamingLLM(ScriptedLLM):
    """The scripted endpoint, streaming when asked (tests/support/llm_stream.py). Once tests/support/llm_server.py wires
    ``streamed`` itself, this adds nothing."""

    def __init__(self):
        super().__init__()
        if not hasattr(self, "streams"):
            self.streams = Streams()
            self._handle = streamed(self._handle, self.streams)


@pytest.fixture(scope="session")
def streaming_server():
    server = StreamingLLM().start()
    yield server
    server.stop()


@pytest.fixture()
def sse(streaming_server):
    """The streaming scripted endpoint, emptied for each test."""
    streaming_server.streams.reset()
    return streaming_server.reset()


@pytest.fixture(scope="session")
def ollama_server():
    server = OllamaStandIn(models=(OLLAMA_MODEL,)).start()
    yield server
    server.stop()


@pytest.fixture()
def ollama(ollama_server):
    return ollama_server.reset()


def openai_brain(server, **kw) -> OpenAIBrain:
    return OpenAIBrain(BrainConfig(**{"provider": "custom", "base_url": server.url, "model": "scripted", "backoff": 0.01,
                                      "timeout": 5.0, **kw}))


def ollama_brain(server, **kw) -> OllamaBrain:
    return OllamaBrain(BrainConfig(**{"provider": "ollama", "base_url": server.url, "model": OLLAMA_MODEL,
                                      "backoff": 0.01, "timeout": 5.0, **kw}))


def request(on_text=None) -> BrainRequest:
    return BrainRequest(role="expert", system="You are a critic.", text="Score it.", schema=SCHEMA, on_text=on_text)


def ask(b, on_text=None):
    async def go():
        try:
            return await b.ask(request(on_text))
        finally:
            await b.aclose()
    return asyncio.run(go())


# -- the OpenAI-compatible brain streams ---------------------------------------------------------------

def test_the_answer_streams_into_on_text_a_few_times_a_second(sse):
    sse.reset(Reply(LONG))
    sse.streams.reset(token_delay=0.005)
    shown: list[str] = []
    answer = ask(openai_brain(sse), shown.append)
    body = sse.seen[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    sent = sse.streams.sent[0]
    assert sent.finished and answer.data == LONG
    assert shown[-1] == json.dumps(LONG) and len(set(shown)) >= 3 and all(shown[-1].startswith(s) for s in shown)
    assert len(shown) < sent.total / 4  # throttled: not once per token
    assert answer.tokens_in == 100 and answer.tokens_out == len(json.dumps(LONG)) // 4  # the usage chunk


def test_every_shape_of_answer_survives_streaming(sse):
    """Content parts, a tool call's arguments, a refusal, no choice at all, a cut-off answer: what the whole answers
    of tests/agents/test_openai_brain.py hold, sent as chunks."""
    parts = {"role": "assistant", "content": [{"type": "text", "text": '{"score": '}, {"type": "text", "text": "6}"}]}
    tool_call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "answer", "arguments": '{"score": 7}'}}]}
    thinking = {"role": "assistant", "content": '{"score": 3}', "reasoning_content": "{\"score\": 0} would be wrong"}
    sse.reset(Reply(message=parts), Reply(message=tool_call), Reply(message=thinking))
    b = openai_brain(sse)
    assert [ask(b).data["score"] for _ in range(3)] == [6, 7, 3]
    assert [s.finished for s in sse.streams.sent] == [True] * 3
    sse.reset(Reply(message={"role": "assistant", "content": None, "refusal": "I can't help with that."}))
    with pytest.raises(InvalidAnswerError, match="refused the expert request: I can't help with that"):
        ask(b)
    sse.reset(Reply(choices=[]), Reply({"score": 2}))
    answer = ask(b)
    assert answer.data == {"score": 2} and any("sent no choices" in n for n in answer.notes)
    sse.reset(Reply('{"score": ', finish_reason="length"), Reply({"score": 9}))
    answer = ask(openai_brain(sse, max_tokens=100))
    assert answer.data == {"score": 9} and sse.seen[1].body["max_tokens"] == 200


def test_an_endpoint_that_refuses_streaming_gets_whole_requests(sse):
    sse.reset(Reply(status=400, body={"error": {"message": "stream_options: unknown field"}}),
              Reply(status=400, body={"error": {"message": "'stream' is not supported by this server"}}),
              Reply({"score": 4}), Reply({"score": 5}))
    b = openai_brain(sse)
    answer = ask(b)
    assert answer.data == {"score": 4}
    first, second, third = (s.body for s in sse.seen[:3])
    assert first["stream"] and "stream_options" in first
    assert second["stream"] and "stream_options" not in second
    assert "stream" not in third and "stream_options" not in third
    assert any("refused stream_options" in n for n in answer.notes) and any("refused streaming" in n for n in answer.notes)
    assert ask(b).data == {"score": 5} and "stream" not in sse.seen[3].body  # remembered for the next call


def test_an_endpoint_that_ignores_stream_answers_whole(llm):
    """The plain scripted endpoint answers a whole completion even when asked to stream, as some servers do."""
    llm.reset(Reply({"score": 8}))
    shown: list[str] = []
    answer = ask(openai_brain(llm), shown.append)
    assert answer.data == {"score": 8} and answer.tokens_in == 100 and llm.seen[0].body.get("stream") is True


def test_a_proxy_page_where_a_stream_was_asked_is_reported(sse):
    sse.reset(Reply(raw="<html>gateway</html>"))
    with pytest.raises(BrainError, match="did not answer like an OpenAI-compatible endpoint.*<html>gateway"):
        ask(openai_brain(sse))


# -- what the watcher gets ---------------------------------------------------------------------------

def test_live_text_is_throttled_and_always_ends_with_the_whole_text():
    every: list[str] = []
    live = LiveText(every.append, every=0.0)
    for piece in ("{", '"a"', ": 1", "}"):
        live.add(piece)
    live.end()
    assert every == ["{", '{"a"', '{"a": 1', '{"a": 1}']  # end adds nothing new
    seldom: list[str] = []
    live = LiveText(seldom.append, every=3600.0)
    for piece in ("{", '"a"', ": 1", "}"):
        live.add(piece)
    live.end()
    assert seldom == ["{", '{"a": 1}']  # the first piece at once, then the whole text at the end


def test_a_watcher_that_fails_does_not_fail_the_answer(sse):
    def broken(_text):
        raise OSError("the websocket is gone")
    sse.reset(Reply({"score": 1}))
    assert ask(openai_brain(sse), broken).data == {"score": 1}


def test_the_trace_passes_live_text_to_its_streamer_or_its_listeners():
    heard: list[tuple] = []
    trace = Trace(streamer=lambda *a: heard.append(("streamer",) + a))
    trace.live("planner", "generator-1", "{")

    class Sender:  # as the nodes' step sender: a listener with a streamer
        def __call__(self, step):
            pass

        def streamer(self, *a):
            heard.append(("listener",) + a)
    Trace(listener=Sender()).live("perceiver", "photoagent", '{"sc')
    Trace().live("expert", "expert-1", "{")  # nobody watches: nothing happens
    assert heard == [("streamer", "planner", "generator-1", "{"), ("listener", "perceiver", "photoagent", '{"sc')]


# -- Cancel ------------------------------------------------------------------------------------------

class Cancelled(Exception):
    pass


def cancel_after(b, records, tokens: int) -> int:
    """Ask ``b`` as a role does (``interruptible``), press Cancel once the endpoint has sent ``tokens`` chunks;
    returns how many it had sent when Cancel was pressed."""
    pressed = threading.Event()
    at_cancel = {}

    def should_stop():
        if pressed.is_set():
            raise Cancelled()

    async def go():
        task = asyncio.ensure_future(interruptible(b.ask(request()), should_stop))
        for _ in range(2000):  # bounded: 20 s at most
            if records() and records()[-1].chunks >= tokens:
                break
            await asyncio.sleep(0.01)
        at_cancel["chunks"] = records()[-1].chunks
        pressed.set()
        with pytest.raises(Cancelled):
            await task
        await b.aclose()
    asyncio.run(go())
    return at_cancel["chunks"]


@pytest.mark.parametrize("which", ["openai-compatible", "ollama"])
def test_cancel_closes_the_stream_within_a_few_tokens(which, sse, ollama):
    if which == "ollama":
        ollama.reset(OllamaReply(LONG), token_delay=0.02)
        b, records = ollama_brain(ollama), (lambda: ollama.chats)
    else:
        sse.reset(Reply(LONG))
        sse.streams.reset(token_delay=0.02)
        b, records = openai_brain(sse), (lambda: sse.streams.sent)
    at_cancel = cancel_after(b, records, tokens=10)
    sent = records()[-1]
    assert sent.done.wait(10), "the endpoint is still streaming"
    assert sent.disconnected and not sent.finished
    # Cancel is seen at the next poll (every 0.1 s: 5 tokens at 20 ms each), then the stream is closed at once
    assert sent.chunks - at_cancel <= 10, (at_cancel, sent.chunks)
    assert sent.chunks < sent.total / 4


# -- inside ComfyUI: the browser sees the text as it comes, and Cancel stops the stream --------------------

@pytest.fixture(scope="module")
def photo(comfy_server, photos):
    Image.fromarray((photos["coffee"][::2, ::2] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cup.png")
    return "cup.png"


RULE = {"provider": "rule (offline)", "model": "", "base_url": "", "api_key_env": "", "temperature": 0.2,
        "max_tokens": 1024, "timeout": 60.0, "image_side": 768, "concurrency": 4, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0}
PLAN = {"subtasks": [{"goal": "warm the light", "tool": "temperature_tint", "rationale": "asked " * 40}], "notes": ""}


def planner_prompt(photo: str, **brain) -> dict:
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": {"class_type": "EditAgentsBrain", "inputs": {**RULE, **brain}},
        "p": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["1", 0], "instruction": "warmer", "mode": "instructed", "mood": "", "caption": "",
            "rerun_every_time": True, "brain": ["b", 0]}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["p", 1]}},
    }


def run_watching(server_url: str, prompt: dict) -> tuple[list[dict], list[tuple[str, str]]]:
    """Queue ``prompt`` as the browser does and keep what the server sends it until the prompt ends: the JSON
    events, and the progress texts (node, text; ComfyUI's binary TEXT messages, which the frontend shows on the
    node)."""
    import struct
    import uuid

    import aiohttp

    async def go():
        client_id, events, texts = uuid.uuid4().hex, [], []
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{server_url}/ws?clientId={client_id}") as ws:
                async with session.post(f"{server_url}/prompt", json={"prompt": prompt, "client_id": client_id}) as r:
                    prompt_id = (await r.json())["prompt_id"]
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.BINARY and struct.unpack(">I", msg.data[:4])[0] == 3:  # TEXT
                        size = struct.unpack(">I", msg.data[4:8])[0]
                        texts.append((msg.data[8:8 + size].decode(), msg.data[8 + size:].decode()))
                    elif msg.type == aiohttp.WSMsgType.TEXT:
                        events.append(json.loads(msg.data))
                        data = events[-1].get("data") or {}
                        if data.get("prompt_id") == prompt_id and (events[-1]["type"] in ("execution_error", "execution_success")):
                            break
                    elif msg.type != aiohttp.WSMsgType.BINARY:
                        break
        return events, texts
    return asyncio.run(asyncio.wait_for(go(), 300))


def test_the_browser_gets_the_planner_answer_as_it_streams(comfy_server, photo, sse):
    sse.reset(Reply(PLAN))
    sse.streams.reset(token_delay=0.01)
    events, texts = run_watching(comfy_server.url, planner_prompt(photo, provider="custom", model="scripted",
                                                                  base_url=sse.url))
    assert events[-1]["type"] == "execution_success", events[-1]
    live = [e["data"] for e in events if e["type"] == "edit_agents.trace_live"]
    shown = [d["text"] for d in live]
    assert len(set(shown)) >= 3 and shown[-1] == json.dumps(PLAN) and all(shown[-1].startswith(t) for t in shown)
    assert {(d["node"], d["role"], d["agent"]) for d in live} == {("p", "planner", "planner")}
    steps = [i for i, e in enumerate(events) if e["type"] == "edit_agents.trace_step" and e["data"]["node"] == "p"]
    first_live = next(i for i, e in enumerate(events) if e["type"] == "edit_agents.trace_live")
    assert steps and first_live < steps[-1]  # the text came while the call ran, before its step landed
    writing = [t for node, t in texts if node == "p" and t.startswith("planner (planner) writing: ")]
    assert len(set(writing)) >= 3  # the node's progress text follows the answer
    assert writing[-1].endswith(json.dumps(PLAN)[-200:]) and len(writing[-1]) <= 230  # its last 200 characters


def test_the_ollama_brain_node_sends_what_it_was_told(comfy, photo, ollama):
    ollama.reset(OllamaReply(PLAN))
    comfy.call("run", planner_prompt(photo, provider="ollama", model=OLLAMA_MODEL, base_url=ollama.url + "/v1",
                                     context=8192, keep_alive="10m", seed=5))
    body = ollama.chats[0].body
    assert body["options"]["num_ctx"] == 8192 and body["options"]["seed"] == 5 and body["keep_alive"] == "10m"
    assert body["format"]["properties"].keys() >= {"subtasks"} and len(body["messages"][1]["images"]) >= 1


def test_cancel_in_comfyui_stops_the_stream_within_a_few_tokens(comfy, comfy_server, photo, sse):
    sse.reset(Reply({**PLAN, "notes": "still thinking " * 600}))  # about 2000 chunks: 40 s unless stopped
    sse.streams.reset(token_delay=0.02)
    outcome: dict = {}

    def run():
        try:
            comfy.call("run", planner_prompt(photo, provider="custom", model="scripted", base_url=sse.url))
            outcome["done"] = True
        except RuntimeError as err:
            outcome["error"] = str(err)
    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 60
    while not (sse.streams.sent and sse.streams.sent[-1].chunks >= 10) and time.monotonic() < deadline:
        time.sleep(0.01)
    at_cancel = sse.streams.sent[-1].chunks
    urllib.request.urlopen(urllib.request.Request(comfy_server.url + "/interrupt", data=b"", method="POST"), timeout=10)
    worker.join(timeout=60)
    assert "interrupted" in outcome.get("error", ""), outcome
    sent = sse.streams.sent[-1]
    assert sent.done.wait(10) and sent.disconnected and not sent.finished
    assert sent.chunks - at_cancel <= 15, (at_cancel, sent.chunks)  # the node polls Cancel every 0.1 s
    assert len(sse.seen) == 1  # not retried after Cancel


def test_a_key_the_endpoint_echoes_is_never_shown_while_it_streams(sse, monkeypatch):
    secret = "sk-streaming-test-5e1d9c3b7a"
    monkeypatch.setenv("EDIT_AGENTS_STREAM_KEY", secret)
    sse.reset(Reply({"score": 3, "why": f"your key is {secret}, and again {secret} " + "padding " * 40}))
    sse.streams.reset(token_delay=0.002)
    shown: list[str] = []
    answer = ask(openai_brain(sse, api_key_env="EDIT_AGENTS_STREAM_KEY"), shown.append)
    assert len(shown) >= 2 and "[redacted]" in shown[-1] and answer.data["why"].startswith("your key is [redacted]")
    assert not any(secret[:6] in s for s in shown)  # not even the start of it, cut mid-stream


def test_redacting_holds_back_what_could_be_the_start_of_the_key():
    from edit_agents.agents.streaming import redacting

    shown: list[str] = []
    show = redacting(shown.append, "sk-abcdef123")
    for text in ("key: sk-ab", "key: sk-abcdef123 ok", "s"):
        show(text)
    assert shown == ["key: ", "key: [redacted] ok", ""]
    assert redacting(None, "sk-abcdef123") is None and redacting(shown.append, None) == shown.append


@pytest.mark.browser
def test_the_trace_panel_shows_an_answer_while_it_streams(page, comfy_server, photos, sse, artifacts):  # noqa: F811
    """photoagent.json's perceiver on the streaming endpoint, run from the Run button: the panel shows a live line
    with the perceiver's text while it is written, and the line goes when the step lands."""
    from browser import load_with_photo, open_trace_panel, press_run

    why = "the fur looks flat and a little dull in this light " * 4
    sse.reset(responder=lambda seen: Reply({"scene": "a cat", "actions": [
        {"tool": "contrast", "params": {"amount": 0.25}, "rationale": why},
        {"tool": "vibrance", "params": {"amount": 0.3}, "rationale": why}]}))
    sse.streams.reset(token_delay=0.02)  # about 4 s an answer
    load_with_photo(page, comfy_server, "photoagent.json", photos["chelsea"][::2, ::2] * 0.7, "dim_cat_live.png")
    page.evaluate("""(url) => {
        const set = (type, values) => {
            const node = window.app.graph._nodes.find((n) => n.type === type);
            for (const [name, value] of Object.entries(values)) node.widgets.find((w) => w.name === name).value = value;
        };
        set('EditAgentsBrain', {provider: 'custom', model: 'scripted-vlm', base_url: url});
        set('EditAgentsMCTSPlanner', {simulations: 4, max_steps: 1, perceiver_calls: 1});
    }""", sse.url)
    open_trace_panel(page)  # on its steps view: the view it opens on
    store = "window.app.extensions.find((e) => e.name === 'editagents.core').traceStore"
    before = page.evaluate(f"() => {store}.runs.length")
    press_run(page)
    line = page.locator(".ea-live-line[data-role=perceiver]")
    line.wait_for(state="visible", timeout=120_000)
    page.wait_for_function("() => [...document.querySelectorAll('.ea-live-line')].some((l) => "
                           "l.textContent.includes('\"actions\"'))", timeout=60_000)  # it grows as it streams
    shown = line.inner_text()
    page.screenshot(path=str(artifacts / "trace_panel_live.png"))
    assert shown.startswith("perceiver") and "writing:" in shown and '{"scene": "a cat", "actions"' in shown
    page.wait_for_function(f"(n) => {{ const r = {store}.runs; return r.length > n && r[r.length - 1].status === 'done'; }}",
                           arg=before, timeout=240_000)
    assert page.locator(".ea-live-line").count() == 0  # replaced by the steps that landed
    assert page.locator(".ea-step[data-role=perceiver]").count() >= 1
