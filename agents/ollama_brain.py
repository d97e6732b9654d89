"""The Ollama brain: Ollama's native chat API, which honours a context size and ``keep_alive``.

Ollama's OpenAI-compatible endpoint serves a model with Ollama's default context (4096 tokens on GPUs under 24 GiB)
and cuts a longer prompt silently; its native ``POST /api/chat`` takes ``options.num_ctx`` and ``keep_alive``. This
brain sends both, with the answer's JSON schema as ``format``, streams the answer (NDJSON lines) into
``request.on_text``, and, when its config says ``unload_before_models``, asks Ollama to unload its models
(``/api/ps``, then ``/api/generate`` with ``keep_alive`` 0) just before a large model loads, so a VLM and an
editor take turns on one GPU.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import urllib.request
from dataclasses import replace
from typing import Any

from ..tools.models import before_large_model_load
from . import budget
from .brain import BrainAnswer, BrainError, BrainRequest, ask_until_valid
from .openai_brain import PROVIDERS, BrainConfig, _is_loopback, image_data_url
from .streaming import LiveText, answer_limit, asked_hiding

log = logging.getLogger(__name__)
MOST_TOKENS = 32768  # a cut-off answer is asked again with twice the room, up to this
UNLOAD_TIMEOUT = 10.0  # seconds for each request that asks Ollama to unload (a stalled server must not stall a load)


class _Retry(Exception):
    """A failure worth another try (no answer, a 5xx); ``why`` says which."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def ollama_root(url: str | None) -> str:
    """Ollama's root URL from a base URL of any form a user gives: ``http://host:11434``, its OpenAI-compatible
    ``.../v1`` (the provider's default) or ``.../api``."""
    root = (url or PROVIDERS["ollama"].base_url or "").strip().rstrip("/")
    for tail in ("/v1", "/api"):
        if root.endswith(tail):
            root = root[: -len(tail)].rstrip("/")
    return root


DURATION = re.compile(r"-?(\d+(\.\d*)?(ns|us|µs|ms|s|m|h))+")  # Go's time.ParseDuration, which Ollama uses


def keep_alive_value(text: str) -> str | int | float | None:
    """``keep_alive`` as Ollama takes it: seconds as a number ("0" unloads after each call, "-1" keeps the model
    loaded), or a duration string ("5m", "1h30m"); None (not sent: Ollama's own default) when empty. Anything else
    is a ``BrainError`` saying what to write."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        if DURATION.fullmatch(text):
            return text
        raise BrainError(f"keep_alive {text!r} is not a duration Ollama reads: write 5m, 1h30m, seconds (300), 0 to "
                         "unload the model after each call, or -1 to keep it loaded") from None
    return int(number) if number.is_integer() else number


class OllamaBrain:
    """The Brain interface (``ask``, ``aclose``, ``resampled``) over Ollama's native API; see the module's text."""

    def __init__(self, config: BrainConfig):
        self.config = config
        self.root = ollama_root(config.url)
        self.name = f"ollama/{config.model}"
        self.vision = True
        self._structured = config.structured  # steps down when an older Ollama refuses a schema as format
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session = None
        self._gate: asyncio.Semaphore | None = None
        self._used = True  # Ollama may hold this brain's model (a new brain assumes so)
        keep_alive_value(config.keep_alive)  # a keep_alive Ollama would refuse is named now, not at the first call
        if config.unload_before_models:
            before_large_model_load(self.unload_before_load)  # weakly: it ends with this brain

    def resampled(self, temperature: float, seed: int | None) -> "OllamaBrain":
        """The same server and model sampling at ``temperature`` with ``seed`` (CCA's second generator)."""
        return OllamaBrain(replace(self.config, temperature=temperature, seed=seed))

    def _not_running(self) -> str:
        return f"check that Ollama is running (`ollama serve`) at {self.root}"

    def _key(self) -> str | None:
        """The key for an Ollama behind an authenticating proxy, when the Brain names its environment variable
        (Ollama itself takes none); it is sent only over https or to this machine unless allowed."""
        env = self.config.key_env
        if not env:
            return None
        key = os.environ.get(env, "").strip()
        if not key:
            raise BrainError(f"the Ollama brain was told to read a key from the environment variable {env}, which is "
                             "not set. Set it in the environment that starts ComfyUI, or empty api_key_env.")
        if self.root.startswith("http://") and not _is_loopback(self.root) and not self.config.allow_insecure_http:
            raise BrainError(f"refusing to send the API key from {env} over plain HTTP to {self.root}; use https, or "
                             "turn on the Brain's allow_insecure_http if this network is trusted")
        return key

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    # -- connection ------------------------------------------------------------------

    def _connect(self) -> None:
        """One HTTP session and one concurrency gate per event loop (they cannot cross loops)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._loop is loop and self._session is not None:
            return
        # no byte for `timeout` seconds is a failure; a long answer that keeps streaming is not
        timeout = aiohttp.ClientTimeout(total=None, connect=min(10.0, self.config.timeout),
                                        sock_read=self.config.timeout)
        self._session = aiohttp.ClientSession(timeout=timeout, headers=self._headers())
        self._gate = asyncio.Semaphore(self.config.concurrency)
        self._loop = loop

    async def aclose(self) -> None:
        """Close the HTTP session inside the event loop that opened it (loops call this when they end)."""
        session, self._session, self._loop, self._gate = self._session, None, None, None
        if session is not None:
            await session.close()

    # -- the Brain interface -----------------------------------------------------------

    async def ask(self, request: BrainRequest) -> BrainAnswer:
        """Fit the request to the context, ask, validate, re-ask (``ask_until_valid``); a ``BrainError`` names the
        server and what to do. A key (for a proxy) never leaves in what it returns, raises or streams."""
        return await asked_hiding(self._key(), request, self._ask)

    async def _ask(self, request: BrainRequest) -> BrainAnswer:
        self._connect()
        start = time.perf_counter()
        answer = BrainAnswer(data={}, brain=self.name)
        system, answer.prompt_tokens, left_out = self.fit(request)
        answer.notes.extend(left_out)
        urls = await asyncio.gather(*(asyncio.to_thread(image_data_url, img, self.config.image_side)
                                      for img in request.images))  # off the event loop: other calls keep flowing
        user = {"role": "user", "content": request.text, "images": [u.split(",", 1)[1] for u in urls]}
        messages = [{"role": "system", "content": system}, user]
        async with self._gate:
            answer.data = await ask_until_valid(request, messages, answer, self.config.reasks + 1,
                                                lambda m: self._complete(m, request, answer),
                                                f"{self.name} at {self.root}")
        answer.wall_ms = (time.perf_counter() - start) * 1000.0
        return answer

    def fit(self, request: BrainRequest) -> tuple[str, int, list[str]]:
        """Trim ``request`` to this brain's context; returns (the system prompt, its tokens, what was left out)."""
        return budget.fit_to(request, self.config, self._structured == "json_schema", f"{self.name} at {self.root}",
                             self.context_setting())

    def context_setting(self) -> str:
        """What a user raises when a request does not fit."""
        return f"the Brain's context (now {self.config.context_size}; it is sent to Ollama as num_ctx)"

    # -- one answer with bounded retries -----------------------------------------------

    def _body(self, messages: list[dict], request: BrainRequest, max_tokens: int) -> dict[str, Any]:
        options: dict[str, Any] = {"num_ctx": self.config.context_size, "temperature": self.config.temperature,
                                   "num_predict": max_tokens}
        if self.config.seed is not None:
            options["seed"] = self.config.seed
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "stream": True, "options": options}
        if self._structured == "json_schema":
            body["format"] = request.schema
        elif self._structured == "json_object":
            body["format"] = "json"
        keep_alive = keep_alive_value(self.config.keep_alive)
        if keep_alive is not None:
            body["keep_alive"] = keep_alive
        return body

    async def _complete(self, messages: list[dict], request: BrainRequest, answer: BrainAnswer) -> str:
        """The answer's text, streamed into ``request.on_text``; retried within bounds when there is no answer or
        a 5xx, and asked once more with room when it was cut off at max_tokens (``done_reason`` "length")."""
        attempt, max_tokens, raised = 0, self.config.max_tokens, False
        while True:
            messages = self._with_schema_in_prompt(messages, request)
            answer.requests += 1
            self._used = True
            try:
                text, final = await self._chat(self._body(messages, request, max_tokens), request, answer)
            except _Retry as err:
                if attempt >= self.config.max_retries:
                    raise BrainError(f"{self.root} failed {attempt + 1} time(s), last: {err.why}; "
                                     f"{self._not_running()}") from None
                answer.notes.append(f"retry {attempt + 1}/{self.config.max_retries} after {err.why}")
                await asyncio.sleep(self.config.backoff * (2 ** attempt))
                attempt += 1
                continue
            if text is None:  # a 400 we adapted to
                continue
            answer.tokens_in += int(final.get("prompt_eval_count") or 0)
            answer.tokens_out += int(final.get("eval_count") or 0)
            if final.get("done_reason") == "length" and not raised and max_tokens < MOST_TOKENS:
                raised, max_tokens = True, min(MOST_TOKENS, max_tokens * 2)  # cut off: once, with room to finish
                answer.notes.append(f"the answer was cut off at max_tokens; asking again with {max_tokens}")
                continue
            return text

    def _with_schema_in_prompt(self, messages: list[dict], request: BrainRequest) -> list[dict]:
        """``messages`` with the schema in the system prompt once Ollama has refused it as ``format``."""
        if self._structured == "json_schema":
            return messages
        return budget.schema_into_prompt(messages, request, self.config, f"Ollama at {self.root}",
                                         self.context_setting())

    async def _chat(self, body: dict, request: BrainRequest, answer: BrainAnswer) -> tuple[str | None, dict]:
        """One ``POST /api/chat``: (the text, the final line), or (None, {}) after a 400 that changed the request.
        Raises ``_Retry`` for what another try may mend, ``BrainError`` for what it cannot."""
        import aiohttp

        url = f"{self.root}/api/chat"
        try:
            async with self._session.post(url, json=body) as resp:  # closed on every way out, a cancel included
                if resp.status != 200:
                    return None, await self._refused(resp, answer)
                limit = answer_limit(int((body.get("options") or {}).get("num_predict") or self.config.max_tokens))
                return await self._read(resp, LiveText(request.on_text), limit)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as err:
            raise _Retry(f"connection error ({type(err).__name__})") from None
        except asyncio.TimeoutError:
            raise _Retry(f"no answer within {self.config.timeout:g} s") from None

    async def _refused(self, resp: Any, answer: BrainAnswer) -> dict:
        """Act on an HTTP error: retry a 5xx, step down from a refused ``format``, else say what to do."""
        said = _error_text(await resp.text())
        if resp.status >= 500 or resp.status == 429:
            raise _Retry(f"HTTP {resp.status} ({said[:120]})")
        if resp.status in (401, 403):
            raise BrainError(f"{self.root} refused the credentials (HTTP {resp.status}); check the key in the "
                             f"environment variable {self.config.key_env or '(none named: set api_key_env)'}") from None
        if resp.status == 404 and ("not found" in said or "pull" in said):
            raise BrainError(f"Ollama at {self.root} has no model {self.config.model!r}: run `ollama pull "
                             f"{self.config.model}` (or set the Brain's model to one `ollama list` shows"
                             f"{await self._pulled()})") from None
        if resp.status == 400 and "format" in said and self._structured != "prompt":
            lower = "json_object" if self._structured == "json_schema" else "prompt"
            answer.notes.append(f"{self.root} refused format {self._structured} (HTTP 400: {said[:120]}); using {lower}")
            self._structured = lower
            return {}
        raise BrainError(f"{self.root}/api/chat answered HTTP {resp.status}: {said[:300]}") from None

    async def _pulled(self) -> str:
        """``: a, b`` for the models the server has (``/api/tags``), or nothing when it does not say."""
        try:
            async with self._session.get(f"{self.root}/api/tags") as resp:
                names = [m.get("name", "") for m in (await resp.json(content_type=None)).get("models", [])]
        except Exception:  # only a hint in an error message
            return ""
        return f": {', '.join(n for n in names[:8] if n)}" if names else ""

    async def _read(self, resp: Any, live: LiveText, limit: int) -> tuple[str, dict]:
        """The streamed answer (one JSON object a line) and its final line, the text passed to ``live``; past
        ``limit`` characters, cut off there."""
        final: dict = {}
        async for raw in resp.content:
            line = raw.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except ValueError:
                preview = line[:80].decode("utf-8", "replace")
                raise BrainError(f"{self.root} did not answer like Ollama (it sent {preview!r}); check the base "
                                 "URL: Ollama's, e.g. http://127.0.0.1:11434") from None
            if data.get("error"):
                raise _Retry(f"an error while answering: {str(data['error'])[:200]}")
            live.add((data.get("message") or {}).get("content", ""))
            if data.get("done"):
                final = data
                break
            if len(live.text) > limit:  # a runaway answer: cut off, the stream closed, the text validated as it is
                final = {"done": True, "done_reason": "limit"}
                break
        live.end()
        if not final:
            raise _Retry("the answer ended before it was done")
        return live.text, final

    # -- unloading ---------------------------------------------------------------------

    def unload_before_load(self, what: str) -> None:
        """The ``before_large_model_load`` hook: unload Ollama's models if this brain may have loaded one since it
        last did. Never raises: the load goes on whatever Ollama says."""
        if self._used:
            self._used = False
            unloaded = self.unload_now()
            if unloaded:
                log.info("Edit Agents: asked Ollama at %s to unload %s before loading %s", self.root,
                         ", ".join(unloaded), what)

    async def unload(self) -> list[str]:
        """Ask Ollama to unload every model it holds; returns their names. Failures are logged warnings."""
        return await asyncio.to_thread(self.unload_now)

    def unload_now(self) -> list[str]:
        """``unload`` from synchronous code (any thread): each model ``/api/ps`` lists is unloaded with
        ``/api/generate`` and ``keep_alive`` 0."""
        try:
            loaded = [m.get("name") or m.get("model") for m in self._get("/api/ps").get("models", [])]
        except (OSError, ValueError, BrainError) as err:
            log.warning("Edit Agents: could not ask Ollama at %s which models it holds (%s)%s", self.root, err,
                        f"; {self._not_running()}" if isinstance(err, OSError) else "")
            return []
        done = []
        for name in filter(None, loaded):
            try:
                self._post("/api/generate", {"model": name, "keep_alive": 0})
                done.append(name)
            except (OSError, ValueError) as err:
                log.warning("Edit Agents: Ollama at %s did not unload %s (%s)", self.root, name, err)
        return done

    def _get(self, path: str) -> dict:
        request = urllib.request.Request(f"{self.root}{path}", headers=self._headers())
        with urllib.request.urlopen(request, timeout=UNLOAD_TIMEOUT) as resp:
            return json.loads(resp.read() or b"{}")

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(f"{self.root}{path}", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", **self._headers()})
        with urllib.request.urlopen(request, timeout=UNLOAD_TIMEOUT) as resp:
            return json.loads(resp.read() or b"{}")


def _error_text(body: str) -> str:
    """Ollama's ``{"error": "..."}``, or the body as it came."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()
    return str(data.get("error", body)) if isinstance(data, dict) else body.strip()
