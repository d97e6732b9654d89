"""Streaming for the scripted OpenAI-compatible endpoint (tests/support/llm_server.py), as real endpoints stream.

``streamed(handler, streams)`` wraps the endpoint's handler: when a request says ``"stream": true`` and the script
answers a whole ``chat.completion``, the answer is sent as server-sent events instead: ``chat.completion.chunk``
objects (the role, then the content four characters at a time, tool-call arguments, a refusal, the finish reason),
the usage when ``stream_options.include_usage`` asks, then ``data: [DONE]``. Errors, raw pages and resets pass
through as they are. ``Streams`` sets the delay between chunks and records what each stream sent and whether the
client went away before the end, so a test of Cancel counts the tokens sent after it.
"""
from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from aiohttp import web

TOKEN_CHARS = 4  # one streamed chunk: about one token of English or JSON


@dataclass
class Sent:
    """One streamed answer: chunks of text written, of how many, and how it ended."""

    total: int  # text chunks the answer has
    chunks: int = 0  # text chunks written so far
    finished: bool = False  # [DONE] was written
    disconnected: bool = False  # the client closed the connection before the end
    chunks_at_disconnect: int | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False)  # set when the stream ends either way


class Streams:
    """What the endpoint's streams sent (``sent``, in order) and the delay before each text chunk."""

    def __init__(self, token_delay: float = 0.0):
        self.token_delay = token_delay
        self.sent: list[Sent] = []
        self._lock = threading.Lock()

    def reset(self, token_delay: float = 0.0) -> "Streams":
        with self._lock:
            self.token_delay, self.sent = token_delay, []
        return self

    def add(self, total: int) -> Sent:
        sent = Sent(total=total)
        with self._lock:
            self.sent.append(sent)
        return sent


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def streamed(handler: Handler, streams: Streams) -> Handler:
    """``handler``, streaming its whole chat completions to the requests that ask for a stream."""

    async def handle(request: web.Request) -> web.StreamResponse:
        response = await handler(request)
        if not isinstance(response, web.Response) or response.status != 200 \
                or response.content_type != "application/json":
            return response  # an error, a raw page, a reset, or a stream already
        body = await request.json()  # aiohttp keeps the body: reading it again is free
        completion = json.loads(response.text)
        if not body.get("stream") or completion.get("object") != "chat.completion":
            return response
        return await stream_reply(request, body, completion, streams)

    return handle


def _pieces(text: str) -> list[str]:
    return [text[i:i + TOKEN_CHARS] for i in range(0, len(text), TOKEN_CHARS)]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def deltas(message: dict) -> tuple[list[dict], int]:
    """The deltas that stream ``message`` (after the role's), and how many of them carry text."""
    out: list[dict] = []
    for key in ("reasoning_content", "content", "refusal"):
        out += [{key: p} for p in _pieces(_text(message.get(key)))]
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function", {})
        out.append({"tool_calls": [{"index": i, "id": call.get("id", f"call_{i}"), "type": "function",
                                    "function": {"name": fn.get("name", ""), "arguments": ""}}]})
        out += [{"tool_calls": [{"index": i, "function": {"arguments": p}}]} for p in _pieces(fn.get("arguments", ""))]
    return out, len(out)


async def stream_reply(request: web.Request, body: dict, completion: dict, streams: Streams) -> web.StreamResponse:
    """Send ``completion`` (a whole chat.completion) as the chunks a streaming endpoint sends, recording them."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    head = {k: completion.get(k) for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choices = completion.get("choices") or []
    message = choices[0].get("message", {}) if choices else {}
    pieces, total = deltas(message) if choices else ([], 0)
    sent = streams.add(total)

    async def send(data: Any) -> None:
        if request.transport is None or request.transport.is_closing():
            raise ConnectionResetError("the client went away")
        await response.write(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode())

    try:
        if choices:
            await send(head | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                            "finish_reason": None}]})
            for delta in pieces:
                if streams.token_delay:
                    await asyncio.sleep(streams.token_delay)
                await send(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                sent.chunks += 1
            await send(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choices[0].get("finish_reason")}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            await send(head | {"choices": [], "usage": completion.get("usage")})
        await send("[DONE]")
        await response.write_eof()
        sent.finished = True
    except ConnectionResetError:
        sent.disconnected, sent.chunks_at_disconnect = True, sent.chunks
    except asyncio.CancelledError:  # the server cancels a handler whose client went away (where it is set to)
        sent.disconnected, sent.chunks_at_disconnect = True, sent.chunks
        raise
    finally:
        sent.done.set()
    return response
