"""A stand-in for Ollama on 127.0.0.1, speaking its native API, for the Ollama brain's tests.

It stands in for the user's Ollama (the one boundary tests may fake): ``POST /api/chat`` answers from a script or a
responder, streamed as NDJSON lines (``{"message": {"content": ...}, "done": false}`` ... a final line with
``done_reason``, ``prompt_eval_count`` and ``eval_count``) or whole when the request says ``"stream": false``;
``POST /api/generate`` with ``keep_alive`` 0 and no prompt unloads a model; ``GET /api/ps`` lists the loaded
models and ``GET /api/tags`` the pulled ones. A chat for a model not pulled gets Ollama's 404. Every request (its
body and headers) is recorded, with what each stream sent and whether the client went away before its end.

Context: given ``count`` (a request body -> its prompt tokens), a chat whose prompt is longer than its
``options.num_ctx`` (4096 when unset, Ollama's default under 24 GiB) is cut as Ollama cuts it, silently: the
oldest message text goes first. The request is marked ``truncated`` and ``model_saw`` holds what is left.
"""
from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

OLLAMA_DEFAULT_CONTEXT = 4096
TOKEN_CHARS = 4  # one streamed line: about one token


@dataclass
class OllamaReply:
    content: Any = None  # str, or a dict/list sent as JSON text
    status: int = 200
    error: str = ""  # an error status's {"error": ...}; with status 200, sent as a line after ``error_after`` tokens
    error_after: int = 0
    done_reason: str = "stop"  # or "length"
    raw: str | None = None  # sent as-is, as text/html (a proxy's page)

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else json.dumps(self.content)


@dataclass
class Call:
    path: str
    body: dict
    headers: dict = field(default_factory=dict)
    truncated: bool = False
    model_saw: dict | None = None  # the chat as the model saw it after a cut; None when nothing was cut
    total: int = 0  # text lines the answer has
    chunks: int = 0  # text lines written
    finished: bool = False
    disconnected: bool = False
    done: threading.Event = field(default_factory=threading.Event, repr=False)  # set when the answer ends


def cut_to_fit(body: dict, count: Callable[[dict], int], limit: int) -> dict | None:
    """The chat as a model with ``limit`` tokens of context sees it: the oldest message text dropped a tenth at a
    time until ``count`` fits; None when it fits as it is."""
    if count(body) <= limit:
        return None
    cut = copy.deepcopy(body)
    for message in cut.get("messages", []):
        while message.get("content") and count(cut) > limit:
            text = message["content"]
            message["content"] = text[max(1, len(text) // 10):]
        if count(cut) <= limit:
            break
    return cut


class OllamaStandIn:
    def __init__(self, models: tuple[str, ...] = ("qwen2.5vl:7b",), count: Callable[[dict], int] | None = None):
        self.pulled = set(models)
        self.count = count
        self.loaded: list[str] = []
        self.calls: list[Call] = []
        self.script: list[OllamaReply] = []
        self.responder: Callable[[Call], OllamaReply] | None = None
        self.token_delay = 0.0
        self.on_unload: Callable[[str], None] | None = None  # called as a model is unloaded (tests check the order)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self, *script: OllamaReply, responder=None, token_delay: float = 0.0, loaded: tuple[str, ...] = (),
              count: Callable[[dict], int] | None = None) -> "OllamaStandIn":
        with self._lock:
            self.script, self.responder, self.token_delay = list(script), responder, token_delay
            self.calls, self.loaded, self.count, self.on_unload = [], list(loaded), count, None
        return self

    def requests(self, path: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.path == path]

    @property
    def chats(self) -> list[Call]:
        return self.requests("/api/chat")

    @property
    def unloads(self) -> list[str]:
        return [c.body.get("model") for c in self.requests("/api/generate") if _is_unload(c.body)]

    # -- the API ---------------------------------------------------------------------

    def _record(self, request: web.Request, body: dict) -> Call:
        call = Call(request.path, body, dict(request.headers))
        with self._lock:
            self.calls.append(call)
        return call

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        call = self._record(request, body)
        model = body.get("model", "")
        if model not in self.pulled:
            call.done.set()
            return web.json_response({"error": f'model "{model}" not found, try pulling it first'}, status=404)
        with self._lock:
            reply = self.responder(call) if self.responder else (self.script.pop(0) if self.script else
                                                                 OllamaReply(status=500, error="script exhausted"))
            count = self.count
            if model not in self.loaded:
                self.loaded.append(model)
        if count is not None:
            call.model_saw = cut_to_fit(body, count, (body.get("options") or {}).get("num_ctx", OLLAMA_DEFAULT_CONTEXT))
            call.truncated = call.model_saw is not None
        if reply.raw is not None or reply.status != 200:
            call.done.set()
            if reply.raw is not None:
                return web.Response(text=reply.raw, status=reply.status, content_type="text/html")
            return web.json_response({"error": reply.error or f"scripted {reply.status}"}, status=reply.status)
        prompt_tokens = count(call.model_saw or body) if count is not None else 100
        if body.get("stream", True):
            return await self._stream(request, call, reply, prompt_tokens)
        pieces = _pieces(reply.text())
        call.total = call.chunks = len(pieces)
        call.finished = True
        call.done.set()
        return web.json_response(_line(model, reply.text()) | _final(reply, prompt_tokens, len(pieces)))

    async def _stream(self, request: web.Request, call: Call, reply: OllamaReply, prompt_tokens: int):
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        pieces = _pieces(reply.text())
        call.total = len(pieces)

        async def send(data: dict) -> None:
            if request.transport is None or request.transport.is_closing():
                raise ConnectionResetError("the client went away")
            await response.write((json.dumps(data) + "\n").encode())

        try:
            for i, piece in enumerate(pieces):
                if reply.error and i == reply.error_after:
                    await send({"error": reply.error})
                    break
                if self.token_delay:
                    await asyncio.sleep(self.token_delay)
                await send(_line(call.body.get("model", ""), piece))
                call.chunks += 1
            else:
                await send(_line(call.body.get("model", ""), "") | _final(reply, prompt_tokens, len(pieces)))
                call.finished = True
            await response.write_eof()
        except ConnectionResetError:
            call.disconnected = True
        except asyncio.CancelledError:
            call.disconnected = True
            raise
        finally:
            call.done.set()
        return response

    async def _generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record(request, body)
        model = body.get("model", "")
        if not _is_unload(body):
            return web.json_response({"error": "the stand-in only unloads (keep_alive 0, no prompt)"}, status=501)
        with self._lock:
            if model in self.loaded:
                self.loaded.remove(model)
            on_unload = self.on_unload
        if on_unload is not None:
            on_unload(model)
        return web.json_response({"model": model, "created_at": _now(), "response": "", "done": True,
                                  "done_reason": "unload"})

    async def _ps(self, request: web.Request) -> web.Response:
        self._record(request, {})
        with self._lock:
            loaded = list(self.loaded)
        return web.json_response({"models": [{"name": m, "model": m, "size": 6_000_000_000, "size_vram": 6_000_000_000,
                                              "expires_at": _now()} for m in loaded]})

    async def _tags(self, request: web.Request) -> web.Response:
        self._record(request, {})
        return web.json_response({"models": [{"name": m, "model": m, "size": 6_000_000_000, "modified_at": _now()}
                                             for m in sorted(self.pulled)]})

    # -- running -----------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/chat", self._chat)
        app.router.add_post("/api/generate", self._generate)
        app.router.add_get("/api/ps", self._ps)
        app.router.add_get("/api/tags", self._tags)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    def start(self) -> "OllamaStandIn":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Ollama stand-in did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _is_unload(body: dict) -> bool:
    return str(body.get("keep_alive")) == "0" and not body.get("prompt")


def _pieces(text: str) -> list[str]:
    return [text[i:i + TOKEN_CHARS] for i in range(0, len(text), TOKEN_CHARS)]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _line(model: str, content: str) -> dict:
    return {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": content}, "done": False}


def _final(reply: OllamaReply, prompt_tokens: int, answer_tokens: int) -> dict:
    return {"done": True, "done_reason": reply.done_reason, "total_duration": 1_000_000, "prompt_eval_count": prompt_tokens,
            "eval_count": answer_tokens}
