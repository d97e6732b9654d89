"""What the instruction-driven loops (CCA in ``cca.py``, IMAGAgent in ``imagagent.py``) share.

A loop is its state and a flow written once: ``after_round`` (CCA) or ``after_attempt`` (IMAGAgent) take
the state and what the execute step produced, and decide what comes next. A runner only decides where the
execute step runs: in process (``run_cca``, ``run_closed_loop``, the loop nodes without graph tools), or as
Executor nodes that expand graph tools (the loop nodes with graph tools). Each loop's cast of brains (who
plays which role, the defaults, closing them) is one object, used by the nodes and the Python API alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Protocol, TypeVar

import numpy as np

from ..tools.errors import shown_by_name
from ..tools.spec import ToolCallError
from .brain import Brain, BrainError, InvalidAnswerError, close_brains
from .records import ToolCall
from .trace import Trace

T = TypeVar("T")


@shown_by_name
class LoopFailed(RuntimeError):
    """Nothing at all succeeded in a loop: every attempt or candidate failed. The message quotes the last failure,
    which names the endpoint or the tool."""


def attempt_error(err: BaseException) -> str | None:
    """Why one attempt (or candidate) failed, when ``err`` fails just that: a brain that never gave a valid answer,
    an invalid chain, a tool that raised at run time (a mask of the wrong size, out of memory, a model's error).
    None when the run itself must stop: an endpoint that cannot be reached, a cancel."""
    if isinstance(err, BrainError) and not isinstance(err, InvalidAnswerError):
        return None
    if isinstance(err, (InvalidAnswerError, ToolCallError, ValueError, RuntimeError, MemoryError, OSError)):
        return f"{type(err).__name__}: {err}"
    return None


async def attempted(step: Awaitable[T]) -> tuple[T | None, str]:
    """Run a step whose failure fails one attempt or candidate: (its result, "") or (None, why). What must stop
    the run (an unreachable endpoint, a cancel) is re-raised; see ``attempt_error``."""
    try:
        return await step, ""
    except Exception as err:  # noqa: BLE001 - sorted by attempt_error: a failed attempt, or re-raised
        why = attempt_error(err)
        if why is None:
            raise
        return None, why


@dataclass
class Executed:
    """What one execute step produced, wherever it ran (in process, or an Executor node): the chains run and the
    result; or ``failed``, why this attempt or candidate failed (the loop goes on); or ``error``, a brain failure
    that stops the run unless the loop keeps its best (an exception in process, its text from an Executor node)."""

    chains: list[list[ToolCall]] = field(default_factory=list)
    image: np.ndarray | None = field(default=None, repr=False)
    failed: str = ""
    error: BaseException | str | None = None

    def chain(self) -> list[ToolCall]:
        """The calls of every chain, in order."""
        return [c for chain in self.chains for c in chain]


async def execute_or_fail(step: Awaitable[tuple[list[list[ToolCall]], np.ndarray]]) -> Executed:
    """Run an in-process execute step (returning its chains and result) into an ``Executed``: a failed attempt
    keeps why, a brain that must stop the run keeps its error for the flow; a cancel is re-raised."""
    try:
        done, why = await attempted(step)
    except BrainError as err:
        return Executed(error=err)
    if done is None:
        return Executed(failed=why)
    chains, image = done
    return Executed(chains, image)


async def raise_brain_error(error: BaseException | str):
    """Re-raise a brain failure an execute step reported, inside the flow (so ``or_keep_best`` can keep the best)."""
    if isinstance(error, BaseException):
        raise error
    raise BrainError(error)


class LoopState(Protocol):
    trace: Trace
    error: str

    def has_result(self) -> bool: ...

    def kept(self) -> str: ...


async def or_keep_best(state: LoopState, keep: bool, step: Awaitable[T], what: str, agent: str) -> T | None:
    """Run a loop step; when a brain fails in it (the endpoint died, ...) and ``keep`` says so, the loop ends with
    what it has (``state.kept()``) and the error in the trace, and None is returned. Without anything done yet
    (``state.has_result()``) it fails."""
    try:
        return await step
    except BrainError as err:
        if not (keep and state.has_result()):
            raise
        state.error = f"{what} failed: {err}"
        state.trace.add("loop", agent, f"stop: a brain failed in {what}; keeping {state.kept()}",
                        outputs={"error": str(err)})
        return None


class Cast(Protocol):
    """Who plays which role in one loop; ``brains()`` lists each brain once."""

    def brains(self) -> list[Brain]: ...


async def close_cast(cast: Cast) -> None:
    """Release what the cast's brains hold (HTTP clients) in the event loop that used them."""
    await close_brains(*cast.brains())
