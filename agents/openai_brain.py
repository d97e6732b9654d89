"""The OpenAI-compatible brain: any endpoint that speaks /v1/chat/completions.

One client serves OpenAI, Ollama, vLLM, LM Studio, llama.cpp server, DashScope (Qwen-VL),
Volcengine Ark (Doubao), DeepSeek and Gemini's compatible mode. The API key is read from
an environment variable whose *name* the user gives; the key itself never enters a
config, a trace, a log line or an error message.
"""
from __future__ import annotations

import asyncio
import base64
import io
import ipaddress
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

import numpy as np

from ..tools.backends import require
from ..tools.imageops import resize_longest, to_uint8
from . import budget
from .brain import BrainAnswer, BrainError, BrainRequest, InvalidAnswerError, ask_until_valid


@dataclass(frozen=True)
class Provider:
    label: str
    base_url: str | None  # None: the SDK's default (OPENAI_BASE_URL or api.openai.com)
    key_env: str | None  # None: a local endpoint that needs no key
    example_model: str = ""  # a model that works for every role (the README's provider table)
    note: str = ""
    vision: bool = True  # its models look at images (a CCA discriminator with vision captions the photo itself)


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("OpenAI", None, "OPENAI_API_KEY", "gpt-4o-mini"),
    "ollama": Provider("Ollama", "http://127.0.0.1:11434/v1", None, "qwen2.5vl:7b", "`ollama pull qwen2.5vl:7b` first"),
    "vllm": Provider("vLLM", "http://127.0.0.1:8000/v1", None, "Qwen/Qwen2.5-VL-7B-Instruct", "the name `vllm serve` was given"),
    "lmstudio": Provider("LM Studio", "http://127.0.0.1:1234/v1", None, "qwen2.5-vl-7b-instruct", "the loaded model's identifier"),
    "llamacpp": Provider("llama.cpp server", "http://127.0.0.1:8080/v1", None, "any", "the server answers with the model it loaded (start it with --mmproj for images)"),
    "dashscope": Provider("DashScope (Qwen-VL)", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY", "qwen-vl-max", "mainland accounts: base URL https://dashscope.aliyuncs.com/compatible-mode/v1"),
    "ark": Provider("Volcengine Ark (Doubao)", "https://ark.cn-beijing.volces.com/api/v3", "ARK_API_KEY", "doubao-1-5-vision-pro-32k-250115", "or your endpoint id (ep-...)"),
    "deepseek": Provider("DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "deepseek-chat", "text only: for planners and aggregators, not for roles that look at images", vision=False),
    "gemini": Provider("Gemini (OpenAI-compatible)", "https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY", "gemini-2.0-flash"),
    "custom": Provider("Custom endpoint", None, None, "", "any OpenAI-compatible server"),
}

LOCAL_CONTEXT = 4096  # Ollama's default num_ctx on GPUs under 24 GiB; vLLM/LM Studio/llama.cpp serve what they were told
# hosted models' context windows by name prefix (their providers' model pages); others get HOSTED_CONTEXT
HOSTED_WINDOWS = (("gpt-4.1", 1_000_000), ("gpt-5", 400_000), ("gpt-4o", 128_000), ("o3", 200_000), ("o4", 200_000),
                  ("gemini", 1_000_000), ("qwen-vl-max", 131_072), ("qwen-vl-plus", 131_072), ("deepseek", 65_536),
                  ("doubao", 32_768))
HOSTED_CONTEXT = 32_768


def hosted_context(model: str) -> int:
    """A hosted model's context window by its name, or a conservative 32k for one not listed."""
    name = model.strip().lower()
    return next((size for prefix, size in HOSTED_WINDOWS if name.startswith(prefix)), HOSTED_CONTEXT)


STRUCTURED_MODES = ("json_schema", "json_object", "prompt")  # tried in this order when an endpoint refuses one


@dataclass(frozen=True)
class BrainConfig:
    provider: str = "openai"
    model: str = ""
    base_url: str = ""  # empty: the provider's default
    api_key_env: str = ""  # the NAME of the environment variable holding the key; empty: the provider's default
    temperature: float = 0.2
    max_tokens: int = 1024
    timeout: float = 60.0  # seconds per request
    image_side: int = 768  # images are downscaled so their longest side is at most this
    concurrency: int = 4  # requests in flight at once from this brain
    max_retries: int = 3  # on timeouts, connection errors, 429 and 5xx
    reasks: int = 2  # re-asks quoting the validation error when an answer is not valid
    structured: str = "json_schema"
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)  # model -> USD per 1M (input, output) tokens
    allow_insecure_http: bool = False  # send a key over plain HTTP to a non-loopback host
    context: int = 0  # tokens the model sees per call, prompt and answer; 0: the provider's default (context_size)
    keep_alive: str = ""  # Ollama: how long the model stays loaded after a call ("5m", "0", "-1"); empty: Ollama's own
    unload_before_models: bool = False  # Ollama: unload its models before ComfyUI loads a large one
    seed: int | None = None  # sent with every call where the endpoint takes one; None: the endpoint's own

    def __post_init__(self):
        if self.provider not in PROVIDERS:
            raise BrainError(f"unknown provider {self.provider!r}; choose one of {', '.join(PROVIDERS)}")
        if self.structured not in STRUCTURED_MODES:
            raise BrainError(f"structured must be one of {', '.join(STRUCTURED_MODES)}, got {self.structured!r}")
        if not self.model.strip():
            raise BrainError(f"no model name given for the {PROVIDERS[self.provider].label} brain (e.g. 'gpt-4o-mini', 'qwen2.5vl:7b')")
        if self.provider == "custom" and not self.base_url:
            raise BrainError("the custom provider needs a base URL, e.g. http://127.0.0.1:8000/v1")
        for name in ("timeout", "image_side", "concurrency"):
            if not getattr(self, name) > 0:
                raise BrainError(f"{name} must be above 0, got {getattr(self, name)}")
        if self.max_retries < 0 or self.reasks < 0:
            raise BrainError("max_retries and reasks must be 0 or more")
        if self.context and self.context < 512:
            raise BrainError(f"context must be 0 (the provider's default) or at least 512 tokens, got {self.context}")

    @property
    def context_size(self) -> int:
        """The context the requests are fitted to: the Brain's own, else 4096 for a local server (Ollama's
        default under 24 GiB of GPU memory) and the model's documented window for a hosted one."""
        return self.context or (LOCAL_CONTEXT if PROVIDERS[self.provider].key_env is None
                                else hosted_context(self.model))

    @property
    def key_env(self) -> str | None:
        return self.api_key_env.strip() or PROVIDERS[self.provider].key_env

    @property
    def url(self) -> str | None:
        return self.base_url.strip() or PROVIDERS[self.provider].base_url


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def image_data_url(img: np.ndarray, longest_side: int) -> str:
    """A downscaled JPEG data URL: a few ms per photo (PNG took ~90 ms at 600 px) and what VLMs accept."""
    from PIL import Image

    small = to_uint8(resize_longest(img, longest_side))
    arr = small[:, :, 0] if small.shape[2] == 1 else small[:, :, :3] if small.shape[2] == 4 else small
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class OpenAIBrain:
    def __init__(self, config: BrainConfig):
        self.config = config
        self.name = f"{config.provider}/{config.model}"
        self.vision = PROVIDERS[config.provider].vision
        self._structured = config.structured
        self._token_param = "max_tokens"  # current OpenAI models want max_completion_tokens: learnt from their 400
        self._send_temperature = True  # ...and some refuse any temperature but their default
        self._send_seed = config.seed is not None  # ...or a seed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client = None
        self._gate: asyncio.Semaphore | None = None

    def resampled(self, temperature: float, seed: int | None) -> "OpenAIBrain":
        """The same endpoint and model sampling at ``temperature`` with ``seed`` (CCA's second generator)."""
        return OpenAIBrain(replace(self.config, temperature=temperature, seed=seed))

    # -- connection ------------------------------------------------------------------

    def _api_key(self) -> str | None:
        env = self.config.key_env
        if env:
            value = os.environ.get(env, "").strip()
            if value:
                return value
            if self.config.provider == "openai" and not self.config.api_key_env:
                return None  # let the SDK read OPENAI_API_KEY exactly as it does
            raise BrainError(f"the {PROVIDERS[self.config.provider].label} brain needs an API key in the environment "
                             f"variable {env}, which is not set. Set it in the environment that starts ComfyUI.")
        return None

    def _endpoint(self) -> str:
        return str(self._client.base_url) if self._client is not None else (self.config.url or "the OpenAI API")

    def _connect(self) -> None:
        """One SDK client and one concurrency gate per event loop (they cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._client is not None:
            return
        openai = require("openai")
        key = self._api_key()
        url = self.config.url
        if key and url and url.startswith("http://") and not _is_loopback(url) and not self.config.allow_insecure_http:
            raise BrainError(f"refusing to send the API key from {self.config.key_env} over plain HTTP to {url}; "
                             "use https, or turn on the Brain's allow_insecure_http if this network is trusted")
        kwargs: dict[str, Any] = {"timeout": self.config.timeout, "max_retries": 0}  # retries are ours: bounded, traced
        if url:
            kwargs["base_url"] = url
        if key:
            kwargs["api_key"] = key
        elif self.config.key_env is None:
            kwargs["api_key"] = "unused"  # local endpoints ignore it; the SDK insists on a value
        try:
            self._client = openai.AsyncOpenAI(**kwargs)
        except openai.OpenAIError as err:
            raise BrainError(f"cannot create the OpenAI client: set the environment variable {self.config.key_env or 'OPENAI_API_KEY'} "
                             f"({type(err).__name__})") from None
        self._gate = asyncio.Semaphore(self.config.concurrency)
        self._loop = loop

    async def aclose(self) -> None:
        """Close the HTTP client inside the event loop that opened it (loops call this when they end)."""
        client, self._client, self._loop, self._gate = self._client, None, None, None
        if client is not None:
            await client.close()

    # -- one request with bounded retries ---------------------------------------------

    def _response_format(self, role: str, schema: dict) -> dict | None:
        if self._structured == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": role.replace(" ", "_")[:60], "schema": schema}}
        if self._structured == "json_object":
            return {"type": "json_object"}
        return None

    def _bad_request(self, err: Exception, answer: BrainAnswer) -> bool:
        """Adapt to what a 400 names and return True to send again; False when it names nothing we can change.
        Current OpenAI models (o-series, GPT-5.x) refuse ``max_tokens`` and a non-default ``temperature``; other
        endpoints refuse ``stream_options``, streaming, or a ``response_format``. Only the part the error names is
        changed."""
        import re

        said = _short(err).lower()
        streaming = getattr(self, "_streaming", "with usage")
        if "max_tokens" in said and self._token_param == "max_tokens":
            self._token_param = "max_completion_tokens"
            answer.notes.append(f"{self._endpoint()} refused max_tokens (HTTP 400); sending max_completion_tokens")
            return True
        if "temperature" in said and self._send_temperature:
            self._send_temperature = False
            answer.notes.append(f"{self._endpoint()} refused temperature {self.config.temperature:g} (HTTP 400); "
                                "leaving it to the model's default")
            return True
        if "seed" in said and self._send_seed:
            self._send_seed = False
            answer.notes.append(f"{self._endpoint()} refused seed (HTTP 400); sampling with the endpoint's own")
            return True
        if "stream_options" in said and streaming == "with usage":
            self._streaming = "without usage"
            answer.notes.append(f"{self._endpoint()} refused stream_options (HTTP 400); streaming without usage")
            return True
        if re.search(r"\bstream(ing)?\b", said) and streaming != "off":
            self._streaming = "off"
            answer.notes.append(f"{self._endpoint()} refused streaming (HTTP 400); waiting for whole answers")
            return True
        if any(w in said for w in ("response_format", "json_schema", "json_object", "structured")) \
                and self._structured != "prompt":
            lower = STRUCTURED_MODES[STRUCTURED_MODES.index(self._structured) + 1]
            answer.notes.append(f"{self._endpoint()} rejected response_format {self._structured} (HTTP 400); using {lower}")
            self._structured = lower
            return True
        return False

    async def _complete(self, messages: list[dict], request: BrainRequest, answer: BrainAnswer) -> str:
        """The answer's text, streamed (the text so far goes to ``request.on_text``, a few times a second) unless the
        endpoint refused streaming; retried within bounds on timeouts, connection errors, 429 and 5xx, and asked once
        more with room when it was cut off at max_tokens. Cancelling it closes the stream: the endpoint stops."""
        from .streaming import complete_chat

        openai = require("openai")
        attempt, max_tokens, raised = 0, self.config.max_tokens, False
        on_text = request.on_text  # the key is held back from it by ``ask``
        while True:
            messages = self._prompt_for_mode(messages, request)  # a step down from json_schema puts the schema in
            fmt = self._response_format(request.role, request.schema)
            kwargs: dict[str, Any] = dict(model=self.config.model, messages=messages)
            kwargs[self._token_param] = max_tokens
            if self._send_temperature:
                kwargs["temperature"] = self.config.temperature
            if self._send_seed:
                kwargs["seed"] = self.config.seed
            if fmt is not None:
                kwargs["response_format"] = fmt
            streaming = getattr(self, "_streaming", "with usage")  # stepped down by a 400 that names it
            if streaming != "off":
                kwargs["stream"] = True
                if streaming == "with usage":
                    kwargs["stream_options"] = {"include_usage": True}
            answer.requests += 1
            try:
                got = await complete_chat(self._client, kwargs, on_text, self._endpoint())
            except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
                raise BrainError(f"{self._endpoint()} refused the credentials (HTTP {err.status_code}); check the API key "
                                 f"in the environment variable {self.config.key_env or 'OPENAI_API_KEY'}") from None
            except openai.BadRequestError as err:
                if self._bad_request(err, answer):
                    continue
                raise BrainError(f"{self._endpoint()} rejected the request (HTTP 400): {_short(err)}") from None
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as err:
                why = _why(err, self.config.timeout)
                if attempt >= self.config.max_retries:
                    raise BrainError(f"{self._endpoint()} failed {attempt + 1} time(s), last: {why}; "
                                     "check that the endpoint is running and reachable") from None
                wait = _retry_after(err)  # the server says when: honoured, within the retry budget and the timeout
                delay = min(wait, self.config.timeout) if wait is not None else self.config.backoff * (2 ** attempt)
                answer.notes.append(f"retry {attempt + 1}/{self.config.max_retries} after {why}"
                                    + (f", waiting {delay:g} s as Retry-After asks" if wait is not None else ""))
                await asyncio.sleep(delay)
                attempt += 1
                continue
            except openai.APIStatusError as err:
                raise BrainError(f"{self._endpoint()} answered HTTP {err.status_code}: {_short(err)}") from None
            except openai.APIError as err:  # an error event in the middle of a stream
                raise BrainError(f"{self._endpoint()} sent an error while answering: {_short(err)}") from None
            answer.tokens_in += got.tokens_in
            answer.tokens_out += got.tokens_out
            if got.message is None:
                answer.notes.append(f"{self._endpoint()} sent no choices")
                return ""
            refusal = getattr(got.message, "refusal", None)
            if refusal:
                raise InvalidAnswerError(f"{self.name} at {self._endpoint()} refused the {request.role} request: "
                                         f"{str(refusal)[:300]}")
            if got.finish_reason == "length" and not raised and max_tokens < 32768:
                raised, max_tokens = True, min(32768, max_tokens * 2)  # cut off: once, with room to finish
                answer.notes.append(f"the answer was cut off at max_tokens; asking again with {max_tokens}")
                continue
            return message_text(got.message)

    # -- the Brain interface -----------------------------------------------------------

    async def ask(self, request: BrainRequest) -> BrainAnswer:
        """Ask, validate, re-ask; the key never leaves in what it returns, raises or streams."""
        from .streaming import asked_hiding

        return await asked_hiding(self._api_key(), request, self._ask)

    async def _ask(self, request: BrainRequest) -> BrainAnswer:
        self._connect()
        start = time.perf_counter()
        answer = BrainAnswer(data={}, brain=self.name)
        system, answer.prompt_tokens, left_out = self.fit(request)
        answer.notes.extend(left_out)
        content: list[dict] = [{"type": "text", "text": request.text}]
        urls = await asyncio.gather(*(asyncio.to_thread(image_data_url, img, self.config.image_side)
                                      for img in request.images))  # off the event loop: other calls keep flowing
        content += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        async with self._gate:
            answer.data = await ask_until_valid(request, messages, answer, self.config.reasks + 1,
                                                lambda m: self._complete(m, request, answer),
                                                f"{self.name} at {self._endpoint()}")
        answer.wall_ms = (time.perf_counter() - start) * 1000.0
        price = self.config.prices.get(self.config.model)
        if price:
            answer.cost = (answer.tokens_in * price[0] + answer.tokens_out * price[1]) / 1e6
        return answer

    def fit(self, request: BrainRequest) -> tuple[str, int, list[str]]:
        """Trim ``request`` to this brain's context; returns (the system prompt, its tokens, what was left out)."""
        return budget.fit_to(request, self.config, self._structured == "json_schema",
                             f"{self.name} at {self._endpoint()}", self.context_setting())

    def context_setting(self) -> str:
        """What a user raises when a request does not fit."""
        where = {"ollama": " and Ollama's num_ctx follows it", "vllm": " (and vLLM's --max-model-len)",
                 "llamacpp": " (and llama-server's --ctx-size)", "lmstudio": " (and the model's context length in LM Studio)"}
        return f"the Brain's context (now {self.config.context_size}){where.get(self.config.provider, '')}"

    def _prompt_for_mode(self, messages: list[dict], request: BrainRequest) -> list[dict]:
        """``messages`` as the current structured mode needs them: the schema into the prompt once the endpoint
        has refused it as ``response_format``."""
        if self._structured == "json_schema":
            return messages
        return budget.schema_into_prompt(messages, request, self.config, self._endpoint(), self.context_setting())


def redact(value: Any, secret: str) -> Any:
    """``value`` with every occurrence of ``secret`` in its strings replaced by '[redacted]'."""
    if isinstance(value, str):
        return value.replace(secret, "[redacted]")
    if isinstance(value, dict):
        return {k: redact(v, secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v, secret) for v in value)
    return value


def _short(err: Exception) -> str:
    body = getattr(err, "body", None)
    msg = body.get("message") if isinstance(body, dict) else None
    return (msg or str(err))[:300]


def message_text(message: Any) -> str:
    """The answer's text, whatever shape the endpoint sent: a string; a list of content parts; or, when the content
    is empty, a tool or function call's arguments (some servers put structured output there)."""
    content = getattr(message, "content", None)
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(getattr(p, "text", "")) for p in content)
    if content and str(content).strip():
        return str(content)
    for call in getattr(message, "tool_calls", None) or []:
        args = getattr(getattr(call, "function", None), "arguments", None)
        if args:
            return str(args)
    function_call = getattr(message, "function_call", None)
    return str(getattr(function_call, "arguments", "") or "") if function_call is not None else ""


def _retry_after(err: Exception) -> float | None:
    """Seconds a 429 or 503 asks to wait (``Retry-After``: seconds, or an HTTP date), if it says."""
    response = getattr(err, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _why(err: Exception, timeout: float) -> str:
    status = getattr(err, "status_code", None)
    if status:
        return f"HTTP {status}"
    name = type(err).__name__
    return f"no answer within {timeout:g} s" if "Timeout" in name else f"connection error ({name})"
