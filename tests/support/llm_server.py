"""A scripted OpenAI-compatible endpoint on 127.0.0.1 for contract tests and benchmarks.

It stands in for the user's LLM endpoint (the one boundary tests may fake): it speaks
POST /v1/chat/completions, answers from a script or a responder function, and records
every request with server-side timestamps so tests can check retries and concurrency.
"""
from __future__ import annotations

import asyncio
import base64
import functools
import io
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from aiohttp import web

from llm_stream import Streams, streamed


@dataclass
class Reply:
    content: Any = None  # str, or a dict/list sent as JSON text
    status: int = 200
    delay: float = 0.0  # seconds before answering
    body: Any = None  # for errors: the JSON body
    raw: str | None = None  # send this text as-is (e.g. HTML)
    reset: bool = False  # drop the connection without answering (a crashed server or a proxy resetting it)
    message: dict | None = None  # the whole assistant message, as a real endpoint's quirk sends it
    finish_reason: str = "stop"
    choices: list | None = None  # e.g. [] (an endpoint that sends no choice)
    headers: dict | None = None  # e.g. {"Retry-After": "2"} on a 429

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else json.dumps(self.content)


@dataclass
class Seen:
    body: dict
    headers: dict
    start: float
    end: float = 0.0
    tokens: int = 0  # the prompt's tokens as the endpoint counted them (when it enforces a context)
    cut: bool = False  # longer than the context: cut silently, as Ollama does, and answered without its start

    @property
    def role(self) -> str:
        fmt = self.body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return fmt["json_schema"]["name"]
        return self.body["messages"][0]["content"].split("\n", 1)[0]

    def system_text(self) -> str:
        content = self.body["messages"][0]["content"]
        return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)

    def user_text(self) -> str:
        content = self.body["messages"][1]["content"]
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")

    def images(self) -> list[str]:
        content = self.body["messages"][1]["content"]
        return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


@functools.lru_cache(maxsize=1)
def qwen_tokenizer():
    """Qwen2.5's own tokenizer (Qwen2.5-VL's, the model the shipped Ollama workflows name), from the files
    ComfyUI ships for its Qwen-Image text encoder: an independent count of what the pack estimates."""
    from transformers import AutoTokenizer

    from helpers import setup_env

    comfy = setup_env().get("COMFYUI_DIR") or str(Path(__file__).resolve().parents[2] / ".setup" / "ComfyUI")
    return AutoTokenizer.from_pretrained(str(Path(comfy) / "comfy" / "text_encoders" / "qwen25_tokenizer"))


def qwen_image_tokens(height: int, width: int) -> int:
    """The tokens Qwen2.5-VL's processor gives an image of this size, its vision markers included."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=28 * 28 * 1280)
    return (h // 28) * (w // 28) + 2


def data_url_size(url: str) -> tuple[int, int]:
    """(height, width) of a base64 image, with or without its data: prefix."""
    from PIL import Image

    raw = base64.b64decode(url.split(",", 1)[1] if url.startswith("data:") else url)
    with Image.open(io.BytesIO(raw)) as im:
        return im.height, im.width


def prompt_tokens(messages: list[dict]) -> int:
    """The prompt tokens of chat ``messages`` as Qwen2.5-VL counts them: its tokenizer on every text part, its
    chat template's markers (5 tokens a message, 3 for the assistant's turn), its grid for every image (OpenAI
    ``image_url`` parts or Ollama's ``images`` list)."""
    tok, total = qwen_tokenizer(), 3
    for message in messages:
        content = message.get("content") or ""
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"] + list(message.get("images") or [])
        texts = [p.get("text", "") for p in parts if p.get("type") == "text"]
        total += 5 + sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
        total += sum(qwen_image_tokens(*data_url_size(u)) for u in urls)
    return total


class ScriptedLLM:
    def __init__(self):
        self.script: list[Reply] = []
        self.responder: Callable[[Seen], Reply] | None = None
        self.seen: list[Seen] = []
        self.latency = 0.0  # added to every answer
        self.context: int | None = None  # enforce a context as Ollama does: a longer prompt is cut, silently
        self.streams = Streams()  # what each streamed answer sent (a Cancel test counts the chunks after Cancel)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self, *script: Reply, responder=None, latency: float = 0.0, context: int | None = None) -> "ScriptedLLM":
        with self._lock:
            self.script = list(script)
            self.responder = responder
            self.seen = []
            self.latency = latency
            self.context = context
        self.streams.reset()
        return self

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen = Seen(body=body, headers=dict(request.headers), start=time.monotonic())
        if self.context is not None:
            seen.tokens = await asyncio.to_thread(prompt_tokens, body.get("messages", []))
            seen.cut = seen.tokens > self.context
        with self._lock:
            self.seen.append(seen)
            if seen.cut:  # what a model that lost the start of its instructions says: not the JSON it was asked
                reply = Reply("Sure! The photo shows a nice scene; I would make it a little brighter.")
            else:
                reply = self.responder(seen) if self.responder else (self.script.pop(0) if self.script else
                                                                     Reply(status=500, body={"error": {"message": "script exhausted"}}))
            latency = self.latency
        await asyncio.sleep(reply.delay + latency)
        seen.end = time.monotonic()
        if reply.reset:
            request.transport.abort()
            return web.Response(status=500)  # never sent: the connection is gone
        if reply.raw is not None:
            return web.Response(text=reply.raw, status=reply.status, content_type="text/html")
        if reply.status != 200:
            return web.json_response(reply.body or {"error": {"message": f"scripted {reply.status}"}}, status=reply.status,
                                     headers=reply.headers)
        text = reply.text()
        message = reply.message or {"role": "assistant", "content": text}
        return web.json_response({
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": ([{"index": 0, "message": message, "finish_reason": reply.finish_reason}]
                        if reply.choices is None else reply.choices),
            "usage": {"prompt_tokens": 100, "completion_tokens": max(1, len(text) // 4), "total_tokens": 100 + max(1, len(text) // 4)},
        })

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", streamed(self._handle, self.streams))
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._runner = runner
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    def start(self) -> "ScriptedLLM":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the scripted LLM server did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def overlapping(seen: list[Seen]) -> bool:
    """True when every request started before the first one ended (they ran concurrently)."""
    first_end = min(s.end for s in seen)
    return all(s.start < first_end for s in seen)
