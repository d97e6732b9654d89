"""What every role shares: its prompt files, where it is called from, and asking a brain (interruptible, traced,
with a history that can be trimmed to fit a context)."""
from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, Callable

import numpy as np

from ..brain import Brain, BrainAnswer, BrainRequest
from ..records import HistoryContext
from ..trace import Trace

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


@functools.lru_cache(maxsize=None)
def _template(name: str) -> Template:
    return Template((PROMPTS / f"{name}.md").read_text())


def prompt(name: str, **values: Any) -> str:
    return _template(name).safe_substitute({k: str(v) for k, v in values.items()}).strip()


@dataclass
class Where:
    """Where a role is called from: the trace it writes to and its place in a loop."""

    trace: Trace
    agent: str
    round: int | None = None
    subtask: int | None = None
    attempt: int | None = None
    should_stop: Callable[[], None] | None = None

    def at(self, **kw: Any) -> "Where":
        return Where(**{**self.__dict__, **kw})


async def interruptible(call, should_stop: Callable[[], None] | None, poll_s: float = 0.1):
    """Await ``call`` while checking ``should_stop`` every ``poll_s``: when it raises (the user pressed Cancel),
    the call is cancelled at once instead of running to the end of a slow request."""
    if should_stop is None:
        return await call
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            should_stop()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def ask(brain: Brain, request: BrainRequest, where: Where, action: str,
              preview: np.ndarray | None = None) -> BrainAnswer:
    """Ask a brain for one role's answer (interruptible), recording it in the trace."""
    if where.should_stop:
        where.should_stop()
    start = time.perf_counter()
    request.agent = where.agent
    request.on_text = lambda text: where.trace.live(request.role, where.agent, text)
    answer = await interruptible(brain.ask(request), where.should_stop)
    where.trace.add(request.role, where.agent, action, started=start, round=where.round, subtask=where.subtask,
                    attempt=where.attempt,
                    inputs={"brain": brain.name, "text": request.text[:600], "images": len(request.images),
                            **({"prompt_tokens": answer.prompt_tokens} if answer.prompt_tokens else {})},
                    outputs={**answer.data, **({"notes": answer.notes} if answer.notes else {})},
                    tokens=answer.tokens, cost=round(answer.cost, 6),
                    preview=preview if preview is not None else request.images[-1] if request.images else None)
    return answer


def with_history(req: BrainRequest, history: HistoryContext | None, text: Callable[[HistoryContext], str],
                 image: np.ndarray, *, then: Callable[[], str | None] | None = None) -> BrainRequest:
    """``req`` with its text and images (the photo, then the history's thumbnails) drawn from ``history``, and a
    ``trim`` that leaves out the history's oldest pieces one by one when the request must fit a context, and
    then whatever ``then`` shortens (it says what, or None)."""
    window = [history or HistoryContext()]

    def show() -> None:
        req.text, req.images = text(window[0]), [image, *window[0].images()]

    def trim() -> str | None:
        smaller = window[0].trimmed()
        if smaller is None:
            return then() if then is not None else None
        window[0], dropped = smaller
        show()
        return dropped

    show()
    req.trim = trim
    return req
