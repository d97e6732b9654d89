"""Streamed answers: the text so far for whoever watches, and a streamed chat completion put back together.

Shared by the OpenAI-compatible brain and the Ollama brain. A watcher (``BrainRequest.on_text``: the node's
progress text, the trace panel) gets the text so far a few times a second, never once per token, and once more
when the answer is complete.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from .brain import BrainAnswer, BrainError, BrainRequest

LIVE_EVERY_S = 0.2  # how often a watcher hears of a streaming answer
log = logging.getLogger(__name__)


class LiveText:
    """An answer's text as it streams in. ``add`` a piece; ``on_text`` gets the text so far at most every
    ``every`` seconds (the first piece at once) and after ``end``, if it changed since. A watcher that fails is
    logged once and dropped: showing progress never fails a call."""

    def __init__(self, on_text: Callable[[str], None] | None, every: float = LIVE_EVERY_S):
        self.on_text, self.every = on_text, every
        self.parts: list[str] = []
        self._sent_at: float | None = None
        self._sent_parts = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, piece: str | None) -> None:
        if not piece:
            return
        self.parts.append(piece)
        if self._sent_at is None or time.monotonic() - self._sent_at >= self.every:
            self._send()

    def end(self) -> None:
        if self._sent_parts != len(self.parts):
            self._send()

    def _send(self) -> None:
        self._sent_at, self._sent_parts = time.monotonic(), len(self.parts)
        if self.on_text is None:
            return
        try:
            self.on_text(self.text)
        except Exception as err:  # the display's problem, not the answer's
            log.warning("Edit Agents: showing a streaming answer failed (%s); not showing the rest", err)
            self.on_text = None


def redacting(on_text: Callable[[str], None] | None, secret: str | None) -> Callable[[str], None] | None:
    """``on_text`` that never shows ``secret``, even when an endpoint echoes it: each occurrence is replaced, and an
    end of the text that could be the secret's beginning is held back until the text goes on."""
    if on_text is None or not secret:
        return on_text

    def show(text: str) -> None:
        text = text.replace(secret, "[redacted]")
        for k in range(min(len(secret) - 1, len(text)), 0, -1):
            if text.endswith(secret[:k]):
                text = text[:-k]
                break
        on_text(text)
    return show


@dataclass
class Completion:
    """One chat answer, streamed or not: its message (``content``, ``tool_calls``, ``refusal``, as
    ``message_text`` reads it), why it ended and what it cost."""

    message: Any = None  # None: the endpoint sent no choice
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass
class _Parts:
    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, list[str]] = field(default_factory=dict)  # tool call index -> its arguments' pieces
    function: list[str] = field(default_factory=list)  # the legacy function_call's arguments

    def message(self) -> Any:
        calls = [SimpleNamespace(function=SimpleNamespace(arguments="".join(a))) for _, a in sorted(self.calls.items())]
        return SimpleNamespace(content="".join(self.content), refusal="".join(self.refusal) or None, tool_calls=calls,
                               function_call=SimpleNamespace(arguments="".join(self.function)) if self.function else None)


def _text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts, as some servers send even in a delta
        return "".join(p.get("text", "") if isinstance(p, dict) else str(getattr(p, "text", "")) for p in content)
    return content or ""


def answer_limit(max_tokens: int) -> int:
    """The most characters read of one answer: an endpoint that streams past it (a runaway, or a hostile 10 MB) is
    cut off there and its text taken as it is (then validated, and re-asked); no real vocabulary's tokens average
    32 characters, so a model within ``max_tokens`` never reaches it."""
    return max(65536, 32 * max_tokens)


def _add_delta(parts: _Parts, delta: Any, live: LiveText) -> int:
    """Add one chunk's pieces; returns how many characters it brought."""
    piece = _text_of(getattr(delta, "content", None))
    parts.content.append(piece)
    live.add(piece)
    parts.refusal.append(getattr(delta, "refusal", None) or "")
    added = len(piece)
    for call in getattr(delta, "tool_calls", None) or []:
        args = getattr(getattr(call, "function", None), "arguments", None) or ""
        parts.calls.setdefault(getattr(call, "index", 0) or 0, []).append(args)
        live.add(args)
        added += len(args)
    function_call = getattr(delta, "function_call", None)
    if function_call is not None and getattr(function_call, "arguments", None):
        parts.function.append(function_call.arguments)
        live.add(function_call.arguments)
        added += len(function_call.arguments)
    return added


async def read_chat_stream(stream: Any, live: LiveText, limit: int = 1 << 62) -> Completion:
    """Put a streamed chat completion (the SDK's chunks) back together, passing the text to ``live`` as it
    comes. Usage is read from whichever chunk carries it (the last one, with ``include_usage``). Past ``limit``
    characters the answer is cut off there (``finish_reason`` "limit") and the stream closed."""
    parts, done = _Parts(), Completion()
    chose, size = False, 0
    async for chunk in stream:
        if size > limit:  # not "length": the endpoint ran past what max_tokens allows, more room will not help
            done.finish_reason = "limit"
            break
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            done.tokens_in, done.tokens_out = usage.prompt_tokens or 0, usage.completion_tokens or 0
        for choice in (getattr(chunk, "choices", None) or [])[:1]:
            chose = True
            if getattr(choice, "delta", None) is not None:
                size += _add_delta(parts, choice.delta, live)
            done.finish_reason = getattr(choice, "finish_reason", None) or done.finish_reason
    live.end()
    done.message = parts.message() if chose else None
    return done


def completion_of(resp: Any) -> Completion:
    """A whole (not streamed) chat completion, from the SDK's object or from its JSON as a dict."""
    resp = _namespace(resp) if isinstance(resp, dict) else resp
    usage = getattr(resp, "usage", None)
    choices = getattr(resp, "choices", None) or []
    return Completion(message=choices[0].message if choices else None,
                      finish_reason=getattr(choices[0], "finish_reason", None) if choices else None,
                      tokens_in=(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0,
                      tokens_out=(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0)


def whole_answer(body: bytes, endpoint: str) -> Completion:
    """What an endpoint that was asked to stream sent instead: a whole chat completion as JSON (some servers
    ignore ``stream``), taken as it is; anything else (a proxy's HTML page) is an error naming the endpoint."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "choices" not in data:
        preview = text[:80].replace("\n", " ")
        raise BrainError(f"{endpoint} did not answer like an OpenAI-compatible endpoint (it sent {preview!r}); "
                         "check the base URL")
    return completion_of(data)


def _namespace(value: Any) -> Any:
    """JSON as attributes (``message.content``), the way the SDK's objects read."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


async def complete_chat(client: Any, kwargs: dict[str, Any], on_text: Callable[[str], None] | None,
                        endpoint: str) -> Completion:
    """One chat completion through the OpenAI SDK: streamed when ``kwargs`` asks (the text goes to ``on_text``
    as it comes), else whole. The SDK's errors propagate for the caller's retries. Cancelling this closes the
    HTTP stream, so the endpoint stops generating."""
    resp = await client.chat.completions.create(**kwargs)
    if not kwargs.get("stream"):
        if not hasattr(resp, "choices"):  # e.g. a proxy's HTML page: the SDK hands back the raw text
            preview = str(resp)[:80].replace("\n", " ")
            raise BrainError(f"{endpoint} did not answer like an OpenAI-compatible endpoint (it sent {preview!r}); "
                             "check the base URL")
        return completion_of(resp)
    async with resp:  # closes the connection on every way out, a cancel included
        if "event-stream" not in resp.response.headers.get("content-type", ""):
            return whole_answer(await resp.response.aread(), endpoint)
        tokens = kwargs.get("max_tokens") or kwargs.get("max_completion_tokens") or 0
        return await read_chat_stream(resp, LiveText(on_text), answer_limit(tokens))


async def asked_hiding(secret: str | None, request: BrainRequest, ask) -> BrainAnswer:
    """``await ask(request)`` with ``secret`` (an API key) never in what it returns, raises or streams, even when
    the endpoint echoes it back (into an error body, an answer or the text so far). Keys shorter than 6 characters
    (test values) are not hidden: they would mangle ordinary text."""
    from .openai_brain import redact  # here: openai_brain imports this module

    secret = secret if secret and len(secret) >= 6 else None
    if secret:
        request.on_text = redacting(request.on_text, secret)
    try:
        answer = await ask(request)
    except BrainError as err:
        if secret and secret in str(err):
            raise BrainError(redact(str(err), secret)) from None
        raise
    if secret:
        answer.data, answer.notes = redact(answer.data, secret), redact(answer.notes, secret)
    return answer

