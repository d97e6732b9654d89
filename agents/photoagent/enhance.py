"""Autonomous enhancement loop ("make it better"): perceive, try, score, keep or revert.

This is PhotoAgent's outer loop with a one-step look-ahead: each step the perceiver
proposes K actions, each is tried on a reduced-resolution preview and scored, the top
ones are re-run at full resolution and re-scored, and the best becomes the new state only
if it beats the current one by ``min_gain``; otherwise the state is kept (revert). It
stops at ``max_steps`` or after ``patience`` steps without improvement. Every step is in
the trace. Bounded: at most max_steps * (candidates + top_k) tool calls. The full-resolution check and the
keep-or-revert with patience are the improve loop's (``improve``), which the MCTS planner (``search``) shares.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...tools.imageops import resize_longest
from ...tools.spec import ToolRegistry
from .frame import not_judged, note_frame, photo_in_frame, put_back
from .improve import Progress, failed_call, as_it_came, rescore_best, run_steps
from ..quality.perception import RulePerceiver
from .scorer import Scorer, model_reading, photo_levels, through_forward_models  # noqa: F401 (public)
from ..records import ToolCall
from ..quality.reward import ClassicReward
from ..quality.metrics import image_statistics, quality_readings, texture_crops
from ..trace import Trace


class Interrupted(RuntimeError):
    """Raised by a ``should_stop`` callback to end a loop between steps."""


@dataclass(frozen=True)
class EnhanceSettings:
    max_steps: int = 6
    candidates: int = 8  # K actions proposed per step
    top_k: int = 2  # how many preview winners are re-run at full resolution
    patience: int = 1  # steps without improvement before stopping
    min_gain: float = 0.01  # a new state must beat the current reward by this much
    preview_side: int = 384  # longest side of the reduced-resolution copy

    def __post_init__(self):
        for name in ("max_steps", "candidates", "top_k", "patience", "preview_side"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not np.isfinite(self.min_gain) or self.min_gain < 0:
            raise ValueError(f"min_gain must be a finite number >= 0, got {self.min_gain}")


@dataclass
class EnhanceResult:
    image: np.ndarray
    steps: list[np.ndarray]  # accepted states, in order (the first is the input)
    actions: list[ToolCall]
    score_before: float
    score_after: float
    trace: Trace = field(default_factory=Trace)


def enhance(image: np.ndarray, tools: ToolRegistry, reward: ClassicReward | None = None,
            settings: EnhanceSettings | None = None, perceiver: RulePerceiver | None = None,
            should_stop: Callable[[], None] | None = None,
            on_step: Callable[[int, int, str], None] | None = None,
            agent: str = "photoagent", listener: Callable | None = None) -> EnhanceResult:
    """Run the loop. ``should_stop`` may raise to interrupt; ``on_step(step, total, text)`` reports progress;
    ``listener`` gets each trace step as it is made. A frame of one flat colour around the photo stays as it came
    (photo_in_frame)."""
    if len(tools) == 0:
        raise ValueError("the toolbox has no tools: connect a Toolbox that allows at least one tool")
    whole, image, frame = photo_in_frame(image)
    return put_back(_enhance(image, tools, reward, settings, perceiver, should_stop, on_step, agent, listener, frame),
                    whole, frame)


def _enhance(image, tools, reward, settings, perceiver, should_stop, on_step, agent, listener, frame) -> EnhanceResult:
    return _Greedy(image, tools, reward, settings, perceiver, should_stop, agent, listener).run(frame, on_step)


class _Greedy:
    """One greedy run on a photo: the improve loop (improve.Progress) with the perceiver's proposals tried one step deep
    on a reduced copy."""

    def __init__(self, image, tools, reward, settings, perceiver, should_stop, agent, listener):
        self.s = settings or EnhanceSettings()
        self.scorer, self.perceiver = Scorer(reward or ClassicReward()), perceiver or RulePerceiver()
        self.image, self.tools, self.should_stop, self.agent = image, tools, should_stop, agent
        self.trace = Trace(title="PhotoAgent enhance (one-step look-ahead)", listener=listener)
        self.preview_original = resize_longest(image, self.s.preview_side)
        self.tried: set[str] = set()  # memory: actions already tried from the current state

    def run(self, frame, on_step) -> EnhanceResult:
        """Score the photo, then perceive, try and keep or revert step by step; the result with its trace."""
        image, trace, agent, s = self.image, self.trace, self.agent, self.s
        note_frame(trace, agent, frame, image)
        t0 = time.perf_counter()
        score = self.scorer.reward.score(image, image)
        self.progress = Progress(image, score, [image])
        self.levels = score.raw.get("level_step")  # the photo's own posterisation reading (photo_levels)
        self.came = as_it_came(score.raw)  # its own span, floor and clipped colours, for the perceiver
        trace.add("reward", agent, "score the input", started=t0, scores=score.as_dict(), preview=image,
                  outputs={"statistics": {k: round(v, 4) for k, v in score.raw.items()}})
        run_steps(trace, agent, not_judged(image, self.perceiver, self.scorer), s.max_steps, self.step, on_step,
                  "perceiving", self.should_stop)
        progress = self.progress
        trace.summary = {"steps": len(progress.actions), "actions": [a.as_dict() for a in progress.actions],
                         "score_before": round(score.total, 5), "score_after": round(progress.score.total, 5),
                         "wall_s": round(time.perf_counter() - t0, 3)}
        return EnhanceResult(progress.current, progress.states, progress.actions, score.total, progress.score.total,
                             trace)

    def step(self, step: int) -> bool:
        """One step: perceive the current photo, try the proposals on its copy, re-check the best few at full
        resolution, keep or revert; whether the loop ends."""
        trace, agent, progress, s = self.trace, self.agent, self.progress, self.s
        t, current = time.perf_counter(), progress.current
        crops = texture_crops(current)
        stats = {**image_statistics(current, crops, known=photo_levels(self.levels, progress.actions)), **self.came}
        proposals = self.perceiver.propose(stats, s.candidates, self.tools.names(), self.tried, image=current,
                                           crops=crops)
        trace.add("perceiver", agent, f"proposed {len(proposals)} actions", started=t, round=step,
                  outputs={"actions": [c.as_dict() for c in proposals]})
        if not proposals:
            trace.add("loop", agent, "stop: nothing left to try", round=step)
            return True
        ranked = self.try_on_preview(proposals, stats, step)
        ranked.sort(key=lambda r: -r[0])
        # Re-run the best few at full resolution and keep the best if it beats the current state.
        best = rescore_best(self.tools, self.scorer, [(c, "") for _, c in ranked[:s.top_k]], current, self.image,
                            trace, agent, step, self.should_stop, kept=tuple(progress.actions), levels=self.levels,
                            readings=progress.score.raw) if ranked else None
        if best is None:  # every proposal failed: a step without a result
            return progress.no_gain(trace, agent, step, s.patience, "revert: every action tried failed")
        gain = best[0].total - progress.score.total
        if gain > s.min_gain:
            progress.keep(self.scorer, self.tools, best[0], [(best[1], best[2])])
            self.tried.clear()  # a new state: everything may be worth trying again
            trace.add("loop", agent, f"accept {best[1].label()}", round=step,
                      scores={"total": round(progress.score.total, 5), "gain": round(gain, 5)},
                      outputs={"action": best[1].as_dict()}, image=len(progress.states) - 1, preview=progress.current)
            return False
        trace.add("loop", agent, f"revert: best {best[1].label()} gains {gain:+.4f}", round=step,
                  scores={"total": round(progress.score.total, 5), "gain": round(gain, 5)})
        return progress.no_gain(trace, agent, step, s.patience)

    def try_on_preview(self, proposals: list[ToolCall], stats: dict, step: int) -> list[tuple[float, ToolCall]]:
        """Every proposal tried on the reduced-resolution copy of the current photo and scored: (total, call) each,
        in the proposals' order; a call whose tool fails is said in the trace and left out."""
        tools, trace, agent, current = self.tools, self.trace, self.agent, self.progress.current
        preview = resize_longest(current, self.s.preview_side)
        ranked, readings = [], None  # the preview's BRISQUE and NIQE, which a tone or colour curve is held to
        for call in proposals:
            if self.should_stop:
                self.should_stop()
            t = time.perf_counter()
            scaled = tools.get(call.tool).at_scale(call.params, max(preview.shape[:2]) / max(current.shape[:2]))
            self.tried.add(call.key())
            try:
                out, params, notes = tools.call(call.tool, preview, scaled)
            except Exception as err:  # noqa: BLE001 (failed_call re-raises what is not one candidate's failure)
                why = failed_call(err)
                trace.add("executor", agent, f"preview {call.label()} failed: {why}", started=t, round=step,
                          inputs={"tool": call.tool}, outputs={"error": why})
                continue
            scale = max(preview.shape[:2]) / max(self.image.shape[:2])
            held = self.scorer.holds(tools, (call,), stats)
            if held and readings is None:
                readings = quality_readings(preview)
            kept = (*self.progress.actions, call)
            s = self.scorer.reward.score(out, self.preview_original, known=photo_levels(self.levels, kept) or None,
                                         **model_reading(tools, kept, out, scale),
                                         **({"held_readings": readings} if held else {}))
            ranked.append((s.total, call))
            trace.add("executor", agent, f"preview {call.label()}", started=t, round=step,
                      inputs={"tool": call.tool, "params": params, "rationale": call.rationale},
                      outputs={"notes": notes}, scores={"preview_total": round(s.total, 5)})
        return ranked
