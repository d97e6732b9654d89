"""PhotoAgent's exploratory planner: Monte-Carlo tree search over editing actions (Algorithm 1).

Each simulation: UCT selection down the tree; expansion of a leaf with the perceiver's proposals for
that state (asked once per state and cached; a vision brain within a per-step call budget); a random
rollout to depth d; the evaluator's reward G of the rollout's final state s_T, backed up the path
(N and the mean Q). UCT normalises Q by the smallest and largest G seen in the search, so the
exploration constant is on the scale of the rewards whatever their spread. Every state has a terminal
"stop" action (keep the photo as it is), so the search weighs "no edit" against every edit. The most
visited first action wins; the most visited few are re-run at full resolution and re-scored, and the
best becomes the new state only if it beats the current one (else revert). Stops at max_steps, when
the search prefers to stop, or after ``patience`` steps without improvement.

The search state is a reduced-resolution copy plus four native-resolution crops: tone and colour
are judged on the copy, noise and sharpness on the crops, where they are still visible.
"""
from __future__ import annotations

import hashlib
import math
import random
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from ...tools.imageops import STATISTICS_SIDE, resize, resize_longest, thumbnail_data_url
from ...tools.models import MissingModelError
from ...tools.spec import ToolRegistry
from .enhance import (as_it_is, failed_call, kept_nothing, model_reading, not_judged, note_frame, photo_in_frame,
                      photo_levels, photo_tones, put_back, rescore_best, without_curves)
from .perceiver import BrainPerceiver, Memory, Perception, RulePerceiver, estimate_kernel
from ..records import ToolCall
from ..quality.reward import ClassicReward, holds_curves, spare_thread, torch_threads
from ..quality.metrics import HELD_READINGS, image_statistics, quality_readings, texture_boxes, texture_crops
from ..trace import Trace

STOP = ToolCall("stop", {}, "keep the photo as it is")


@dataclass(frozen=True)
class MCTSSettings:
    simulations: int = 24  # per step
    depth: int = 3  # rollout depth d
    exploration: float = 1.0  # UCT constant c, on Q normalised to 0..1 by the search's min and max reward
    branching: int = 6  # actions the perceiver proposes per state
    top_k: int = 2  # most-visited actions re-run at full resolution
    max_steps: int = 4
    patience: int = 1
    min_gain: float = 0.005
    preview_side: int = 256
    time_budget_s: float = 60.0  # per step
    seed: int = 0
    perceiver_calls: int = 4  # per step, for a vision-brain perceiver (each is a VLM request)

    def __post_init__(self):
        for name in ("simulations", "depth", "branching", "top_k", "max_steps", "patience", "preview_side",
                     "perceiver_calls"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not (self.exploration >= 0 and self.time_budget_s > 0 and math.isfinite(self.min_gain)):
            raise ValueError("exploration must be >= 0, time_budget_s > 0 and min_gain finite")


@dataclass
class State:
    """What the search edits: the reduced copy and the native-resolution texture crops."""

    preview: np.ndarray = field(repr=False)
    crops: list[np.ndarray] = field(repr=False)
    scale: float = 1.0  # the preview's size relative to the photo: lengths in pixels are scaled by it
    size: tuple[int, int] = (0, 0)  # the photo's height and width, where the crops were cut


@dataclass
class TreeNode:
    state: State = field(repr=False)
    depth: int
    key: tuple
    action: ToolCall | None = None
    proposals: list[ToolCall] | None = None  # the perceiver's actions from this state (None: not asked yet)
    failed: str = ""  # the action's tool raised: why (a failed child, never selected, never chosen)
    untried: list[ToolCall] | None = None
    children: list["TreeNode"] = field(default_factory=list)
    visits: int = 0
    total: float = 0.0

    @property
    def image(self) -> np.ndarray:
        return self.state.preview

    @property
    def terminal(self) -> bool:
        return self.action is STOP

    @property
    def mean(self) -> float:
        return self.total / self.visits if self.visits else 0.0

    def as_dict(self, levels: int = 2) -> dict[str, Any]:
        """The tree ``levels`` deep, most visited first; each node with a 64 px thumbnail of its
        (preview-resolution) state for the tree view."""
        out = {"action": self.action.label() if self.action else "(current)", "visits": self.visits,
               "mean": round(self.mean, 5)} | ({"error": self.failed} if self.failed else {})
        if self.action is not None:
            out["tool"], out["params"] = self.action.tool, dict(self.action.params)
        out["thumb"] = thumbnail_data_url(self.image, side=64, quality=70)
        if levels > 0 and self.children:
            out["children"] = [c.as_dict(levels - 1) for c in sorted(self.children, key=lambda c: -c.visits)]
        return out


@dataclass
class MCTSResult:
    image: np.ndarray
    steps: list[np.ndarray]
    actions: list[ToolCall]
    score_before: float
    score_after: float
    simulations: int
    cache_hits: int
    trees: list[dict]
    trace: Trace
    perceptions: list[Perception] = field(default_factory=list)  # what the perceiver saw at each step's root


class _Search:
    def __init__(self, tools, reward, perceiver, settings, original_preview, rng, pool=None,
                 trace: Trace | None = None, agent: str = "photoagent"):
        self.tools, self.reward, self.perceiver, self.s = tools, reward, perceiver, settings
        self.pool = pool  # a spare thread (spare_thread) for statistics and crop edits beside the others
        self.reward_pool = {"pool": pool} if pool is not None and isinstance(reward, ClassicReward) else {}
        self.original = original_preview
        self.rng = rng
        self.states: dict[tuple, State] = {}
        self.scores: dict[tuple, float] = {}
        self.perceptions: dict[tuple, Perception] = {}
        self.statistics: dict[tuple, dict] = {}  # a state's raw statistics, read by the perceiver and the reward
        self.readings: dict[tuple, dict[str, float]] = {}  # a state's BRISQUE and NIQE, where no curve made it
        self.path_tools: dict[tuple, frozenset[str]] = {}  # the tools already used on the way to a state
        self.path_calls: dict[tuple, tuple[ToolCall, ...]] = {}  # the edits on the way to a state, in this step
        self.kept: tuple[ToolCall, ...] = ()  # the edits kept in earlier steps: the root is the photo after them
        self.hits = 0
        self.simulations = 0
        self.expensive = getattr(perceiver, "expensive", False)  # a vision brain: asked within a budget
        self.perceiver_calls = 0  # this step's calls to an expensive perceiver
        self.memory: list[Memory] = []  # executed actions and their outcomes, for the perceiver
        self.lo, self.hi = math.inf, -math.inf  # the rewards seen this step, for UCT's normalisation
        self.best_rollout: tuple[float, list[ToolCall]] = (-math.inf, [])  # this step's best G(s_T) and its edits
        self.barred: frozenset[str] = frozenset()  # tools that work against an edit kept in an earlier step
        self.failures: dict[str, str] = {}  # actions whose tool raised in this search (by call key): why
        self.broken: dict[str, str] = {}  # tools that cannot run at all here (a model file missing): why
        self.trace, self.agent = trace, agent  # where a failed action is reported
        self.tool_calls = 0  # tool runs on search states (a model tool: one per search edit)
        self.root_key: tuple = ()  # the key of this step's root, set by run
        self.kernel: dict | None = None  # the photo's blur kernel this step, once estimated (photo_kernel)
        self.kernel_known = False
        self.levels: float | None = None  # the photo's own posterisation reading, from the first step's root
        self.tones: dict[str, float] | None = None  # the photo's own tones (enhance.photo_tones), from the same root

    def conflicts_of(self, used) -> frozenset[str]:
        names = set(self.tools.names())
        return frozenset(c for tool in used if tool in names for c in self.tools.get(tool).conflicts)

    def _perception(self, key: tuple, state: State) -> list[ToolCall]:
        """The perceiver's actions for a state, asked once and cached by the state's key."""
        if key not in self.perceptions:
            stats = self.statistics[key] = image_statistics(state.preview, state.crops, self.pool,
                                                            known=self.carried(key))
            if key == self.root_key and self.tones is None:  # the photo as it came (photo_levels, photo_tones)
                self.levels, self.tones = stats.get("level_step"), photo_tones(stats)
            stats = {**stats, **(self.tones or {})}
            root = self.statistics.get(self.root_key)
            if root is not None and key != self.root_key:
                # how bright the photo came: a state the search darkened itself is no under-exposed photo
                stats = {**stats, "photo_white_level": root["white_level"],
                         "photo_channel_white": root.get("channel_white", 0.0)}
            # a plan applies each tool once, at the strength it chose: repeating one on the same path
            # (sharpen after sharpen) only overshoots what one stronger proposal does
            used = self.path_tools.get(key, frozenset())
            # nor what works against an edit on the way here or kept in an earlier step (ToolSpec.conflicts)
            used = used | self.barred | self.conflicts_of(used)
            # the rules fill their proposals from the tools not used yet; a model is offered the same toolbox
            # everywhere (its schema never changes) and its repeats are dropped after it answers
            actions = [n for n in self.tools.names() if self.tools.get(n).stands_alone]  # edits on their own
            offered = actions if self.expensive else [n for n in actions if n not in used]
            # the rule perceiver reads the step's one kernel estimate instead of estimating one per state
            extra = {"kernel": lambda: self.photo_kernel(state.crops)} if isinstance(self.perceiver, RulePerceiver) else {}
            seen = self.perceiver.perceive(stats, self.s.branching, offered, image=state.preview,
                                           memory=tuple(self.memory), crops=state.crops, **extra)
            self.perceptions[key] = replace(seen, actions=tuple(a for a in seen.actions if a.tool not in used))
        return self.runnable(self.perceptions[key].actions)

    def photo_kernel(self, crops) -> dict | None:
        """The blur kernel of the photo, estimated once per step, on the first state the perceiver asks it for (the
        root, or the first state that is not noisy): a blur is the photo's, and the edits the search tries before a
        deconvolution (tone, colour, noise) leave it as it is, while the tools that change it (sharpen, deblock,
        deconvolve) bar a deconvolution after them. An estimate costs about 15 ms (12 before the Gaussian fits),
        whatever the copy's size: per state, that was more than half of a new state's fixed cost."""
        if not self.kernel_known:
            self.kernel, self.kernel_known = estimate_kernel(crops), True
        return self.kernel

    def carried(self, key: tuple) -> dict[str, float]:
        """What a state shares with this step's photo, not read again: the lens's colour fringes, which no classic
        edit moves but one that moves pixels (ToolSpec.moves_pixels: fix_fringes, a crop or a rotation; read on
        every state, they cost about 6 ms each, whatever the copy's size: a fifth of a new state at 1/4 resolution);
        and posterisation, read on the photo as it came until an edit fills its levels in (enhance.photo_levels)."""
        out = photo_levels(self.levels, self.kept + self.path_calls.get(key, ()))  # posterisation: the photo's own
        root = self.statistics.get(self.root_key)
        if root is None or key == self.root_key or "fringes" not in root:
            return out
        names = self.tools.names()
        for name in self.path_tools.get(key, ()):
            if name not in names or self.tools.get(name).category != "classic" or self.tools.get(name).moves_pixels:
                return out
        return {**out, "fringes": root["fringes"]}

    def runnable(self, calls) -> list[ToolCall]:
        """``calls`` without those that failed in this search, and without tools that cannot run at all."""
        return [c for c in calls if c.key() not in self.failures and c.tool not in self.broken]

    def perceive(self, node: TreeNode, parent: TreeNode | None) -> list[ToolCall]:
        """The proposals for a newly expanded tree state; an expensive perceiver within its per-step budget."""
        if self.expensive and node.key not in self.perceptions:
            if self.perceiver_calls >= self.s.perceiver_calls and parent is not None:
                # over budget: reuse the nearest asked ancestor's, without the tools used on the way here
                used = self.path_tools.get(node.key, frozenset())
                return self.runnable(c for c in parent.proposals or [] if c.tool not in used)
            self.perceiver_calls += 1
        return self._perception(node.key, node.state)

    def apply(self, key: tuple, state: State, call: ToolCall) -> tuple[tuple, State | None]:
        """The state ``call`` leads to (cached by the path's key), or None when its tool raised: then the action
        is a failed one for the rest of the search (its tool too, when a model file is missing), said in the trace."""
        parent, key = key, key + (call.key(),)
        if call is STOP:
            return key, state
        self.path_tools.setdefault(key, self.path_tools.get(parent, frozenset()) | {call.tool})
        self.path_calls.setdefault(key, self.path_calls.get(parent, ()) + (call,))
        if key in self.states:
            self.hits += 1
        else:
            try:
                self.tool_calls += 1
                self.states[key] = apply_call(self.tools, state, call, self.pool)
            except Exception as err:  # noqa: BLE001 (failed_call re-raises what is not one candidate's failure)
                why = self.failures[call.key()] = failed_call(err)
                if isinstance(err, MissingModelError):
                    self.broken[call.tool] = why
                if self.trace is not None:
                    self.trace.add("planner", self.agent, f"search: {call.label()} failed; a failed child, the "
                                                          "search goes on", outputs={"error": why,
                                                                                     "action": call.as_dict()})
                return key, None
        return key, self.states[key]

    def value(self, key: tuple, state: State) -> float:
        """G of a state: the reward against its one scoring text (the mood, or a fixed generic text), the same for
        every state of the search and for the full-resolution check."""
        key = tuple(k for k in key if k != STOP.key())  # stopping changes nothing
        if key not in self.scores:
            seen = model_reading(self.tools, self.kept + self.path_calls.get(key, ()), state.preview, state.scale)
            calls = self.path_calls.get(key, ())
            uncurved = without_curves(self.tools, calls)
            held = (isinstance(self.reward, ClassicReward) and len(uncurved) < len(calls)
                    and holds_curves(self.statistics.get(self.root_key, {})))
            score = self.reward.score(state.preview, self.original, crops=state.crops,
                                      known=self.statistics.get(key) or self.carried(key), **seen, **self.reward_pool,
                                      **({"held_readings": self.readings_without(uncurved)} if held else {}))
            if not held:  # its quality readings are its own: a state with curves among its edits is held to them
                self.readings[key] = {k: score.raw[k] for k in HELD_READINGS if k in score.raw}
            self.scores[key] = score.total
        return self.scores[key]

    def readings_without(self, calls: list[ToolCall]) -> dict[str, float]:
        """The no-reference quality readings of the state that ``calls`` (a path's edits without its tone and colour
        curves) lead to from this step's root: what a state with the curves is held to (Reward.score's held_readings).
        They are read on the texture crops alone, so a state the search has not made needs only its crops: the last
        edit is made to them, with what the tool measures read on the state before, as the search makes a state."""
        key, state = self.root_key, self.root_state
        for call in calls[:-1]:
            key, state = self.apply(key, state, call)
            if state is None:  # its tool failed here: nothing to hold the state to
                return {}
        if calls:
            last = key + (calls[-1].key(),)
            if last in self.readings:
                return self.readings[last]
            if last in self.states:
                key, state = last, self.states[last]
            elif calls[-1].key() in self.failures:
                return {}
            elif not crops_alone(self.tools, calls[-1]):
                key, state = self.apply(key, state, calls[-1])
                if state is None:
                    return {}
            else:
                try:
                    crops = crops_edited(self.tools, state, calls[-1])
                except Exception:  # noqa: BLE001 (it fails where the search makes the state too, and is said there)
                    return {}
                key, state = last, State(state.preview, crops, state.scale, state.size)
        if key not in self.readings:
            self.readings[key] = quality_readings(state.preview, state.crops, self.pool)
        return self.readings[key]

    def uct(self, parent: TreeNode, child: TreeNode) -> float:
        if child.visits == 0:
            return math.inf
        spread = self.hi - self.lo
        q = (child.mean - self.lo) / spread if spread > 1e-12 else 0.5
        return q + self.s.exploration * math.sqrt(math.log(parent.visits) / child.visits)

    def expand(self, node: TreeNode, parent: TreeNode | None) -> None:
        node.proposals = [] if node.terminal or node.failed else self.perceive(node, parent)
        node.untried = list(node.proposals) + ([STOP] if node.proposals else [])

    def run(self, root_state: State, should_stop) -> TreeNode:
        # cache keys start from the root state itself, so a later step (a new root) never reuses
        # results computed from an earlier one, while identical states share them
        # ... and the reward's scoring text is part of every key: a state is scored against that one text
        root = TreeNode(root_state, 0, (hashlib.sha1(np.ascontiguousarray(root_state.preview).tobytes()).hexdigest()[:20],
                                        getattr(self.reward, "scoring_text", "")))
        self.root_key = root.key  # the photo as it came to this step (its statistics: the perceiver's reference)
        self.root_state = root_state
        self.kernel, self.kernel_known = None, False  # a kept edit (a deconvolution) may have changed it
        self.lo, self.hi, self.perceiver_calls = math.inf, -math.inf, 0
        self.best_rollout = (-math.inf, [])
        self.expand(root, None)
        deadline = time.perf_counter() + self.s.time_budget_s
        if not root.proposals:  # nothing worth trying: no search needed
            return root
        for _ in range(self.s.simulations):
            if time.perf_counter() > deadline:
                break
            if should_stop:
                should_stop()
            self.simulations += 1
            node, path = root, [root]
            # 1. selection: descend while the node is fully expanded (a failed child is never selected)
            while not node.untried and not node.terminal and node.depth < self.s.depth:
                live = [c for c in node.children if not c.failed]
                if not live:
                    break
                parent = node
                node = max(live, key=lambda c: self.uct(parent, c))
                path.append(node)
            # 2. expansion: one untried action of the leaf becomes a child (a failed one when its tool raises:
            # kept for the tree view with its error; the simulation goes on from the leaf)
            if node.untried and not node.terminal and node.depth < self.s.depth:
                call = node.untried.pop(self.rng.randrange(len(node.untried)))  # untried actions in random order
                key, state = self.apply(node.key, node.state, call)
                if state is None:
                    node.children.append(TreeNode(node.state, node.depth + 1, key, call,
                                                  failed=self.failures[call.key()]))
                    node.untried = self.runnable(node.untried)
                else:
                    child = TreeNode(state, node.depth + 1, key, call)
                    self.expand(child, node)
                    node.children.append(child)
                    node, path = child, path + [child]
            # 3. simulation: random actions (or stop) down to depth d, from the states' own proposals
            key, state, options = node.key, node.state, node.proposals or []
            edits = [n.action for n in path[1:] if n.action is not STOP]
            for level in range(node.depth, self.s.depth):
                if level > node.depth:  # the proposals of the state reached (not of the rollout's last state)
                    options = self._rollout_options(key, state, options)
                options = self.runnable(options)
                if not options:
                    break
                call = self.rng.choice(options + [STOP])
                if call is STOP:
                    break
                reached, after = self.apply(key, state, call)
                if after is None:  # the rollout ends where it stood
                    break
                key, state = reached, after
                edits.append(call)
            g = self.value(key, state)  # G(s_T), backed up as it is (a "max" backup measured no better)
            self.lo, self.hi = min(self.lo, g), max(self.hi, g)
            if g > self.best_rollout[0]:
                self.best_rollout = (g, edits)
            # 4. backpropagation
            for n in path:
                n.visits += 1
                n.total += g
        return root

    def _rollout_options(self, key: tuple, state: State, inherited: list[ToolCall]) -> list[ToolCall]:
        if self.expensive:
            return inherited  # a vision brain is asked for tree states only (its budget), not for rollouts
        return self._perception(key, state)


def _reward_tokens(reward: ClassicReward) -> int:
    """The tokens the reward's VLM rating has used so far (0 for a reward without one)."""
    return getattr(reward, "usage", dict)().get("vlm_tokens", 0)


def rescore_sequence(tools: ToolRegistry, reward: ClassicReward, calls: list[ToolCall], current: np.ndarray,
                     original: np.ndarray, trace: Trace, agent: str, step: int,
                     should_stop: Callable[[], None] | None = None, kept: tuple[ToolCall, ...] = (),
                     levels: float | None = None, readings: Mapping[str, float] | None = None) -> tuple:
    """The search's best rollout re-run at full resolution as one candidate: (score, [(call, image after it)]), or
    None when a tool of it fails there (said in the trace). ``kept``: the edits that made ``current`` from
    ``original``; ``levels``: the photo's own posterisation reading (enhance.photo_levels); ``readings``: ``current``'s
    raw statistics (where they say it is dark, its tone and colour curves are not held to the quality readings
    without them: reward.holds_curves)."""
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
    uncurved = without_curves(tools, calls)
    held = isinstance(reward, ClassicReward) and len(uncurved) < len(calls) and holds_curves(readings or {})
    s = reward.score(out, original, known=photo_levels(levels, (*kept, *calls)) or None,
                     **model_reading(tools, (*kept, *calls), out),
                     **({"held_readings": readings_after(tools, current, uncurved)} if held else {}))
    trace.add("reward", agent, f"full-resolution sequence {' -> '.join(c.label() for c in calls)} (the search's best "
                               "rollout)", started=t, round=step, inputs={"sequence": [c.as_dict() for c in calls]},
              scores=s.as_dict(), preview=out)
    return s, done


def readings_after(tools: ToolRegistry, image: np.ndarray, calls: list[ToolCall]) -> dict[str, float]:
    """BRISQUE and NIQE of ``image`` after ``calls``, read as the search reads a state's: on the texture crops, edited
    as parts of the photo (what a sequence with tone and colour curves among its edits is held to)."""
    state = root_state(image, STATISTICS_SIDE)
    for call in calls:
        state = apply_call(tools, state, call)
    return quality_readings(state.preview, state.crops)


def root_state(image: np.ndarray, side: int) -> State:
    """The search's view of a photo: a copy at most ``side`` long plus its native-resolution texture crops."""
    preview = resize_longest(image, side)
    return State(preview, texture_crops(image), max(preview.shape[:2]) / max(image.shape[:2]), image.shape[:2])


def crops_alone(tools: ToolRegistry, call: ToolCall) -> bool:
    """Whether ``apply_call`` edits a state's crops with ``call`` by themselves: a classic edit that keeps the
    geometry (a model's edit is made to the copy and followed by the crops; a crop or a rotation leaves them)."""
    spec = tools.get(call.tool)
    return not spec.needs_model and (spec.placed or not spec.moves_pixels)


def crops_edited(tools: ToolRegistry, state: State, call: ToolCall, native: dict | None = None) -> list[np.ndarray]:
    """A classic edit made to a search state's native-resolution crops as parts of the whole photo: with what the tool
    measures on the whole (``native``: its pins at the photo's scale; by default read on the state's copy)."""
    spec = tools.get(call.tool)
    if native is None:
        native = spec.pins_at_scale(spec.pinned(state.preview, spec.validate(call.params)[0]), 1.0 / state.scale)
    if spec.placed:  # a place in the photo (a lens's centre) is another place in each crop
        return [tools.call(call.tool, c, call.params, pins=spec.pins_in_crop(native, x0, y0))[0]
                for c, (x0, y0, _) in zip(state.crops, texture_boxes(*state.size))]
    return [tools.call(call.tool, c, call.params, pins=native)[0] for c in state.crops]


def apply_call(tools: ToolRegistry, state: State, call: ToolCall, pool: Executor | None = None) -> State:
    """One edit on a search state: the copy with pixel lengths scaled to it, and the native-resolution crops
    edited as parts of the whole photo (with what the tool measures on the whole, read from the copy).
    ``pool``: a spare thread that edits the crops while this one edits the copy (not for model tools).
    A model tool runs once, on the copy (PhotoAgent's search runs it on the reduced image): each crop takes the
    change it made to the crop's region of the copy (``crops_following``)."""
    spec = tools.get(call.tool)
    if spec.needs_model:
        preview = tools.call(call.tool, state.preview, call.params, scale=state.scale)[0]
        same = preview.shape[:2] == state.preview.shape[:2]
        return State(preview, crops_following(state, preview) if same else state.crops, state.scale, state.size)
    pins = spec.pinned(state.preview, spec.validate(call.params)[0])
    native = spec.pins_at_scale(pins, 1.0 / state.scale)

    def edit_crops() -> list[np.ndarray]:
        return crops_edited(tools, state, call, native)

    crops = pool.submit(edit_crops) if pool is not None and not spec.needs_runtime else None
    preview = tools.call(call.tool, state.preview, call.params, scale=state.scale, pins=pins)[0]
    # a tool that changes the geometry (crop, rotate, resize) leaves the texture crops as they were
    if preview.shape[:2] != state.preview.shape[:2]:
        if crops is not None:
            crops.exception()  # edited for nothing; waited for, so the thread is free again, and not raised
        return State(preview, state.crops, state.scale, state.size)
    return State(preview, crops.result() if crops is not None else edit_crops(), state.scale, state.size)


def crops_following(state: State, preview: np.ndarray) -> list[np.ndarray]:
    """The native-resolution crops of a state whose copy alone was edited: each crop plus the change the edit made
    to the crop's region of the copy, brought to the crop's size. The copy has no finer detail than that, so the
    crop keeps its own (a diffusion edit run on every crop would paint a new subject in each, at 5x the cost)."""
    h, w = state.size
    ph, pw = state.preview.shape[:2]
    change = preview.astype(np.float32) - state.preview.astype(np.float32)
    out = []
    for crop, (x0, y0, side) in zip(state.crops, texture_boxes(h, w)):
        top, left = min(ph - 1, int(y0 * ph / h)), min(pw - 1, int(x0 * pw / w))
        bottom = max(top + 1, min(ph, math.ceil((y0 + side) * ph / h)))
        right = max(left + 1, min(pw, math.ceil((x0 + side) * pw / w)))
        region = change[top:bottom, left:right]
        if region.shape[2] != crop.shape[2]:  # the tool changed the channels: the crop is cut from the copy instead
            out.append(np.clip(resize(preview[top:bottom, left:right], (crop.shape[1], crop.shape[0]), "cubic"), 0, 1)
                       .astype(np.float32))
            continue
        grown = resize(region, (crop.shape[1], crop.shape[0]), "cubic").reshape(crop.shape)
        out.append(np.clip(crop + grown, 0.0, 1.0).astype(np.float32))
    return out


def mcts_enhance(image: np.ndarray, tools: ToolRegistry, reward: ClassicReward | None = None,
                 settings: MCTSSettings | None = None, perceiver: RulePerceiver | BrainPerceiver | None = None,
                 should_stop: Callable[[], None] | None = None,
                 on_step: Callable[[int, int, str], None] | None = None, agent: str = "photoagent",
                 listener: Callable | None = None) -> MCTSResult:
    """Search and apply edits step by step; ``listener`` gets each trace step as it is made."""
    if len(tools) == 0:
        raise ValueError("the toolbox has no tools: connect a Toolbox that allows at least one tool")
    whole, image, frame = photo_in_frame(image)  # the photo inside a frame of one flat colour, which stays as it came
    with spare_thread() as pool:
        result = _mcts_enhance(image, tools, reward, settings, perceiver, should_stop, on_step, agent, listener, pool,
                               frame)
    return put_back(result, whole, frame)


def _mcts_enhance(image, tools, reward, settings, perceiver, should_stop, on_step, agent, listener, pool, frame=None):
    s = settings or MCTSSettings()
    reward, perceiver = reward or ClassicReward(), perceiver or RulePerceiver()
    trace = Trace(title=f"PhotoAgent MCTS ({s.simulations} simulations x depth {s.depth} per step)", listener=listener)
    if isinstance(perceiver, BrainPerceiver):  # its calls go in this trace
        perceiver.trace, perceiver.agent = trace, agent
    t0 = time.perf_counter()
    search = _Search(tools, reward, perceiver, s, resize_longest(image, s.preview_side), random.Random(s.seed), pool,
                     trace, agent)
    current, current_score = image, reward.score(image, image)
    start_score = current_score.total
    trace.add("reward", agent, "score the input", started=t0, scores=current_score.as_dict(), preview=image,
              outputs={"reward": current_score.report()},
              inputs={"ensemble": reward.describe() if hasattr(reward, "describe") else type(reward).__name__,
                      "scoring_text": getattr(reward, "scoring_text", "")})
    note_frame(trace, agent, frame, image)
    states, actions, trees, perceptions, stale = [image], [], [], [], 0
    why_not = not_judged(image, perceiver, reward)
    if why_not:
        trace.add("loop", agent, f"stop: {why_not}: left as it is", round=0)
    for step in range(0 if why_not else s.max_steps):
        if on_step:
            on_step(step, s.max_steps, f"step {step + 1}/{s.max_steps}: searching")
        t = time.perf_counter()
        sims_before, hits_before, tokens_before = search.simulations, search.hits, _reward_tokens(reward)
        with torch_threads(1 if pool is not None else None):  # the spare thread has the other core
            root = search.run(root_state(current, s.preview_side), should_stop)
        searched = time.perf_counter() - t  # the search alone: the tree view's thumbnails below are no simulations
        seen = search.perceptions.get(root.key)
        if seen is not None:
            perceptions.append(seen)
        tree = root.as_dict()
        trees.append(tree)
        trace.add("perceiver", agent, f"scene: {seen.scene if seen else 'unknown'}; {len(root.proposals)} action(s) "
                                      "proposed" + ("" if root.proposals else ": no clear defect"), started=t, round=step,
                  outputs=seen.as_dict() if seen else {"actions": []})
        trace.add("planner", agent, f"MCTS: {search.simulations - sims_before} simulations, "
                                    f"{search.hits - hits_before} cache hits", started=t, round=step,
                  outputs={"tree": tree, "proposals": [c.as_dict() for c in root.proposals or []],
                           "memory": [m.line() for m in search.memory],
                           "perceiver_calls": search.perceiver_calls, "search_s": round(searched, 4)})
        if not root.children:
            trace.add("loop", agent, "stop: nothing to try (the perceiver found no clear defect)", round=step)
            break
        ranked = sorted((c for c in root.children if not c.failed), key=lambda c: (-c.visits, -c.mean))
        if not ranked or (ranked[0].terminal and len(ranked) == 1 and all(c.failed for c in root.children
                                                                         if not c.terminal)):
            trace.add("loop", agent, "stop: every action proposed failed (see the search's errors)", round=step,
                      outputs={"errors": {c.action.label(): c.failed for c in root.children if c.failed}})
            break
        if ranked[0].terminal:
            stale += 1
            trace.add("loop", agent, f"keep: the search prefers no edit ({ranked[0].visits} of {root.visits} "
                                     "visits on 'stop')", round=step)
            if stale >= s.patience:
                trace.add("loop", agent, f"stop: no improvement for {stale} step(s)", round=step)
                break
            if len(ranked) > 1:  # the runner-up is set aside, so the next step looks at something else
                search.memory.append(Memory(ranked[1].action, 0.0, False))
            continue
        edits = [c for c in ranked if not c.terminal][:s.top_k]
        # re-run the most visited first actions at full resolution
        best = rescore_best(tools, reward, [(c.action, f" (visits {c.visits})") for c in edits], current, image,
                            trace, agent, step, should_stop, kept=tuple(actions), levels=search.levels,
                            readings=current_score.raw)
        if best is None:  # every winner failed at full resolution: nothing to keep from this step
            stale, out = kept_nothing(trace, agent, step, stale, s.patience,
                                      "revert: the search's winners failed at full resolution")
            if out:
                break
            continue
        score, chosen = best[0], [(best[1], best[2])]
        # the search's best rollout, when it is a sequence, is re-run too: a first edit that pays off only after
        # a second (gamma, then exposure) loses the one-action check above, though the search found where it leads
        plan = search.best_rollout[1]
        if len(plan) >= 2:
            sequence = rescore_sequence(tools, reward, plan, current, image, trace, agent, step, should_stop,
                                        kept=tuple(actions), levels=search.levels, readings=current_score.raw)
            if sequence is not None and sequence[0].total > score.total:
                score, chosen = sequence
        gain = score.total - current_score.total
        label = " -> ".join(call.label() for call, _ in chosen)
        search.memory.extend(Memory(call, gain, gain > s.min_gain) for call, _ in chosen)
        for child in tree.get("children", []):  # the chosen path, for the tree view
            if child["action"] == chosen[0][0].label():
                child["chosen"] = "kept" if gain > s.min_gain else "reverted"
        if gain > s.min_gain:
            for call, img in chosen:
                states.append(img)
                actions.append(call)
            search.barred |= search.conflicts_of({call.tool for call, _ in chosen})
            search.kept = tuple(actions)
            current = chosen[-1][1]
            current_score = as_it_is(reward, score, current) \
                if isinstance(reward, ClassicReward) and any(tools.get(c.tool).pointwise for c, _ in chosen) else score
            stale = 0
            trace.add("loop", agent, f"accept {label}", round=step,
                      outputs={"action": chosen[0][0].as_dict(), "chosen": chosen[0][0].label(),  # the tree's child
                               "reward": current_score.report()}
                      | ({"sequence": [call.as_dict() for call, _ in chosen]} if len(chosen) > 1 else {}),
                      scores={"total": round(current_score.total, 5), "gain": round(gain, 5)}, image=len(states) - 1,
                      preview=current, tokens=_reward_tokens(reward) - tokens_before)
        else:
            stale += 1
            trace.add("loop", agent, f"revert: best {label} gains {gain:+.4f}", round=step,
                      scores={"gain": round(gain, 5)}, tokens=_reward_tokens(reward) - tokens_before,
                      outputs={"chosen": chosen[0][0].label()}
                      | ({"sequence": [call.as_dict() for call, _ in chosen]} if len(chosen) > 1 else {}))
            if stale >= s.patience:
                trace.add("loop", agent, f"stop: no improvement for {stale} step(s)", round=step)
                break
    trace.summary = {"steps": len(actions), "actions": [a.as_dict() for a in actions],
                     "score_before": round(start_score, 5), "score_after": round(current_score.total, 5),
                     "simulations": search.simulations, "cache_hits": search.hits, "tool_calls": search.tool_calls,
                     "failed_actions": dict(search.failures),
                     "scene": perceptions[0].scene if perceptions else "unknown",
                     "wall_s": round(time.perf_counter() - t0, 3)} | getattr(reward, "usage", dict)()
    return MCTSResult(current, states, actions, start_score, current_score.total, search.simulations, search.hits,
                      trees, trace, perceptions)
