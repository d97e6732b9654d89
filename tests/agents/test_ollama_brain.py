"""The Ollama brain against a stand-in that speaks Ollama's native API (tests/support/ollama_server.py): what it sends
(num_ctx, keep_alive, format, images, seed), what it makes of Ollama's answers and errors, and unloading Ollama's
models before a large model loads."""
from __future__ import annotations

import asyncio
import base64
import gc
import io
import logging
import socket

import numpy as np
import pytest
from PIL import Image

from edit_agents.agents.brain import BrainError, BrainRequest
from edit_agents.agents.ollama_brain import OllamaBrain, keep_alive_value, ollama_root
from edit_agents.agents.openai_brain import BrainConfig
from edit_agents.tools.models import large_model_loading
from ollama_server import OllamaReply, OllamaStandIn, cut_to_fit

MODEL = "qwen2.5vl:7b"
SCHEMA = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 10},
                                           "why": {"type": "string"}},
          "required": ["score"], "additionalProperties": False}


@pytest.fixture(scope="session")
def ollama_server():
    server = OllamaStandIn(models=(MODEL, "llama3.2:3b")).start()
    yield server
    server.stop()


@pytest.fixture()
def ollama(ollama_server):
    """The stand-in, emptied for each test."""
    return ollama_server.reset()


def brain(server, **kw) -> OllamaBrain:
    cfg = dict(provider="ollama", base_url=server.url + "/v1", model=MODEL, backoff=0.01, timeout=5.0)
    cfg.update(kw)
    return OllamaBrain(BrainConfig(**cfg))


def ask(b, images=(), on_text=None, role="expert"):
    async def go():
        try:
            return await b.ask(BrainRequest(role=role, system="You are a critic.", text="Score it.", schema=SCHEMA,
                                            images=list(images), on_text=on_text))
        finally:
            await b.aclose()
    return asyncio.run(go())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- what it sends -----------------------------------------------------------------------------------

def test_the_request_carries_the_context_keep_alive_schema_images_and_seed(ollama, photos):
    ollama.reset(OllamaReply({"score": 7}), OllamaReply({"score": 6}))
    answer = ask(brain(ollama, context=8192, keep_alive="10m", seed=42), images=[photos["coffee"]])
    assert answer.data == {"score": 7} and answer.brain == f"ollama/{MODEL}"
    body = ollama.chats[0].body
    assert body["model"] == MODEL and body["stream"] is True and body["format"] == SCHEMA
    assert body["options"] == {"num_ctx": 8192, "temperature": 0.2, "num_predict": 1024, "seed": 42}
    assert body["keep_alive"] == "10m"
    system, user = body["messages"]
    assert system["role"] == "system" and user == {"role": "user", "content": "Score it.", "images": user["images"]}
    assert len(user["images"]) == 1 and not user["images"][0].startswith("data:")  # base64 alone, as Ollama takes it
    picture = Image.open(io.BytesIO(base64.b64decode(user["images"][0])))
    assert picture.format == "JPEG" and max(picture.size) <= 768

    ask(brain(ollama))  # the defaults: Ollama's context for a local server, its own keep_alive, no seed
    body = ollama.chats[1].body
    assert body["options"] == {"num_ctx": 4096, "temperature": 0.2, "num_predict": 1024}
    assert "keep_alive" not in body


@pytest.mark.parametrize("structured, sent", [("json_object", "json"), ("prompt", None)])
def test_the_other_structured_modes_send_json_or_nothing_and_put_the_schema_in_the_prompt(ollama, structured, sent):
    ollama.reset(OllamaReply({"score": 3}))
    ask(brain(ollama, structured=structured))
    body = ollama.chats[0].body
    assert body.get("format") == sent
    assert '"required":["score"]' in body["messages"][0]["content"]


def test_keep_alive_and_the_url_take_every_form_a_user_writes():
    assert keep_alive_value("") is None and keep_alive_value("  ") is None
    assert keep_alive_value("0") == 0 and keep_alive_value("-1") == -1 and keep_alive_value("300") == 300
    assert keep_alive_value("2.5") == 2.5 and keep_alive_value("5m") == "5m" and keep_alive_value("1h30m") == "1h30m"
    with pytest.raises(BrainError, match="keep_alive '5 minutes' is not a duration Ollama reads: write 5m"):
        OllamaBrain(BrainConfig(provider="ollama", model=MODEL, keep_alive="5 minutes"))
    for url in ("http://127.0.0.1:11434", "http://127.0.0.1:11434/", "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/api", "", None):
        assert ollama_root(url) == "http://127.0.0.1:11434", url
    assert ollama_root("https://gpu-box.lan/ollama/v1") == "https://gpu-box.lan/ollama"


@pytest.mark.parametrize("suffix", ["", "/v1", "/api"])
def test_a_base_url_of_any_form_reaches_the_native_api(ollama, suffix):
    ollama.reset(OllamaReply({"score": 5}))
    assert ask(brain(ollama, base_url=ollama.url + suffix)).data == {"score": 5}
    assert len(ollama.chats) == 1


def test_a_hotter_resampled_brain_keeps_the_server_and_sends_its_own_seed(ollama):
    ollama.reset(OllamaReply({"score": 1}))
    hot = brain(ollama, keep_alive="-1").resampled(temperature=0.9, seed=7)
    assert isinstance(hot, OllamaBrain) and hot.root == ollama.url
    ask(hot)
    body = ollama.chats[0].body
    assert body["options"]["temperature"] == 0.9 and body["options"]["seed"] == 7 and body["keep_alive"] == -1


# -- what it makes of the answers --------------------------------------------------------------------

def test_tokens_come_from_the_final_line_and_the_text_streams(ollama):
    ollama.reset(OllamaReply({"score": 8, "why": "balanced light " * 8}), token_delay=0.02)
    shown: list[str] = []
    answer = ask(brain(ollama), on_text=shown.append)
    call = ollama.chats[0]
    assert answer.tokens_in == 100 and answer.tokens_out == call.total  # prompt_eval_count, eval_count
    assert shown[-1] == OllamaReply({"score": 8, "why": "balanced light " * 8}).text()
    assert len(set(shown)) >= 3 and all(shown[-1].startswith(s) for s in shown)  # growing prefixes
    assert len(shown) < call.total / 2  # a few times a second, not once per token


def test_an_answer_cut_off_at_num_predict_gets_more_room_once(ollama):
    ollama.reset(OllamaReply('{"score": ', done_reason="length"), OllamaReply({"score": 9}))
    answer = ask(brain(ollama, max_tokens=100))
    assert answer.data == {"score": 9} and [c.body["options"]["num_predict"] for c in ollama.chats] == [100, 200]
    assert any("cut off at max_tokens" in n for n in answer.notes)


def test_an_invalid_answer_is_asked_again_with_the_problem(ollama):
    ollama.reset(OllamaReply({"score": 42}), OllamaReply({"score": 4}))
    assert ask(brain(ollama)).data == {"score": 4}
    reask = ollama.chats[1].body["messages"]
    assert reask[-2]["role"] == "assistant" and "maximum of 10" in reask[-1]["content"]
    assert reask[1]["images"] == ollama.chats[0].body["messages"][1]["images"]  # the same question, images and all


def test_a_server_error_is_retried_then_named(ollama):
    ollama.reset(OllamaReply(status=500, error="runner crashed"), OllamaReply({"score": 5}))
    answer = ask(brain(ollama))
    assert answer.data == {"score": 5} and any("HTTP 500" in n and "runner crashed" in n for n in answer.notes)
    ollama.reset(*[OllamaReply(status=503, error="server busy")] * 3)
    with pytest.raises(BrainError, match=r"failed 3 time\(s\), last: HTTP 503.*ollama serve"):
        ask(brain(ollama, max_retries=2))


def test_an_error_in_the_middle_of_a_stream_is_retried(ollama):
    ollama.reset(OllamaReply({"score": 2, "why": "dark"}, error="out of memory", error_after=3), OllamaReply({"score": 2}))
    answer = ask(brain(ollama))
    assert answer.data == {"score": 2} and any("out of memory" in n for n in answer.notes)


def test_a_model_that_is_not_pulled_names_ollama_pull(ollama):
    with pytest.raises(BrainError, match=r"no model 'llava:13b': run `ollama pull llava:13b`.*llama3.2:3b, qwen2.5vl:7b"):
        ask(brain(ollama, model="llava:13b"))
    assert len(ollama.chats) == 1  # not retried: pulling is the user's to do


def test_an_unreachable_server_is_named_with_what_to_run():
    port = free_port()
    b = OllamaBrain(BrainConfig(provider="ollama", base_url=f"http://127.0.0.1:{port}", model=MODEL, max_retries=1,
                                backoff=0.01))
    with pytest.raises(BrainError, match=rf"http://127.0.0.1:{port} failed 2 time\(s\), last: connection error.*"
                                         rf"`ollama serve`\) at http://127.0.0.1:{port}"):
        ask(b)


def test_an_html_page_and_a_refused_format_are_told_apart(ollama):
    ollama.reset(OllamaReply(raw="<html>gateway</html>", status=502), OllamaReply(raw="<html>gateway</html>", status=502))
    with pytest.raises(BrainError, match="HTTP 502 .<html>gateway"):
        ask(brain(ollama, max_retries=1))
    ollama.reset(OllamaReply(raw="<html>a login page</html>"))
    with pytest.raises(BrainError, match="did not answer like Ollama .it sent '<html>a login page.*check the base URL"):
        ask(brain(ollama))
    ollama.reset(OllamaReply(status=400, error="invalid format: expected \"json\" or a JSON schema"),
                 OllamaReply({"score": 6}))
    answer = ask(brain(ollama))
    assert answer.data == {"score": 6} and ollama.chats[1].body["format"] == "json"  # an older Ollama's format
    assert '"required":["score"]' in ollama.chats[1].body["messages"][0]["content"]  # the schema now in the prompt
    assert any("refused format json_schema" in n for n in answer.notes)


# -- the stand-in's context hook (for the lead's context-limit tests) -------------------------------

def test_the_stand_in_cuts_a_prompt_longer_than_num_ctx_oldest_text_first(ollama):
    def count(body):  # a crude tokenizer: 4 characters a token
        return sum(len(m.get("content", "")) for m in body["messages"]) // 4

    ollama.reset(OllamaReply({"score": 1}), OllamaReply({"score": 1}), count=count)
    b = brain(ollama, context=4096)
    ask(b)
    assert not ollama.chats[0].truncated and ollama.chats[0].model_saw is None
    long = {"model": MODEL, "options": {"num_ctx": 512},
            "messages": [{"role": "system", "content": "rules " * 600}, {"role": "user", "content": "the photo"}]}
    cut = cut_to_fit(long, count, 512)
    assert count(cut) <= 512 and cut["messages"][1]["content"] == "the photo"  # the end kept, as Ollama keeps it
    assert cut["messages"][0]["content"] and long["messages"][0]["content"] == "rules " * 600  # the request untouched


# -- unloading before a large model loads --------------------------------------------------------------

def test_unload_asks_for_every_loaded_model_with_keep_alive_0(ollama):
    ollama.reset(loaded=(MODEL, "llama3.2:3b"))
    assert sorted(asyncio.run(brain(ollama).unload())) == ["llama3.2:3b", MODEL]
    assert sorted(ollama.unloads) == ["llama3.2:3b", MODEL] and ollama.loaded == []
    assert all(c.body["keep_alive"] == 0 for c in ollama.requests("/api/generate"))


def test_unloading_from_an_unreachable_server_is_a_warning_not_an_error(caplog):
    port = free_port()
    b = OllamaBrain(BrainConfig(provider="ollama", base_url=f"http://127.0.0.1:{port}", model=MODEL,
                                unload_before_models=True))
    with caplog.at_level(logging.WARNING):
        large_model_loading("an editor")  # the hook runs, fails, and the load goes on
    assert b.unload_now() == []
    assert f"http://127.0.0.1:{port}" in caplog.text and "ollama serve" in caplog.text


def clip_and_aesthetic(tmp_path):
    """The pack's smallest real load path: the aesthetic reward's CLIP and head, tiny random weights."""
    from tiny_models import build_aesthetic_head, build_clip

    from edit_agents.tools.models import ToolRuntime
    from edit_agents.tools.scorers import AestheticScorer

    build_clip(tmp_path / "clip-hf" / "tiny-clip")
    build_aesthetic_head(tmp_path / "aesthetic" / "tiny-aesthetic.pth")
    runtime = ToolRuntime({"clip-hf": [tmp_path / "clip-hf"], "aesthetic": [tmp_path / "aesthetic"]})
    return runtime, AestheticScorer(runtime)


@pytest.mark.parametrize("unload", [True, False])
def test_ollama_unloads_before_a_large_model_loads_when_the_brain_says_so(ollama, tmp_path, photos, unload):
    runtime, scorer = clip_and_aesthetic(tmp_path)
    ollama.reset(OllamaReply({"score": 7}))
    b = brain(ollama, unload_before_models=unload)
    ask(b)  # the VLM is now loaded in Ollama
    assert ollama.loaded == [MODEL]
    loads_at_unload: list[dict] = []
    ollama.on_unload = lambda model: loads_at_unload.append(dict(runtime.loads))
    scorer.measure(photos["coffee"], "")
    assert sum(runtime.loads.values()) == 2  # CLIP and the head were loaded
    if unload:
        assert ollama.unloads == [MODEL] and ollama.loaded == []
        assert loads_at_unload == [{}]  # before CLIP was placed on its device
    else:
        assert ollama.unloads == [] and ollama.requests("/api/ps") == [] and ollama.loaded == [MODEL]
    scorer.measure(photos["astronaut"], "")  # nothing asked of Ollama since: nothing to unload, nothing asked
    assert len(ollama.requests("/api/ps")) == (1 if unload else 0)


def test_a_brain_that_is_gone_asks_nothing_more(ollama):
    ollama.reset(loaded=(MODEL,))
    b = brain(ollama, unload_before_models=True)
    del b
    gc.collect()
    large_model_loading("an editor")
    assert ollama.requests("/api/ps") == [] and ollama.loaded == [MODEL]


# -- inside ComfyUI: an unload before ComfyUI's own loader's model goes onto the device -----------------

@pytest.fixture(scope="module")
def cup(comfy_server, photos):
    Image.fromarray((photos["coffee"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "cup4.png")
    return "cup4.png"


def plan_then_vae(photo: str, ollama_url: str, unload: bool) -> dict:
    """The Ollama brain plans; then ComfyUI's own VAE (from a checkpoint loader) encodes the edited photo."""
    brain = {"provider": "ollama", "model": MODEL, "base_url": ollama_url, "api_key_env": "", "temperature": 0.2,
             "max_tokens": 1024, "timeout": 30.0, "image_side": 768, "concurrency": 4, "max_retries": 0,
             "structured_output": "json_schema", "rule_boldness": 1.0, "unload_before_models": unload}
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": photo}},
        "b": {"class_type": "EditAgentsBrain", "inputs": brain},
        "p": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["1", 0], "instruction": "warmer", "mode": "instructed", "mood": "", "caption": "",
            "rerun_every_time": True, "brain": ["b", 0]}},
        "e": {"class_type": "EditAgentsExecutor", "inputs": {"image": ["1", 0], "plan": ["p", 0], "trace": ["p", 1],
                                                            "rerun_every_time": True}},
        "ckpt": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "tiny-sd15.safetensors"}},
        "enc": {"class_type": "VAEEncode", "inputs": {"pixels": ["e", 0], "vae": ["ckpt", 2]}},
        "dec": {"class_type": "VAEDecode", "inputs": {"samples": ["enc", 0], "vae": ["ckpt", 2]}},
        "out": {"class_type": "PreviewImage", "inputs": {"images": ["dec", 0]}},
    }


@pytest.mark.parametrize("unload", [False, True])
def test_comfyui_loading_a_model_unloads_ollama_first_when_the_brain_says_so(comfy, cup, ollama, unload):
    ollama.reset(OllamaReply({"subtasks": [{"goal": "warm the light", "tool": "temperature_tint"}], "notes": ""}))
    comfy.call("run", plan_then_vae(cup, ollama.url, unload))
    paths = [c.path for c in ollama.calls]
    if unload:  # the plan loaded the VLM; the VAE's load (after it, by the graph) asked Ollama to let it go
        assert paths[0] == "/api/chat" and "/api/ps" in paths and ollama.unloads == [MODEL] and ollama.loaded == []
    else:
        assert paths == ["/api/chat"] and ollama.loaded == [MODEL]


def test_a_key_for_a_proxy_in_front_of_ollama_is_sent_and_never_shown(ollama, monkeypatch):
    secret = "proxy-key-9d8c7b6a5f4e"
    monkeypatch.setenv("EDIT_AGENTS_OLLAMA_PROXY_KEY", secret)
    ollama.reset(OllamaReply({"score": 4, "why": f"you sent {secret}"}), loaded=(MODEL,))
    b = brain(ollama, api_key_env="EDIT_AGENTS_OLLAMA_PROXY_KEY")
    shown: list[str] = []
    answer = ask(b, on_text=shown.append)
    assert answer.data["why"] == "you sent [redacted]" and not any(secret in s for s in shown)
    assert b.unload_now() == [MODEL]  # the unload goes through the proxy too
    assert {c.headers.get("Authorization") for c in ollama.calls} == {f"Bearer {secret}"}
    monkeypatch.delenv("EDIT_AGENTS_OLLAMA_PROXY_KEY")
    with pytest.raises(BrainError, match="EDIT_AGENTS_OLLAMA_PROXY_KEY, which is not set"):
        ask(b)
    far = OllamaBrain(BrainConfig(provider="ollama", base_url="http://192.0.2.7:11434", model=MODEL,
                                  api_key_env="HOME"))
    with pytest.raises(BrainError, match="refusing to send the API key from HOME over plain HTTP"):
        ask(far)


def test_a_runaway_answer_is_read_only_to_its_limit_then_re_asked(ollama):
    """An endpoint that streams far past max_tokens (here 2 MB) is cut off once the answer passes what max_tokens
    allows (``answer_limit``), its stream closed, and the text validated as it is: re-asked, not read to its end."""
    from edit_agents.agents.streaming import answer_limit

    ollama.reset(OllamaReply("x" * 2_000_000), OllamaReply({"score": 7}))
    answer = ask(brain(ollama, max_tokens=64))
    assert answer.data == {"score": 7} and len(ollama.chats) == 2
    first = ollama.chats[0]
    assert first.done.wait(5) and not first.finished  # the client went away before the end
    # read to the limit (65,536 characters), not 2 MB; what the server wrote includes what sat in socket buffers
    assert first.chunks * 4 < 4 * answer_limit(64) < first.total * 4
    assert any("rejected" in n for n in answer.notes)
