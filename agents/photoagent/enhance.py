"""Autonomous enhancement loop ("make it better"): perceive, try, score, keep or revert.

This is PhotoAgent's outer loop with a one-step look-ahead: each step the perceiver
proposes K actions, each is tried on a reduced-resolution preview and scored, the top
ones are re-run at full resolution and re-scored, and the best becomes the new state only
if it beats the current one by ``min_gain``; otherwise the state is kept (revert). It
stops at ``max_steps`` or after ``patience`` steps without improvement. Every step is in
the trace. Bounded: at most max_steps * (candidates + top_k) tool calls.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

import numpy as np

from ...tools.imageops import FLAT_TOLERANCE, as_image, resize_longest, uniform_frame
from ...tools.spec import ToolRegistry
from .perceiver import RulePerceiver
from ..loop import attempt_error
from ..records import ToolCall
from ..quality.reward import ClassicReward, holds_curves
from ..quality.metrics import HELD_READINGS, image_statistics, quality_readings, texture_crops
from ..trace import Trace


def failed_call(err: Exception) -> str:
    """Why a tool failed on one candidate (a bad call, a missing model file, a model out of memory), as the loops
    judge it (``loop.attempt_error``): the candidate fails, the search goes on. Anything else (a cancel) is
    re-raised."""
    why = attempt_error(err)
    if why is None:
        raise err
    return why


FORWARD_SIDE = 256  # the restorations' models run on a copy this long: the preservation term reads 128 px


def through_forward_models(tools: ToolRegistry, calls, img: np.ndarray, scale: float = 1.0) -> np.ndarray | None:
    """``img``, the result of ``calls`` on the photo (``scale`` times its size), with the restorations among them
    undone again by their own models of the defect (``ToolSpec.forward``: a deconvolution's kernel blurs again), on a
    copy at most FORWARD_SIDE long: the photo they say they were given. The reward's preservation term reads this
    beside the result (reward.preserved), so a restoration is charged a quarter of the detail it brings back. None
    when no call has such a model."""
    models = [(spec, call.params) for call in calls
              if call.tool in tools.names() and (spec := tools.get(call.tool)).forward is not None]
    if not models:
        return None
    small = resize_longest(img, FORWARD_SIDE)
    at = scale * max(small.shape[:2]) / max(img.shape[:2])
    seen = None
    for spec, params in reversed(models):  # the last edit is undone first
        clean, _ = spec.validate(params)
        out = spec.forward(small, spec.at_scale(clean, at))
        if out is not None:
            small = seen = out
    return seen


def model_reading(tools: ToolRegistry, calls, img: np.ndarray, scale: float = 1.0) -> dict:
    """The reward's ``as_input`` keyword for ``img`` made by ``calls`` (through_forward_models), or none at all
    when no call has a model: a reward of the user's own need not know the keyword until a restoration is used."""
    seen = through_forward_models(tools, calls, img, scale)
    return {} if seen is None else {"as_input": seen}


def kept_nothing(trace: Trace, agent: str, step: int, stale: int, patience: int, why: str) -> tuple[int, bool]:
    """A step that kept nothing: said in the trace, one more step without improvement; and whether that was the
    last one ``patience`` allows (also said)."""
    stale += 1
    trace.add("loop", agent, why, round=step)
    if stale >= patience:
        trace.add("loop", agent, f"stop: no improvement for {stale} step(s)", round=step)
    return stale, stale >= patience


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


# the shortest side a photo can be judged on: its noise, sharpness, JPEG grid and BRISQUE are read on squares of at
# least 16 px (metrics.texture_boxes), and a thumbnail's few pixels would steer the tone and colour statistics alone
MIN_JUDGED_SIDE = 16

Frame = tuple[int, int, int, int]  # top, bottom, left, right, in px


def photo_in_frame(image) -> tuple[np.ndarray, np.ndarray, Frame | None]:
    """(the image as the statistics read it, the photo inside its frame, the frame or None). 8 or 16 bits are read as
    0..1; a float photo as it comes, in single precision. A frame of one flat colour (a border, letterbox bars, a white
    background: imageops.uniform_frame) is no part of the photo: read as one, a white mount is blown highlights to
    darken and black bars crushed shadows."""
    image = np.asarray(image)
    image = as_image(image) if image.dtype.kind in "ui" or image.ndim == 2 else image.astype(np.float32, copy=False)
    frame = uniform_frame(image, inside=MIN_JUDGED_SIDE)
    if frame is None:
        return image, image, None
    top, bottom, left, right = frame
    return image, np.ascontiguousarray(image[top:image.shape[0] - bottom, left:image.shape[1] - right]), frame


def put_back(result, image: np.ndarray, frame: Frame | None):
    """A loop's ``result`` (its ``image`` and ``steps``) of the photo inside ``frame``, as the whole ``image``: each image
    put back in the frame as it came."""
    if frame is None:
        return result
    top, bottom, left, right = frame
    h, w = image.shape[:2]

    def whole(inside: np.ndarray) -> np.ndarray:
        out = image.copy()
        out[top:h - bottom, left:w - right] = inside
        return out
    return replace(result, image=whole(result.image), steps=[image] + [whole(x) for x in result.steps[1:]])


def note_frame(trace: Trace, agent: str, frame: Frame | None, inside: np.ndarray) -> None:
    if frame is not None:
        top, bottom, left, right = frame
        trace.add("perceiver", agent, f"a frame of one flat colour around the photo ({top}, {bottom}, {left} and "
                                      f"{right} px: top, bottom, left, right) is left as it is; the photo inside it, "
                                      f"{inside.shape[1]}x{inside.shape[0]} px, is what is read and edited",
                  round=0, outputs={"frame": {"top": top, "bottom": bottom, "left": left, "right": right}})


def not_judged(image: np.ndarray, perceiver, reward) -> str | None:
    """Why the rule perceiver and the classic reward cannot judge ``image`` (too small, or one flat colour), or None. A
    brain judging a thumbnail with a reward of its own may."""
    if not (isinstance(perceiver, RulePerceiver) or isinstance(reward, ClassicReward)):
        return None
    if min(image.shape[:2]) < MIN_JUDGED_SIDE:
        return (f"the photo is {image.shape[1]}x{image.shape[0]} px, too small to judge (noise, blur and the quality "
                f"scores need at least {MIN_JUDGED_SIDE} px a side)")
    if float(np.ptp(image[..., :3])) <= FLAT_TOLERANCE:  # a blank canvas: its white read as blown highlights
        return "the image is one flat colour, nothing in it to enhance"
    return None


def photo_levels(levels: float | None, calls: Iterable[ToolCall]) -> dict[str, float]:
    """Posterisation is read on the photo as it came, not on an edit of it: a tone edit that stretches an 8-bit photo
    spreads its levels apart as posterisation does, and an 8-bit and a 16-bit copy of a photo would then be edited
    apart. Only after an edit that fills the levels in (deband) is the result read afresh. ``levels``: the photo's
    own reading (None: read every image afresh); ``calls``: the edits made to it."""
    return {} if levels is None or any(c.tool == "deband" for c in calls) else {"level_step": levels}


def photo_tones(stats: Mapping[str, float]) -> dict[str, float]:
    """The tones the photo came with, for the perceiver: its span (white level - black level, ``photo_span``: a black
    point is no fade's undoing on a scene narrow by nature, even once an edit widened it) and its dark channel's floor
    (``photo_veil``: a pale picture whose strong colours reach black in a channel is no fade, even once a dehaze the
    search tried took that floor down elsewhere). Empty where the statistics read no tone."""
    out = {}
    if {"white_level", "black_level"} <= stats.keys():
        out["photo_span"] = stats["white_level"] - stats["black_level"]
    if "veil" in stats:
        out["photo_veil"] = stats["veil"]
    return out


def without_curves(tools: ToolRegistry, calls) -> list[ToolCall]:
    """``calls`` without the tone and colour curves among them (ToolSpec.pointwise)."""
    return [c for c in calls if not tools.get(c.tool).pointwise]


def as_it_is(reward: ClassicReward, score, image: np.ndarray):
    """``score`` of a kept photo (``image``) with the photo's own BRISQUE, NIQE and grid step. A step that kept a tone
    or colour curve was scored held to the readings without it (Reward.score's held_readings); the next step's
    candidates are measured as they are, so the curve's change of the readings must count for them no more than it
    did for it."""
    return reward.with_readings(score, quality_readings(image))


def rescore_best(tools: ToolRegistry, reward: ClassicReward, calls: list[tuple[ToolCall, str]], current: np.ndarray,
                 original: np.ndarray, trace: Trace, agent: str, step: int,
                 should_stop: Callable[[], None] | None = None, kept: tuple[ToolCall, ...] = (),
                 levels: float | None = None, readings: Mapping[str, float] | None = None) -> tuple:
    """PhotoAgent's check: run the preview winners at full resolution, score each against the
    original, and return the best as (score, call, image). ``calls`` pairs each call with a label note; ``kept``:
    the edits that made ``current`` from ``original`` (their restorations' models count in the preservation term);
    ``levels``: the photo's own posterisation reading (photo_levels); ``readings``: ``current``'s raw statistics,
    whose BRISQUE, NIQE and grid step a tone or colour curve (ToolSpec.pointwise) is held to (Reward.score's
    held_readings), unless they say it is dark (reward.holds_curves).
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
        held = (readings is not None and isinstance(reward, ClassicReward) and tools.get(call.tool).pointwise
                and holds_curves(readings))
        # only a ClassicReward takes held readings (a reward of the user's own may not)
        held_readings = {"held_readings": {k: readings[k] for k in HELD_READINGS if k in readings}} if held else {}
        s = reward.score(out, original, known=photo_levels(levels, (*kept, call)) or None,
                         **model_reading(tools, (*kept, call), out), **held_readings)
        trace.add("reward", agent, f"full-resolution {call.label()}{note}", started=t, round=step,
                  inputs={"tool": call.tool, "params": params}, scores=s.as_dict(), preview=out)
        if best is None or s.total > best[0].total:
            best = (s, call, out)
    if best is None and not calls:
        raise ValueError("nothing to re-score: no candidate actions")
    return best


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
    settings = settings or EnhanceSettings()
    reward = reward or ClassicReward()
    perceiver = perceiver or RulePerceiver()
    trace = Trace(title="PhotoAgent enhance (one-step look-ahead)", listener=listener)
    note_frame(trace, agent, frame, image)
    original, preview_original = image, resize_longest(image, settings.preview_side)

    t0 = time.perf_counter()
    current, current_score = image, reward.score(image, original)
    start_score = current_score.total
    levels = current_score.raw.get("level_step")  # the photo's own posterisation reading (photo_levels)
    came = photo_tones(current_score.raw)  # its own tonal span and floor, for the perceiver
    trace.add("reward", agent, "score the input", started=t0, scores=current_score.as_dict(), preview=image,
              outputs={"statistics": {k: round(v, 4) for k, v in current_score.raw.items()}})
    states, actions = [image], []
    tried: set[str] = set()  # memory: actions already tried from the current state
    stale = 0
    why_not = not_judged(image, perceiver, reward)
    if why_not:
        trace.add("loop", agent, f"stop: {why_not}: left as it is", round=0)
    for step in range(0 if why_not else settings.max_steps):
        if should_stop:
            should_stop()
        if on_step:
            on_step(step, settings.max_steps, f"step {step + 1}/{settings.max_steps}: perceiving")
        t = time.perf_counter()
        crops = texture_crops(current)
        stats = {**image_statistics(current, crops, known=photo_levels(levels, actions)), **came}
        proposals = perceiver.propose(stats, settings.candidates, tools.names(), tried, image=current, crops=crops)
        trace.add("perceiver", agent, f"proposed {len(proposals)} actions", started=t, round=step,
                  outputs={"actions": [c.as_dict() for c in proposals]})
        if not proposals:
            trace.add("loop", agent, "stop: nothing left to try", round=step)
            break
        # Try every proposal on the reduced-resolution preview.
        preview = resize_longest(current, settings.preview_side)
        ranked, readings = [], None  # the preview's BRISQUE and NIQE, which a tone or colour curve is held to
        for call in proposals:
            if should_stop:
                should_stop()
            t = time.perf_counter()
            scaled = tools.get(call.tool).at_scale(call.params, max(preview.shape[:2]) / max(current.shape[:2]))
            tried.add(call.key())
            try:
                out, params, notes = tools.call(call.tool, preview, scaled)
            except Exception as err:  # noqa: BLE001 (failed_call re-raises what is not one candidate's failure)
                why = failed_call(err)
                trace.add("executor", agent, f"preview {call.label()} failed: {why}", started=t, round=step,
                          inputs={"tool": call.tool}, outputs={"error": why})
                continue
            scale = max(preview.shape[:2]) / max(image.shape[:2])
            held = isinstance(reward, ClassicReward) and tools.get(call.tool).pointwise and holds_curves(stats)
            if held and readings is None:
                readings = quality_readings(preview)
            s = reward.score(out, preview_original, known=photo_levels(levels, (*actions, call)) or None,
                             **model_reading(tools, (*actions, call), out, scale),
                             **({"held_readings": readings} if held else {}))
            ranked.append((s.total, call))
            trace.add("executor", agent, f"preview {call.label()}", started=t, round=step,
                      inputs={"tool": call.tool, "params": params, "rationale": call.rationale},
                      outputs={"notes": notes}, scores={"preview_total": round(s.total, 5)})
        ranked.sort(key=lambda r: -r[0])
        # Re-run the best few at full resolution and keep the best if it beats the current state.
        best = rescore_best(tools, reward, [(c, "") for _, c in ranked[:settings.top_k]], current, original,
                            trace, agent, step, should_stop, kept=tuple(actions), levels=levels,
                            readings=current_score.raw) if ranked else None
        if best is None:  # every proposal failed: a step without a result
            stale, out = kept_nothing(trace, agent, step, stale, settings.patience, "revert: every action tried failed")
            if out:
                break
            continue
        gain = best[0].total - current_score.total
        if gain > settings.min_gain:
            current = best[2]
            states.append(current)
            actions.append(best[1])
            current_score = as_it_is(reward, best[0], current) \
                if isinstance(reward, ClassicReward) and tools.get(best[1].tool).pointwise else best[0]
            tried.clear()  # a new state: everything may be worth trying again
            stale = 0
            trace.add("loop", agent, f"accept {best[1].label()}", round=step,
                      scores={"total": round(current_score.total, 5), "gain": round(gain, 5)},
                      outputs={"action": best[1].as_dict()}, image=len(states) - 1, preview=current)
        else:
            stale += 1
            trace.add("loop", agent, f"revert: best {best[1].label()} gains {gain:+.4f}", round=step,
                      scores={"total": round(current_score.total, 5), "gain": round(gain, 5)})
            if stale >= settings.patience:
                trace.add("loop", agent, f"stop: no improvement for {stale} step(s)", round=step)
                break
    trace.summary = {
        "steps": len(actions),
        "actions": [a.as_dict() for a in actions],
        "score_before": round(start_score, 5),
        "score_after": round(current_score.total, 5),
        "wall_s": round(time.perf_counter() - t0, 3),
    }
    return EnhanceResult(current, states, actions, start_score, current_score.total, trace)
