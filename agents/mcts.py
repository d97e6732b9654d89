"""PhotoAgent's exploratory planner: Monte-Carlo tree search over editing actions.

Each step: UCT selection, expansion with the perceiver's proposals, random rollouts to depth d on
a reduced-resolution copy, backpropagation of the reward. The most visited first actions are then
run at full resolution and re-scored; the best becomes the new state only if it beats the current
one (else revert). Stops at max_steps or after ``patience`` steps without improvement. Bounded by
simulations per step and by wall time; identical action sequences from a state are computed once.
"""
from __future__ import annotations

import hashlib
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..tools.imageops import resize_longest, thumbnail_data_url
from ..tools.spec import ToolRegistry
from .enhance import rescore_best
from .perceiver import BrainPerceiver, Memory, RulePerceiver
from .records import ToolCall
from .reward import ClassicReward, image_statistics
from .trace import Trace


@dataclass(frozen=True)
class MCTSSettings:
    simulations: int = 24  # per step
    depth: int = 3  # rollout depth d
    exploration: float = 1.0  # UCT constant c
    branching: int = 6  # actions the perceiver proposes per tree node
    top_k: int = 2  # most-visited actions re-run at full resolution
    max_steps: int = 4
    patience: int = 1
    min_gain: float = 0.01
    preview_side: int = 256
    time_budget_s: float = 60.0  # per step
    seed: int = 0

    def __post_init__(self):
        for name in ("simulations", "depth", "branching", "top_k", "max_steps", "patience", "preview_side"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not (self.exploration >= 0 and self.time_budget_s > 0 and math.isfinite(self.min_gain)):
            raise ValueError("exploration must be >= 0, time_budget_s > 0 and min_gain finite")


@dataclass
class TreeNode:
    image: np.ndarray = field(repr=False)
    depth: int
    action: ToolCall | None = None
    untried: list[ToolCall] | None = None
    children: list["TreeNode"] = field(default_factory=list)
    visits: int = 0
    total: float = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.visits if self.visits else 0.0

    def as_dict(self, levels: int = 2) -> dict[str, Any]:
        """The tree ``levels`` deep, most visited first; each node with a 64 px thumbnail of its
        (preview-resolution) state for the tree view."""
        out = {"action": self.action.label() if self.action else "(current)", "visits": self.visits,
               "mean": round(self.mean, 5)}
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


class _Search:
    def __init__(self, tools, reward, perceiver, settings, original_preview, rng):
        self.tools, self.reward, self.perceiver, self.s = tools, reward, perceiver, settings
        self.original = original_preview
        self.rng = rng
        self.cache: dict[tuple, np.ndarray] = {}
        self.scores: dict[tuple, float] = {}
        self.hits = 0
        self.simulations = 0
        self.memory: list[Memory] = []  # executed actions and their outcomes, for the perceiver
        self.root_proposals: list[ToolCall] = []

    def propose(self, img: np.ndarray, at_root: bool) -> list[ToolCall]:
        if self.perceiver.per_step and not at_root:  # an expensive (VLM) perceiver is asked once per step
            return list(self.root_proposals)
        calls = self.perceiver.propose(image_statistics(img), self.s.branching, self.tools.names(), image=img,
                                       memory=tuple(self.memory))
        if at_root:
            self.root_proposals = list(calls)
        return calls

    def apply(self, path: tuple, img: np.ndarray, call: ToolCall) -> tuple[tuple, np.ndarray]:
        key = path + (call.key(),)
        if key in self.cache:
            self.hits += 1
        else:
            self.cache[key] = self.tools.call(call.tool, img, call.params)[0]
        return key, self.cache[key]

    def value(self, key: tuple, img: np.ndarray) -> float:
        if key not in self.scores:
            self.scores[key] = self.reward.score(img, self.original).total
        return self.scores[key]

    def run(self, root_img: np.ndarray, should_stop) -> TreeNode:
        root = TreeNode(root_img, 0)
        # cache keys start from the root state itself, so a later step (a new root) never reuses
        # results computed from an earlier one, while identical states share them
        root_key = (hashlib.sha1(np.ascontiguousarray(root_img).tobytes()).hexdigest()[:20],)
        deadline = time.perf_counter() + self.s.time_budget_s
        for _ in range(self.s.simulations):
            if time.perf_counter() > deadline:
                break
            if should_stop:
                should_stop()
            self.simulations += 1
            node, path, keys = root, [root], root_key
            while True:  # selection: descend while fully expanded
                if node.untried is None:
                    node.untried = self.propose(node.image, node is root)
                if node.untried or not node.children or node.depth >= self.s.depth:
                    break
                node = max(node.children, key=lambda c: c.mean + self.s.exploration *
                           math.sqrt(math.log(node.visits + 1) / (c.visits + 1e-9)))
                keys += (node.action.key(),)
                path.append(node)
            if node.untried and node.depth < self.s.depth:  # expansion
                call = node.untried.pop(0)
                keys, img = self.apply(keys, node.image, call)
                child = TreeNode(img, node.depth + 1, call)
                node.children.append(child)
                node, path = child, path + [child]
            img, rkeys = node.image, keys
            for _ in range(node.depth, self.s.depth):  # rollout: random proposals down to depth d
                options = self.propose(img, False)
                if not options:
                    break
                rkeys, img = self.apply(rkeys, img, self.rng.choice(options))
            value = max(self.value(keys, node.image), self.value(rkeys, img))  # the best state seen on this path
            for n in path:  # backpropagation
                n.visits += 1
                n.total += value
        return root


def mcts_enhance(image: np.ndarray, tools: ToolRegistry, reward: ClassicReward | None = None,
                 settings: MCTSSettings | None = None, perceiver: RulePerceiver | BrainPerceiver | None = None,
                 should_stop: Callable[[], None] | None = None,
                 on_step: Callable[[int, int, str], None] | None = None, agent: str = "photoagent",
                 listener: Callable | None = None) -> MCTSResult:
    """Search and apply edits step by step; ``listener`` gets each trace step as it is made."""
    if len(tools) == 0:
        raise ValueError("the toolbox has no tools: connect a Toolbox that allows at least one tool")
    s = settings or MCTSSettings()
    reward, perceiver = reward or ClassicReward(), perceiver or RulePerceiver()
    trace = Trace(title=f"PhotoAgent MCTS ({s.simulations} simulations x depth {s.depth} per step)", listener=listener)
    if isinstance(perceiver, BrainPerceiver):  # its calls go in this trace
        perceiver.trace, perceiver.agent = trace, agent
    t0 = time.perf_counter()
    original_preview = resize_longest(image, s.preview_side)
    search = _Search(tools, reward, perceiver, s, original_preview, random.Random(s.seed))
    current, current_score = image, reward.score(image, image)
    start_score = current_score.total
    trace.add("reward", agent, "score the input", started=t0, scores=current_score.as_dict(), preview=image,
              outputs={"reward": current_score.report()},
              inputs={"ensemble": reward.describe() if hasattr(reward, "describe") else type(reward).__name__})
    states, actions, trees, stale = [image], [], [], 0
    for step in range(s.max_steps):
        if on_step:
            on_step(step, s.max_steps, f"step {step + 1}/{s.max_steps}: searching")
        t = time.perf_counter()
        sims_before, hits_before = search.simulations, search.hits
        root = search.run(resize_longest(current, s.preview_side), should_stop)
        tree = root.as_dict()
        trees.append(tree)
        trace.add("planner", agent, f"MCTS: {search.simulations - sims_before} simulations, "
                                    f"{search.hits - hits_before} cache hits", started=t, round=step,
                  outputs={"tree": tree, "proposals": [c.as_dict() for c in search.root_proposals],
                           "memory": [m.line() for m in search.memory]})
        ranked = sorted(root.children, key=lambda c: (-c.visits, -c.mean))[:s.top_k]
        if not ranked:
            trace.add("loop", agent, "stop: nothing to try", round=step)
            break
        # re-run the most visited first actions at full resolution
        best = rescore_best(tools, reward, [(c.action, f" (visits {c.visits})") for c in ranked], current, image,
                            trace, agent, step, should_stop)
        gain = best[0].total - current_score.total
        search.memory.append(Memory(best[1], gain, gain > s.min_gain))
        for child in tree.get("children", []):  # the chosen path, for the tree view
            if child["action"] == best[1].label():
                child["chosen"] = "kept" if gain > s.min_gain else "reverted"
        if gain > s.min_gain:
            current, current_score = best[2], best[0]
            states.append(current)
            actions.append(best[1])
            stale = 0
            trace.add("loop", agent, f"accept {best[1].label()}", round=step,
                      outputs={"action": best[1].as_dict(), "chosen": best[1].label(), "reward": current_score.report()},
                      scores={"total": round(current_score.total, 5), "gain": round(gain, 5)}, image=len(states) - 1,
                      preview=current)
        else:
            stale += 1
            trace.add("loop", agent, f"revert: best {best[1].label()} gains {gain:+.4f}", round=step,
                      scores={"gain": round(gain, 5)}, outputs={"chosen": best[1].label()})
            if stale >= s.patience:
                trace.add("loop", agent, f"stop: no improvement for {stale} step(s)", round=step)
                break
    trace.summary = {"steps": len(actions), "actions": [a.as_dict() for a in actions],
                     "score_before": round(start_score, 5), "score_after": round(current_score.total, 5),
                     "simulations": search.simulations, "cache_hits": search.hits,
                     "wall_s": round(time.perf_counter() - t0, 3)}
    return MCTSResult(current, states, actions, start_score, current_score.total, search.simulations, search.hits,
                      trees, trace)
