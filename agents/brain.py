"""The brain interface: one call shape for every role, whatever thinks behind it.

A role builds a ``BrainRequest`` (system prompt, user text, images, the JSON schema its
answer must fit, and the same inputs as structured ``context``). An LLM brain sends the
prompt and images; the rule brain reads ``context``. Both return a ``BrainAnswer`` whose
``data`` has been validated against the schema: model output is data, never code.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol, TypeVar

import numpy as np

from ..tools.errors import shown_by_name

T = TypeVar("T")
REASK_ECHO = 600  # characters of a rejected answer quoted back in a re-ask


@shown_by_name
class BrainError(RuntimeError):
    """A brain could not produce a valid answer; the message says why and what to check."""


@shown_by_name
class InvalidAnswerError(BrainError):
    """The brain answered, but no answer was valid within the re-asks (its shape, or its meaning). Inside a loop
    this fails one attempt, not the run; an unreachable endpoint is a plain ``BrainError``."""


@dataclass
class BrainRequest:
    role: str  # planner, executor, questions, answers, expert, aggregator, competitor, perceiver
    system: str
    text: str
    schema: dict[str, Any]
    images: list[np.ndarray] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)  # structured inputs; never sent to an endpoint
    agent: str = ""
    # what a schema cannot say: the answer's meaning (an index in range, a step reading an earlier step, ...);
    # returns the problem, quoted back when the brain is re-asked, or None
    check: Callable[[dict[str, Any]], str | None] | None = field(default=None, repr=False)
    # what is wrong but unambiguous to mend (a forward dependency to drop): mends ``data`` in place and returns
    # a note per mend. Tool parameters beyond their bounds are clamped for every request (``clamp_numbers``).
    repair: Callable[[dict[str, Any]], list[str]] | None = field(default=None, repr=False)
    # called with the answer's text so far while a brain streams it (the node's progress text, the trace panel)
    on_text: Callable[[str], None] | None = field(default=None, repr=False)
    # drops the oldest piece of history (a thumbnail, else an entry) from ``text`` and ``images`` in place and says
    # what it dropped, or returns None when nothing is left to drop: how a request is fitted to a context
    trim: Callable[[], str | None] | None = field(default=None, repr=False)

    def mend(self, data: Any) -> list[str]:
        """Mend what is unambiguous before the answer is checked: tool parameters clamped into their bounds
        (huge and infinite ones too), then the role's own repairs. Returns what was mended."""
        notes = clamp_numbers(data, self.schema)
        if self.repair is not None and isinstance(data, dict):
            notes += self.repair(data)
        return notes

    def problem(self, data: Any) -> str | None:
        """Why ``data`` is not a valid answer (its schema, then its meaning), or None."""
        return validate(data, self.schema) or (self.check(data) if self.check is not None else None)


@dataclass
class BrainAnswer:
    data: dict[str, Any]
    brain: str  # "rule" or "provider/model" — never a key
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    wall_ms: float = 0.0
    requests: int = 0  # HTTP requests made (retries and re-asks included)
    prompt_tokens: int = 0  # the first request's prompt as the brain counted it to fit its context (0: not counted)
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class Brain(Protocol):
    name: str

    async def ask(self, request: BrainRequest) -> BrainAnswer: ...


def system_with_schema(request: BrainRequest) -> str:
    """The system prompt for an endpoint that is not given the schema as a parameter: the role's prompt, then the
    schema its answer must fit (compact: no spaces)."""
    return (request.system.rstrip() + "\n\nAnswer with one JSON object only, no prose, that fits this JSON schema:\n"
            + json.dumps(request.schema, separators=(",", ":")))


def system_for(request: BrainRequest, schema_as_parameter: bool) -> str:
    """The system prompt a brain sends: the schema goes once, as the structured-output parameter where the
    endpoint takes one (it constrains decoding there), else in the prompt."""
    if schema_as_parameter:
        return request.system.rstrip() + "\n\nAnswer with one JSON object only, no prose."
    return system_with_schema(request)


async def ask_until_valid(request: BrainRequest, messages: list[dict], answer: BrainAnswer, tries: int,
                          complete: Callable[[list[dict]], Awaitable[str]], who: str) -> dict[str, Any]:
    """The bounded re-ask loop every model brain shares: ``complete`` the chat, parse the JSON, check its shape
    and meaning (``request.problem``), and when it fails ask again with the problem quoted, at most ``tries``
    answers in all; then ``InvalidAnswerError`` naming ``who`` and the last problem."""
    problem, first = "", list(messages)
    for turn in range(tries):
        text = await complete(messages)
        try:
            data = extract_json(text)
            answer.notes.extend(f"mended: {note}" for note in request.mend(data))  # what is unambiguous
            problem = request.problem(data) or ""  # shape, then meaning: both are re-asked
        except ValueError as err:
            problem = str(err)
        if not problem:
            return data
        answer.notes.append(f"answer {turn + 1} rejected: {problem}")
        messages = first + [  # only the last rejected answer, cut short: a re-ask fits the context's reserve
            {"role": "assistant", "content": text[:REASK_ECHO]},
            {"role": "user", "content": f"That answer was not valid: {problem[:REASK_ECHO]}. Reply again with only a JSON "
                                        "object that fits the schema."}]
    raise InvalidAnswerError(f"{who} gave no valid {request.role} answer in {tries} tries; last problem: {problem}")


async def close_brains(*brains: object) -> None:
    """Release what brains hold (HTTP clients) in the loop that used them; each brain once."""
    seen: set[int] = set()
    for brain in brains:
        close = getattr(brain, "aclose", None)
        if close is not None and id(brain) not in seen:
            seen.add(id(brain))
            await close()


class BrainVision:
    """A brain lent to the tools as their ``tools.spec.Vision`` (the VLM tools, the reward's VLM rating)."""

    def __init__(self, brain: Any):
        self.brain = brain
        self.tokens = 0  # what the tools' questions cost, counted for the trace
        self.calls = 0

    def unavailable(self) -> str | None:
        if getattr(self.brain, "name", "").startswith("rule"):
            return "the offline rule brain cannot see; connect a vision-language Brain"
        return None

    def ask(self, role: str, system: str, text: str, schema: dict[str, Any], image: Any) -> dict[str, Any]:
        """One validated answer about ``image``, from synchronous code (inside or outside an event loop)."""
        async def go():
            try:
                request = BrainRequest(role=role, system=system, text=text, schema=schema, images=[image])
                answer = await self.brain.ask(request)
                self.tokens, self.calls = self.tokens + answer.tokens, self.calls + 1
                return answer.data
            finally:
                await close_brains(self.brain)

        return run_blocking(go)


def vision_of(brain: Any) -> BrainVision | None:
    """``brain`` as the tools' vision model, or None when no brain is connected."""
    return None if brain is None else BrainVision(brain)


def clamp_numbers(data: Any, schema: dict[str, Any], where: str = "", params: bool = False) -> list[str]:
    """Clamp, in place, every tool parameter of ``data`` (a number under a ``params`` object) that its schema
    bounds and that lies outside the bounds, an infinite or a 400-digit one included, as the tool itself would
    clamp it; returns a note per clamp. A score or an index out of range is not a parameter: it is left to
    validation, and re-asked. Where a schema offers alternatives (``anyOf``), the one whose ``tool`` matches is
    followed."""
    notes: list[str] = []
    if not isinstance(schema, dict):
        return notes
    if "anyOf" in schema and isinstance(data, dict):
        same = [s for s in schema["anyOf"] if data.get("tool") in s.get("properties", {}).get("tool", {}).get("enum", ())]
        return clamp_numbers(data, same[0], where, params) if len(same) == 1 else notes
    if isinstance(data, dict):
        props = schema.get("properties", {})
        for key, value in data.items():
            if key not in props:
                continue
            inner = props[key]
            if params and _bounded_number(value, inner):
                data[key], note = _clamp(value, inner, f"{where}{key}")
                notes += [note] if note else []
            else:
                notes += clamp_numbers(value, inner, f"{where}{key}/", params or key == "params")
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(data):
            notes += clamp_numbers(value, schema["items"], f"{where}{i}/", params)
    return notes


def _bounded_number(value: Any, schema: dict[str, Any]) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(schema, dict)
            and schema.get("type") in ("number", "integer") and ("minimum" in schema or "maximum" in schema))


def _clamp(value: int | float, schema: dict[str, Any], where: str) -> tuple[int | float, str]:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if value != value:  # NaN has no side to clamp to: left for validation to refuse
        return value, ""
    # compare as Python numbers: a 400-digit integer compares exactly, and float('inf') beyond every bound
    if lo is not None and value < lo:
        out = lo
    elif hi is not None and value > hi:
        out = hi
    else:
        return value, ""
    out = int(out) if schema.get("type") == "integer" else float(out)
    shown = f"{value:.3g}" if isinstance(value, float) or abs(value) < 10 ** 12 else f"a {len(str(abs(value)))}-digit number"
    return out, f"{where}={shown} clamped to {out:g}"


def validate(data: Any, schema: dict[str, Any]) -> str | None:
    """None when ``data`` fits ``schema``, else a short readable reason (for a re-ask)."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    parts = []
    for e in errors[:5]:
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        if e.validator in ("minItems", "maxItems") and isinstance(e.instance, list):  # not the whole list back
            bound = "at least" if e.validator == "minItems" else "at most"
            message = f"{len(e.instance)} items; {bound} {e.validator_value} expected"
        else:
            message = e.message[:200]
        parts.append(f"at {where}: {message}")
    return "; ".join(parts)


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


_THINK = re.compile(r"<think>.*?</think>", re.S)


def extract_json(text: str) -> Any:
    """Parse a model's answer: plain JSON, JSON in a code fence, or the first JSON object in prose.

    Raises ValueError with a readable reason when there is no JSON to be found.
    """
    if text is None or not text.strip():
        raise ValueError("the answer was empty")
    stripped = _THINK.sub("", text).strip()  # reasoning models (DeepSeek-R1, Qwen3, QwQ) think aloud first
    if "</think>" in stripped:  # the opening tag was left out (some chat templates add it)
        stripped = stripped.rsplit("</think>", 1)[1].strip()
    if not stripped:
        raise ValueError("the answer held only reasoning (<think>...</think>) and no JSON; give the JSON after it")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    start = stripped.find("{")
    while start != -1:
        obj, end = _balanced(stripped, start)
        if obj is not None:
            try:
                return json.loads(obj)
            except json.JSONDecodeError:
                pass
        start = stripped.find("{", start + 1)
    preview = stripped[:120].replace("\n", " ")
    raise ValueError(f"the answer was not JSON (it began: {preview!r})")


def _balanced(text: str, start: int) -> tuple[str | None, int]:
    """The {...} block starting at ``start``, respecting strings; (None, -1) if it never closes."""
    depth, in_str, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1], i
    return None, -1


def run_blocking(make_coroutine: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code.

    Outside an event loop it gets its own; called from inside one (ComfyUI runs node code on its loop's
    thread), it runs on a fresh loop in a worker thread so the caller's loop is not re-entered.
    """
    import asyncio
    import threading

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    box: dict[str, Any] = {}

    def worker():
        try:
            box["value"] = asyncio.run(make_coroutine())
        except BaseException as err:  # handed back to the caller below
            box["error"] = err
    thread = threading.Thread(target=worker, name="edit-agents-brain")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
