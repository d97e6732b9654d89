"""What the perceiver proposes at each state of a search: asked once per state, an expensive one within its budget.

The proposals leave out what a path has used already (a plan applies each tool once, at the strength it chose), what
works against an edit on the way or kept in an earlier step (ToolSpec.conflicts), and the actions that failed in
this search. The perceiver reads each state's statistics beside the photo's own (its tones and posterisation as it
came, how bright it came) and the memory of the edits executed so far.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ...tools.spec import ToolRegistry
from .budget import Budget
from .cache import StateCache
from .improve import as_it_came
from ..quality.perception import Memory, Perception, RulePerceiver
from .scorer import photo_levels
from .state import State
from .tree import TreeNode
from ..records import ToolCall
from ..quality.metrics import image_statistics


class Proposals:
    """The perceiver's actions per search state, by state key, and what it knows of the photo across steps."""

    def __init__(self, perceiver, tools: ToolRegistry, cache: StateCache, budget: Budget, branching: int,
                 kernel: Callable[[list], dict | None]):
        self.perceiver, self.tools, self.cache, self.budget, self.branching = perceiver, tools, cache, budget, branching
        self.kernel = kernel  # the photo's blur kernel this step, estimated once (the rule perceiver reads it)
        self.pool = cache.pool  # a spare thread (spare_thread) for the statistics
        self.expensive = getattr(perceiver, "expensive", False)  # a vision brain: asked within a budget
        self.perceptions: dict[tuple, Perception] = {}
        self.memory: list[Memory] = []  # executed actions and their outcomes, for the perceiver
        self.barred: frozenset[str] = frozenset()  # tools that work against an edit kept in an earlier step
        self.kept: tuple[ToolCall, ...] = ()  # the edits kept in earlier steps: the root is the photo after them
        self.root_key: tuple = ()  # the key of this step's root (its statistics: the perceiver's reference)
        self.levels: float | None = None  # the photo's own posterisation reading, from the first step's root
        self.tones: dict[str, float] | None = None  # the photo's own readings (improve.as_it_came), from the same root

    def conflicts_of(self, used) -> frozenset[str]:
        """The tools that work against any of ``used`` (ToolSpec.conflicts)."""
        names = set(self.tools.names())
        return frozenset(c for tool in used if tool in names for c in self.tools.get(tool).conflicts)

    def of(self, key: tuple, state: State) -> list[ToolCall]:
        """The perceiver's actions for a state, asked once and cached by the state's key."""
        if key not in self.perceptions:
            stats = self.cache.statistics[key] = image_statistics(state.preview, state.crops, self.pool,
                                                                  known=self.carried(key))
            if key == self.root_key and self.tones is None:  # the photo as it came (photo_levels, as_it_came)
                self.levels, self.tones = stats.get("level_step"), as_it_came(stats)
            stats = {**stats, **(self.tones or {})}
            root = self.cache.statistics.get(self.root_key)
            if root is not None and key != self.root_key:
                # how bright the photo came: a state the search darkened itself is no under-exposed photo
                stats = {**stats, "photo_white_level": root["white_level"],
                         "photo_channel_white": root.get("channel_white", 0.0)}
            # a plan applies each tool once, at the strength it chose: repeating one on the same path
            # (sharpen after sharpen) only overshoots what one stronger proposal does
            used = self.cache.path_tools.get(key, frozenset())
            # nor what works against an edit on the way here or kept in an earlier step (ToolSpec.conflicts)
            used = used | self.barred | self.conflicts_of(used)
            # the rules fill their proposals from the tools not used yet; a model is offered the same toolbox
            # everywhere (its schema never changes) and its repeats are dropped after it answers
            actions = [n for n in self.tools.names() if self.tools.get(n).stands_alone]  # edits on their own
            offered = actions if self.expensive else [n for n in actions if n not in used]
            # the rule perceiver reads the step's one kernel estimate instead of estimating one per state
            rules = isinstance(self.perceiver, RulePerceiver)
            extra = {"kernel": lambda: self.kernel(state.crops)} if rules else {}
            seen = self.perceiver.perceive(stats, self.branching, offered, image=state.preview,
                                           memory=tuple(self.memory), crops=state.crops, **extra)
            self.perceptions[key] = replace(seen, actions=tuple(a for a in seen.actions if a.tool not in used))
        return self.cache.runnable(self.perceptions[key].actions)

    def carried(self, key: tuple) -> dict[str, float]:
        """What a state shares with this step's photo, not read again: the lens's colour fringes, which no classic
        edit moves but one that moves pixels (ToolSpec.moves_pixels: fix_fringes, a crop or a rotation; read on
        every state, they cost about 6 ms each, whatever the copy's size: a fifth of a new state at 1/4 resolution);
        and posterisation, read on the photo as it came until an edit fills its levels in (scorer.photo_levels)."""
        out = photo_levels(self.levels, self.kept + self.cache.path_calls.get(key, ()))  # posterisation: the photo's
        root = self.cache.statistics.get(self.root_key)
        if root is None or key == self.root_key or "fringes" not in root:
            return out
        names = self.tools.names()
        for name in self.cache.path_tools.get(key, ()):
            if name not in names or self.tools.get(name).category != "classic" or self.tools.get(name).moves_pixels:
                return out
        return {**out, "fringes": root["fringes"]}

    def for_node(self, node: TreeNode, parent: TreeNode | None) -> list[ToolCall]:
        """The proposals for a newly expanded tree state; an expensive perceiver within its per-step budget."""
        if self.expensive and node.key not in self.perceptions:
            if self.budget.spent() and parent is not None:
                # over budget: reuse the nearest asked ancestor's, without the tools used on the way here
                used = self.cache.path_tools.get(node.key, frozenset())
                return self.cache.runnable(c for c in parent.proposals or [] if c.tool not in used)
            self.budget.calls += 1
        return self.of(node.key, node.state)

    def for_rollout(self, key: tuple, state: State, inherited: list[ToolCall]) -> list[ToolCall]:
        """The actions a rollout may take from a state it reached: the state's own proposals."""
        if self.expensive:
            return inherited  # a vision brain is asked for tree states only (its budget), not for rollouts
        return self.of(key, state)
