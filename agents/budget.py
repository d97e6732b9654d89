"""What a request costs in a model's context, and fitting it there before it is sent.

Local servers cut a prompt longer than their context silently (Ollama keeps its end), so the model answers from
half its instructions. Every request is therefore counted before it leaves: text by a conservative estimate
(by kind of character; bench/llm_budget.py prints its error against the Qwen2.5 and Llama 3 tokenizers),
images by the Qwen2.5-VL grid or a family's fixed cost. What does not fit is trimmed through the request's own
``trim`` (history thumbnails and entries, oldest first); what still does not fit is a ``ContextError`` that names
the role, its size and the setting to raise.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ..tools.errors import shown_by_name
from .brain import BrainError, BrainRequest, system_for, system_with_schema

# tokens per character by kind: the smallest weights that never fell below Qwen2.5's or Llama 3's count on the
# prompts, manuals, tool lines, schemas and non-English text measured (bench/llm_budget.py prints the error)
TOKENS_PER_CHARACTER = {"letter": 0.2, "digit": 1.0, "space": 0.3, "punctuation": 0.9, "non-ASCII byte": 0.4}
MESSAGE_TOKENS = 8  # a chat template's role markers around each message
PATCH = 28  # Qwen2.5-VL: 14 px patches merged 2 x 2; one token per 28 x 28 px
MIN_IMAGE_TOKENS = 64  # Qwen's smallest picture (56 x 56 px) is 4; a floor for families with coarser grids
# families whose images cost a fixed number of tokens whatever their size (by model name, lower case)
FIXED_IMAGE_TOKENS = (("bakllava", 576), ("llava", 2880), ("gemma3", 256), ("minicpm-v", 640))
REASK_TOKENS = 450  # what one re-ask adds: the rejected answer and the problem (600 characters each, brain.REASK_ECHO)


@shown_by_name
class ContextError(BrainError):
    """A request does not fit the brain's context even with its history trimmed; says which setting to raise."""


def text_tokens(text: str) -> int:
    """At least the tokens ``text`` takes in the tokenizers measured (a conservative estimate): by kind of
    character, since words merge into few tokens but digits and punctuation do not (Qwen gives every digit its
    own token, so a manual's ranges cost more than its prose)."""
    letters = digits = spaces = other = wide = 0
    for ch in text:
        if ch.isascii():
            if ch.isalpha():
                letters += 1
            elif ch.isdigit():
                digits += 1
            elif ch.isspace():
                spaces += 1
            else:
                other += 1
        else:
            wide += len(ch.encode("utf-8"))
    per = TOKENS_PER_CHARACTER
    return math.ceil(letters * per["letter"] + digits * per["digit"] + spaces * per["space"]
                     + other * per["punctuation"] + wide * per["non-ASCII byte"]) + 2


def image_tokens(height: int, width: int, side: int, model: str = "") -> int:
    """The tokens an image takes once sent at most ``side`` px long: a fixed cost for the families that have one,
    else Qwen2.5-VL's grid (its vision markers included)."""
    name = model.lower()
    for prefix, fixed in FIXED_IMAGE_TOKENS:
        if prefix in name:
            return fixed
    scale = min(1.0, side / max(height, width, 1))
    h, w = max(PATCH, round(height * scale / PATCH) * PATCH), max(PATCH, round(width * scale / PATCH) * PATCH)
    return max(MIN_IMAGE_TOKENS, (h // PATCH) * (w // PATCH)) + 2


def request_tokens(system: str, text: str, images: Sequence[Any], side: int, model: str = "") -> int:
    """The prompt tokens of one system message and one user message with ``images`` (arrays, H x W x C)."""
    pictures = sum(image_tokens(img.shape[0], img.shape[1], side, model) for img in images)
    return text_tokens(system) + text_tokens(text) + 2 * MESSAGE_TOKENS + pictures


def prompt_budget(context: int, answer_tokens: int) -> int:
    """The tokens a prompt may take: the context less the answer's room and one re-ask."""
    return context - answer_tokens - REASK_TOKENS


def fit(request: BrainRequest, system_of: Callable[[BrainRequest], str], *, context: int, answer_tokens: int,
        side: int, model: str, who: str, setting: str,
        count: Callable[[str, BrainRequest], int] | None = None) -> tuple[str, int, list[str]]:
    """Trim ``request`` in place until it fits ``context``; returns (the system prompt to send, the request's
    tokens, what was left out). ``system_of`` renders the system prompt (a trim may shorten the role's own);
    ``count`` is the model's own count of (system, request) where the brain has its tokenizer, else the estimate.

    Raises ``ContextError`` naming the role, the size, and ``setting`` (what to raise) when trimming is not
    enough."""
    count = count or (lambda system, req: request_tokens(system, req.text, req.images, side, model))
    budget = prompt_budget(context, answer_tokens)
    system = system_of(request)
    size = count(system, request)
    notes: list[str] = []
    while size > budget and request.trim is not None:
        dropped = request.trim()
        if not dropped:
            break
        system = system_of(request)
        new = count(system, request)
        notes.append(f"{dropped} left out to fit the context ({size} -> {new} of {budget} tokens)")
        size = new
    if size > budget:
        raise ContextError(
            f"the {request.role} request to {who} is about {size} tokens (images included), more than the "
            f"{budget} that a context of {context} tokens leaves after {answer_tokens} for the answer and "
            f"{REASK_TOKENS} for a re-ask; raise {setting}, or lower the Brain's image_side or max_tokens")
    return system, size, notes


def fit_to(request: BrainRequest, config: Any, schema_as_parameter: bool, who: str,
           setting: str) -> tuple[str, int, list[str]]:
    """``fit`` to an endpoint brain's ``BrainConfig`` (its context, answer room, image side and model): the
    system prompt carries the schema unless it goes as the structured-output parameter."""
    return fit(request, lambda r: system_for(r, schema_as_parameter), context=config.context_size,
               answer_tokens=config.max_tokens, side=config.image_side, model=config.model, who=who, setting=setting)


def schema_into_prompt(messages: list[dict], request: BrainRequest, config: Any, who: str,
                       setting: str) -> list[dict]:
    """``messages`` with the schema in the system prompt, for an endpoint that refused it as a parameter; the
    request is checked against the context again, since the schema makes it longer."""
    system = system_with_schema(request)
    if messages[0]["content"] == system:
        return messages
    size = request_tokens(system, request.text, request.images, config.image_side, config.model)
    if size > prompt_budget(config.context_size, config.max_tokens):
        raise ContextError(
            f"{who} takes no JSON schema as a parameter, and the {request.role} request with its schema in the prompt "
            f"is about {size} tokens, beyond what a context of {config.context_size} leaves; raise {setting}")
    return [{"role": "system", "content": system}, *messages[1:]]

