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

The pieces: the search state and how an edit is made to it (``state``), the tree with UCT, selection and backup
(``tree``), the states made and what was read on them (``cache``), the perceiver's proposals per state
(``proposals``), a step's time and perceiver budget (``budget``), the reward with its held readings (``scorer``),
and the improve loop's full-resolution check and patience (``improve``), which the greedy ``enhance`` shares.
"""
from __future__ import annotations

import hashlib
import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...tools.imageops import resize_longest
from ...tools.spec import ToolRegistry
from .budget import Budget
from .cache import StateCache
from .frame import not_judged, note_frame, photo_in_frame, put_back
from .improve import Progress, rescore_best, rescore_sequence, run_steps
from ..quality.kernel import estimate_kernel
from ..quality.perception import Memory, Perception, RulePerceiver
from .perceiver import BrainPerceiver
from .proposals import Proposals
from .scorer import Scorer, model_reading, without_curves
from .state import State, apply_call, crops_alone, crops_edited, crops_following, root_state  # noqa: F401 (public)
from .tree import STOP, Spread, TreeNode, backup, open_leaf, select
from ..records import ToolCall
from ..quality.reward import ClassicReward, spare_thread, torch_threads
from ..quality.metrics import HELD_READINGS, quality_readings
from ..trace import Trace


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
    """One photo's tree search, step after step: its simulations, the rewards of their states, the best rollout."""

    def __init__(self, tools, scorer: Scorer, perceiver, settings, original_preview, rng, pool=None,
                 trace: Trace | None = None, agent: str = "photoagent"):
        self.tools, self.scorer, self.s = tools, scorer, settings
        self.pool = pool  # a spare thread (spare_thread) for statistics and crop edits beside the others
        self.original = original_preview
        self.rng = rng
        self.cache = StateCache(tools, pool, trace, agent)
        self.budget = Budget(settings.time_budget_s, settings.perceiver_calls)
        self.proposals = Proposals(perceiver, tools, self.cache, self.budget, settings.branching, self.photo_kernel)
        self.simulations = 0
        self.spread = Spread()  # the rewards seen this step, for UCT's normalisation
        self.best_rollout: tuple[float, list[ToolCall]] = (-math.inf, [])  # this step's best G(s_T) and its edits
        self.root_state: State | None = None
        self.kernel: dict | None = None  # the photo's blur kernel this step, once estimated (photo_kernel)
        self.kernel_known = False

    def photo_kernel(self, crops) -> dict | None:
        """The blur kernel of the photo, estimated once per step, on the first state the perceiver asks it for (the
        root, or the first state that is not noisy): a blur is the photo's, and the edits the search tries before a
        deconvolution (tone, colour, noise) leave it as it is, while the tools that change it (sharpen, deblock,
        deconvolve) bar a deconvolution after them. An estimate costs about 15 ms (12 before the Gaussian fits),
        whatever the copy's size: per state, that was more than half of a new state's fixed cost."""
        if not self.kernel_known:
            self.kernel, self.kernel_known = estimate_kernel(crops), True
        return self.kernel

    def value(self, key: tuple, state: State) -> float:
        """G of a state: the reward against its one scoring text (the mood, or a fixed generic text), the same for
        every state of the search and for the full-resolution check."""
        key = tuple(k for k in key if k != STOP.key())  # stopping changes nothing
        if key not in self.cache.scores:
            calls = self.cache.path_calls.get(key, ())
            seen = model_reading(self.tools, self.proposals.kept + calls, state.preview, state.scale)
            held = self.scorer.holds(self.tools, calls, self.cache.statistics.get(self.proposals.root_key, {}))
            # what was read on the state already is not read again: its statistics (the perceiver's) and, where
            # readings_without read it for a state with curves, its quality readings
            known = {**(self.cache.statistics.get(key) or self.proposals.carried(key)), **self.cache.readings.get(key, {})}
            held_readings = {"held_readings": self.readings_without(without_curves(self.tools, calls))} if held else {}
            score = self.scorer.reward.score(state.preview, self.original, crops=state.crops, known=known, **seen,
                                             **self.scorer.pool(self.pool), **held_readings)
            if not held:  # its quality readings are its own: a state with curves among its edits is held to them
                self.cache.readings[key] = {k: score.raw[k] for k in HELD_READINGS if k in score.raw}
            self.cache.scores[key] = score.total
        return self.cache.scores[key]

    def readings_without(self, calls: list[ToolCall]) -> dict[str, float]:
        """The no-reference quality readings of the state that ``calls`` (a path's edits without its tone and colour
        curves) lead to from this step's root: what a state with the curves is held to (Reward.score's held_readings).
        They are read on the texture crops alone, so a state the search has not made needs only its crops: the last
        edit is made to them, with what the tool measures read on the state before, as the search makes a state."""
        key, state = self.proposals.root_key, self.root_state
        for call in calls[:-1]:
            key, state = self.cache.apply(key, state, call)
            if state is None:  # its tool failed here: nothing to hold the state to
                return {}
        if calls:
            last = key + (calls[-1].key(),)
            if last in self.cache.readings:
                return self.cache.readings[last]
            if last in self.cache.states:
                key, state = last, self.cache.states[last]
            elif calls[-1].key() in self.cache.failures:
                return {}
            elif not crops_alone(self.tools, calls[-1]):
                key, state = self.cache.apply(key, state, calls[-1])
                if state is None:
                    return {}
            else:
                try:
                    crops = crops_edited(self.tools, state, calls[-1])
                except Exception:  # noqa: BLE001 (it fails where the search makes the state too, and is said there)
                    return {}
                key, state = last, State(state.preview, crops, state.scale, state.size)
        if key not in self.cache.readings:
            self.cache.readings[key] = quality_readings(state.preview, state.crops, self.pool)
        return self.cache.readings[key]

    def expand(self, node: TreeNode, parent: TreeNode | None) -> None:
        """Ask for a new tree state's proposals (none for a terminal or failed one); they and "stop" are untried."""
        node.proposals = [] if node.terminal or node.failed else self.proposals.for_node(node, parent)
        node.untried = list(node.proposals) + ([STOP] if node.proposals else [])

    def run(self, root_state: State, should_stop) -> TreeNode:
        """One step's search from ``root_state``: up to ``simulations`` simulations within the step's time; its tree."""
        # cache keys start from the root state itself, so a later step (a new root) never reuses
        # results computed from an earlier one, while identical states share them
        # ... and the reward's scoring text is part of every key: a state is scored against that one text
        photo = hashlib.sha1(np.ascontiguousarray(root_state.preview).tobytes()).hexdigest()[:20]
        root = TreeNode(root_state, 0, (photo, getattr(self.scorer.reward, "scoring_text", "")))
        self.proposals.root_key = root.key  # the photo as it came to this step (its statistics: the perceiver's)
        self.root_state = root_state
        self.kernel, self.kernel_known = None, False  # a kept edit (a deconvolution) may have changed it
        self.spread, self.best_rollout = Spread(), (-math.inf, [])
        self.budget.new_step()
        self.expand(root, None)
        self.budget.start_clock()
        if not root.proposals:  # nothing worth trying: no search needed
            return root
        for _ in range(self.s.simulations):
            if self.budget.out_of_time():
                break
            if should_stop:
                should_stop()
            self.simulate(root)
        return root

    def simulate(self, root: TreeNode) -> None:
        """One simulation: selection, expansion of one untried action, a random rollout, its reward backed up."""
        self.simulations += 1
        path = select(root, self.s.depth, self.spread, self.s.exploration)
        node = path[-1]
        if open_leaf(node, self.s.depth):
            node, path = self.grow(node, path)
        key, state, edits = self.rollout(node, path)
        g = self.value(key, state)  # G(s_T)
        self.spread.see(g)
        if g > self.best_rollout[0]:
            self.best_rollout = (g, edits)
        backup(path, g)

    def grow(self, node: TreeNode, path: list[TreeNode]) -> tuple[TreeNode, list[TreeNode]]:
        """Expansion: one untried action of the leaf becomes a child (a failed one when its tool raises: kept for the
        tree view with its error; the simulation goes on from the leaf). The node and path the rollout starts from."""
        call = node.untried.pop(self.rng.randrange(len(node.untried)))  # untried actions in random order
        key, state = self.cache.apply(node.key, node.state, call)
        if state is None:
            failed = self.cache.failures[call.key()]
            node.children.append(TreeNode(node.state, node.depth + 1, key, call, failed=failed))
            node.untried = self.cache.runnable(node.untried)
            return node, path
        child = TreeNode(state, node.depth + 1, key, call)
        self.expand(child, node)
        node.children.append(child)
        return child, path + [child]

    def rollout(self, node: TreeNode, path: list[TreeNode]) -> tuple[tuple, State, list[ToolCall]]:
        """Random actions (or stop) down to depth d from ``node``, from the states' own proposals: the final state's
        key, the state, and the edits from the root to it."""
        key, state, options = node.key, node.state, node.proposals or []
        edits = [n.action for n in path[1:] if n.action is not STOP]
        for level in range(node.depth, self.s.depth):
            if level > node.depth:  # the proposals of the state reached (not of the rollout's last state)
                options = self.proposals.for_rollout(key, state, options)
            options = self.cache.runnable(options)
            if not options:
                break
            call = self.rng.choice(options + [STOP])
            if call is STOP:
                break
            reached, after = self.cache.apply(key, state, call)
            if after is None:  # the rollout ends where it stood
                break
            key, state = reached, after
            edits.append(call)
        return key, state, edits


def _reward_tokens(reward: ClassicReward) -> int:
    """The tokens the reward's VLM rating has used so far (0 for a reward without one)."""
    return getattr(reward, "usage", dict)().get("vlm_tokens", 0)


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
        planner = _Planner(image, tools, reward, settings, perceiver, should_stop, agent, listener, pool)
        result = planner.run(frame, on_step)
    return put_back(result, whole, frame)


class _Planner:
    """One MCTS run on a photo: the improve loop (improve.Progress) with a tree search choosing each step's edits."""

    def __init__(self, image, tools, reward, settings, perceiver, should_stop, agent, listener, pool):
        s = self.s = settings or MCTSSettings()
        self.scorer, self.perceiver = Scorer(reward or ClassicReward()), perceiver or RulePerceiver()
        self.image, self.tools, self.should_stop, self.agent, self.pool = image, tools, should_stop, agent, pool
        self.trace = Trace(title=f"PhotoAgent MCTS ({s.simulations} simulations x depth {s.depth} per step)",
                           listener=listener)
        if isinstance(self.perceiver, BrainPerceiver):  # its calls go in this trace
            self.perceiver.trace, self.perceiver.agent = self.trace, agent
        self.t0 = time.perf_counter()
        self.search = _Search(tools, self.scorer, self.perceiver, s, resize_longest(image, s.preview_side),
                              random.Random(s.seed), pool, self.trace, agent)
        self.trees: list[dict] = []
        self.perceptions: list[Perception] = []

    def run(self, frame, on_step) -> MCTSResult:
        """Score the photo, then search and keep or revert step by step; the result with its trace."""
        image, reward, trace, agent = self.image, self.scorer.reward, self.trace, self.agent
        score = reward.score(image, image)
        self.progress = Progress(image, score, [image])
        trace.add("reward", agent, "score the input", started=self.t0, scores=score.as_dict(), preview=image,
                  outputs={"reward": score.report()},
                  inputs={"ensemble": reward.describe() if hasattr(reward, "describe") else type(reward).__name__,
                          "scoring_text": getattr(reward, "scoring_text", "")})
        note_frame(trace, agent, frame, image)
        # should_stop is asked within the search, between its simulations
        run_steps(trace, agent, not_judged(image, self.perceiver, self.scorer), self.s.max_steps, self.step, on_step,
                  "searching")
        return self.result(score.total)

    def step(self, step: int) -> bool:
        """One step: search from the current photo, re-check its winners, keep or revert; whether the loop ends."""
        search, trace, agent = self.search, self.trace, self.agent
        t = time.perf_counter()
        sims_before, hits_before = search.simulations, search.cache.hits
        tokens_before = _reward_tokens(self.scorer.reward)
        with torch_threads(1 if self.pool is not None else None):  # the spare thread has the other core
            root = search.run(root_state(self.progress.current, self.s.preview_side), self.should_stop)
        searched = time.perf_counter() - t  # the search alone: the tree view's thumbnails below are no simulations
        tree = self.report(root, step, t, searched, sims_before, hits_before)
        if not root.children:
            trace.add("loop", agent, "stop: nothing to try (the perceiver found no clear defect)", round=step)
            return True
        ranked = sorted((c for c in root.children if not c.failed), key=lambda c: (-c.visits, -c.mean))
        if not ranked or (ranked[0].terminal and len(ranked) == 1 and all(c.failed for c in root.children
                                                                         if not c.terminal)):
            trace.add("loop", agent, "stop: every action proposed failed (see the search's errors)", round=step,
                      outputs={"errors": {c.action.label(): c.failed for c in root.children if c.failed}})
            return True
        if ranked[0].terminal:
            if self.progress.no_gain(trace, agent, step, self.s.patience, f"keep: the search prefers no edit ("
                                     f"{ranked[0].visits} of {root.visits} visits on 'stop')"):
                return True
            if len(ranked) > 1:  # the runner-up is set aside, so the next step looks at something else
                search.proposals.memory.append(Memory(ranked[1].action, 0.0, False))
            return False
        best = self.choose([c for c in ranked if not c.terminal][:self.s.top_k], step)
        if best is None:  # every winner failed at full resolution: nothing to keep from this step
            return self.progress.no_gain(trace, agent, step, self.s.patience,
                                         "revert: the search's winners failed at full resolution")
        return self.settle(step, tree, *best, tokens_before)

    def report(self, root: TreeNode, step: int, t: float, searched: float, sims_before: int, hits_before: int) -> dict:
        """The step's perception and tree, said in the trace; the tree (as_dict) for the tree view."""
        search, trace, agent = self.search, self.trace, self.agent
        seen = search.proposals.perceptions.get(root.key)
        if seen is not None:
            self.perceptions.append(seen)
        tree = root.as_dict()
        self.trees.append(tree)
        trace.add("perceiver", agent, f"scene: {seen.scene if seen else 'unknown'}; {len(root.proposals)} action(s) "
                                      "proposed" + ("" if root.proposals else ": no clear defect"), started=t,
                  round=step, outputs=seen.as_dict() if seen else {"actions": []})
        trace.add("planner", agent, f"MCTS: {search.simulations - sims_before} simulations, "
                                    f"{search.cache.hits - hits_before} cache hits", started=t, round=step,
                  outputs={"tree": tree, "proposals": [c.as_dict() for c in root.proposals or []],
                           "memory": [m.line() for m in search.proposals.memory],
                           "perceiver_calls": search.budget.calls, "search_s": round(searched, 4)})
        return tree

    def choose(self, edits: list[TreeNode], step: int) -> tuple | None:
        """The most visited first actions re-run at full resolution, and the search's best rollout when it is a
        sequence: the best as (score, [(call, image after it)]), or None when every one failed there."""
        progress, kept = self.progress, tuple(self.progress.actions)
        where = (self.trace, self.agent, step, self.should_stop)
        best = rescore_best(self.tools, self.scorer, [(c.action, f" (visits {c.visits})") for c in edits],
                            progress.current, self.image, *where, kept=kept, levels=self.search.proposals.levels,
                            readings=progress.score.raw)
        if best is None:
            return None
        score, chosen = best[0], [(best[1], best[2])]
        # the search's best rollout, when it is a sequence, is re-run too: a first edit that pays off only after
        # a second (gamma, then exposure) loses the one-action check above, though the search found where it leads
        plan = self.search.best_rollout[1]
        if len(plan) >= 2:
            sequence = rescore_sequence(self.tools, self.scorer, plan, progress.current, self.image, *where, kept=kept,
                                        levels=self.search.proposals.levels, readings=progress.score.raw)
            if sequence is not None and sequence[0].total > score.total:
                score, chosen = sequence
        return score, chosen

    def settle(self, step: int, tree: dict, score, chosen: list, tokens_before: int) -> bool:
        """Keep ``chosen`` if it gains more than min_gain, else revert; whether the loop ends."""
        search, trace, agent, progress = self.search, self.trace, self.agent, self.progress
        gain = score.total - progress.score.total
        label = " -> ".join(call.label() for call, _ in chosen)
        kept = gain > self.s.min_gain
        search.proposals.memory.extend(Memory(call, gain, kept) for call, _ in chosen)
        for child in tree.get("children", []):  # the chosen path, for the tree view
            if child["action"] == chosen[0][0].label():
                child["chosen"] = "kept" if kept else "reverted"
        sequence = {"sequence": [call.as_dict() for call, _ in chosen]} if len(chosen) > 1 else {}
        if not kept:
            trace.add("loop", agent, f"revert: best {label} gains {gain:+.4f}", round=step,
                      scores={"gain": round(gain, 5)}, tokens=_reward_tokens(self.scorer.reward) - tokens_before,
                      outputs={"chosen": chosen[0][0].label()} | sequence)
            return progress.no_gain(trace, agent, step, self.s.patience)
        progress.keep(self.scorer, self.tools, score, chosen)
        proposals = search.proposals
        proposals.barred |= proposals.conflicts_of({call.tool for call, _ in chosen})
        proposals.kept = tuple(progress.actions)
        trace.add("loop", agent, f"accept {label}", round=step,
                  outputs={"action": chosen[0][0].as_dict(), "chosen": chosen[0][0].label(),  # the tree's child
                           "reward": progress.score.report()} | sequence,
                  scores={"total": round(progress.score.total, 5), "gain": round(gain, 5)},
                  image=len(progress.states) - 1, preview=progress.current,
                  tokens=_reward_tokens(self.scorer.reward) - tokens_before)
        return False

    def result(self, start_score: float) -> MCTSResult:
        """The run's result, its summary in the trace."""
        search, progress = self.search, self.progress
        self.trace.summary = {
            "steps": len(progress.actions), "actions": [a.as_dict() for a in progress.actions],
            "score_before": round(start_score, 5), "score_after": round(progress.score.total, 5),
            "simulations": search.simulations, "cache_hits": search.cache.hits, "tool_calls": search.cache.tool_calls,
            "failed_actions": dict(search.cache.failures),
            "scene": self.perceptions[0].scene if self.perceptions else "unknown",
            "wall_s": round(time.perf_counter() - self.t0, 3)} | getattr(self.scorer.reward, "usage", dict)()
        return MCTSResult(progress.current, progress.states, progress.actions, start_score, progress.score.total,
                          search.simulations, search.cache.hits, self.trees, self.trace, self.perceptions)
