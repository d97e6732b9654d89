"""The improve loop both planners run: propose, try, re-check at full resolution, keep or revert, with patience.

``enhance`` tries the perceiver's proposals one step deep; ``search`` searches a tree of them. Each step ends the
same way: its winners are re-run at full resolution and re-scored against the photo (``rescore_best``,
``rescore_sequence``), and the best becomes the new state only if it beats the current one by ``min_gain``
(``Progress.keep``), else the state is kept and one more step went by without improvement (``Progress.no_gain``),
up to ``patience`` of them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ...tools.spec import ToolRegistry
from ..loop import attempt_error
from ..records import ToolCall
from ..quality.metrics import HELD_READINGS
from ..trace import Trace
from .scorer import Scorer, model_reading, photo_levels, without_curves
from .state import readings_after


def failed_call(err: Exception) -> str:
    """Why a tool failed on one candidate (a bad call, a missing model file, a model out of memory), as the loops
    judge it (``loop.attempt_error``): the candidate fails, the search goes on. Anything else (a cancel) is
    re-raised."""
    why = attempt_error(err)
    if why is None:
        raise err
    return why


def as_it_came(stats: Mapping[str, float]) -> dict[str, float]:
    """What the perceiver reads on the photo as it came, whatever state it looks at: its span (white level - black
    level, ``photo_span``: a black point is no fade's undoing on a scene narrow by nature, even once an edit widened
    it), its dark channel's floor (``photo_veil``: a pale picture whose strong colours reach black in a channel is no
    fade, even once a dehaze the search tried took that floor down elsewhere) and its colours pushed past the file's
    range (``photo_gamut_clip``: colours a black point or contrast the search tried clipped are not the photo's).
    Empty where the statistics read none of them."""
    out = {}
    if {"white_level", "black_level"} <= stats.keys():
        out["photo_span"] = stats["white_level"] - stats["black_level"]
    for reading in ("veil", "gamut_clip"):
        if reading in stats:
            out[f"photo_{reading}"] = stats[reading]
    return out


@dataclass
class Progress:
    """What an improve loop has kept: the current photo and its score, the photos and edits kept, the steps since."""

    current: np.ndarray
    score: Any  # reward.Score of ``current``
    states: list[np.ndarray] = field(default_factory=list)  # the kept photos, the first the input
    actions: list[ToolCall] = field(default_factory=list)
    stale: int = 0  # steps without improvement since the last kept edit

    def keep(self, scorer: Scorer, tools: ToolRegistry, score, chosen: list[tuple[ToolCall, np.ndarray]]) -> None:
        """Keep ``chosen`` (each edit with the photo after it), scored ``score``: a new current state."""
        for call, img in chosen:
            self.states.append(img)
            self.actions.append(call)
        self.current = chosen[-1][1]
        self.score = scorer.kept(tools, score, self.current, [call for call, _ in chosen])
        self.stale = 0

    def no_gain(self, trace: Trace, agent: str, step: int, patience: int, why: str = "") -> bool:
        """One more step without improvement (``why``, if given, said first in the trace); whether it was the last one
        ``patience`` allows (also said)."""
        self.stale += 1
        if why:
            trace.add("loop", agent, why, round=step)
        if self.stale >= patience:
            trace.add("loop", agent, f"stop: no improvement for {self.stale} step(s)", round=step)
        return self.stale >= patience


def run_steps(trace: Trace, agent: str, why_not: str | None, max_steps: int, step: Callable[[int], bool],
              on_step: Callable[[int, int, str], None] | None, doing: str,
              should_stop: Callable[[], None] | None = None) -> None:
    """The loop both planners run: ``step`` after ``step`` (each says whether the loop ends) up to ``max_steps``, none
    where the photo cannot be judged (``why_not``, said in the trace); ``on_step`` told what each step is ``doing``;
    ``should_stop`` (which may raise) asked before each step, for a loop that does not ask it within its steps."""
    if why_not:
        trace.add("loop", agent, f"stop: {why_not}: left as it is", round=0)
    for n in range(0 if why_not else max_steps):
        if should_stop:
            should_stop()
        if on_step:
            on_step(n, max_steps, f"step {n + 1}/{max_steps}: {doing}")
        if step(n):
            break


def rescore_best(tools: ToolRegistry, scorer: Scorer, calls: list[tuple[ToolCall, str]], current: np.ndarray,
                 original: np.ndarray, trace: Trace, agent: str, step: int,
                 should_stop: Callable[[], None] | None = None, kept: tuple[ToolCall, ...] = (),
                 levels: float | None = None, readings: Mapping[str, float] | None = None) -> tuple:
    """PhotoAgent's check: run the preview winners at full resolution, score each against the
    original, and return the best as (score, call, image). ``calls`` pairs each call with a label note; ``kept``:
    the edits that made ``current`` from ``original`` (their restorations' models count in the preservation term);
    ``levels``: the photo's own posterisation reading (photo_levels); ``readings``: ``current``'s raw statistics,
    whose BRISQUE, NIQE and grid step a tone or colour curve is held to where the scorer says so (Scorer.holds).
    A call whose tool fails is said in the trace and is no candidate; None when every call failed."""
    best = None
    for call, note in calls:
        if should_stop:
            should_stop()
        t = time.perf_counter()
        try:
            out, params, _ = tools.call(call.tool, current, call.params)
        except Exception as err:  # noqa: BLE001 (failed_call re-raises what is not one candidate's failure)
            why = failed_call(err)
            trace.add("reward", agent, f"full-resolution {call.label()}{note} failed: {why}", started=t, round=step,
                      inputs={"tool": call.tool}, outputs={"error": why})
            continue
        held = readings is not None and scorer.holds(tools, (call,), readings)
        held_readings = {"held_readings": {k: readings[k] for k in HELD_READINGS if k in readings}} if held else {}
        s = scorer.reward.score(out, original, known=photo_levels(levels, (*kept, call)) or None,
                                **model_reading(tools, (*kept, call), out), **held_readings)
        trace.add("reward", agent, f"full-resolution {call.label()}{note}", started=t, round=step,
                  inputs={"tool": call.tool, "params": params}, scores=s.as_dict(), preview=out)
        if best is None or s.total > best[0].total:
            best = (s, call, out)
    if best is None and not calls:
        raise ValueError("nothing to re-score: no candidate actions")
    return best


def rescore_sequence(tools: ToolRegistry, scorer: Scorer, calls: list[ToolCall], current: np.ndarray,
                     original: np.ndarray, trace: Trace, agent: str, step: int,
                     should_stop: Callable[[], None] | None = None, kept: tuple[ToolCall, ...] = (),
                     levels: float | None = None, readings: Mapping[str, float] | None = None) -> tuple:
    """The search's best rollout re-run at full resolution as one candidate: (score, [(call, image after it)]), or
    None when a tool of it fails there (said in the trace). ``kept``: the edits that made ``current`` from
    ``original``; ``levels``: the photo's own posterisation reading (scorer.photo_levels); ``readings``: ``current``'s
    raw statistics (where they say it is dark, its tone and colour curves are not held to the quality readings
    without them: Scorer.holds)."""
    t, out, done = time.perf_counter(), current, []
    for call in calls:
        if should_stop:
            should_stop()
        try:
            out = tools.call(call.tool, out, call.params)[0]
        except Exception as err:  # noqa: BLE001 (failed_call re-raises what is not one candidate's failure)
            why = failed_call(err)
            trace.add("reward", agent, f"full-resolution sequence: {call.label()} failed ({why}); the sequence is "
                                       "not a candidate", started=t, round=step, outputs={"error": why})
            return None
        done.append((call, out))
    held = scorer.holds(tools, calls, readings or {})
    s = scorer.reward.score(out, original, known=photo_levels(levels, (*kept, *calls)) or None,
                            **model_reading(tools, (*kept, *calls), out),
                            **({"held_readings": readings_after(tools, current, without_curves(tools, calls))}
                               if held else {}))
    trace.add("reward", agent, f"full-resolution sequence {' -> '.join(c.label() for c in calls)} (the search's best "
                               "rollout)", started=t, round=step, inputs={"sequence": [c.as_dict() for c in calls]},
              scores=s.as_dict(), preview=out)
    return s, done
