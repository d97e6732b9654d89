"""The search tree: its nodes, the terminal "stop" action, UCT selection and the backup of a rollout's reward.

UCT normalises a child's mean reward by the smallest and largest reward seen in this step's search (``Spread``), so
the exploration constant is on the scale of the rewards whatever their spread. A failed child (its tool raised) is
kept for the tree view with its error and is never selected.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...tools.imageops import thumbnail_data_url
from ..records import ToolCall
from .state import State

STOP = ToolCall("stop", {}, "keep the photo as it is")


@dataclass
class TreeNode:
    """A state of the tree: the action that led to it, its proposals (once asked), its children and their rewards."""

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
class Spread:
    """The smallest and largest reward seen in a step's search: UCT's normalisation of the children's means."""

    lo: float = math.inf
    hi: float = -math.inf

    def see(self, g: float) -> None:
        self.lo, self.hi = min(self.lo, g), max(self.hi, g)

    def uct(self, parent: TreeNode, child: TreeNode, exploration: float) -> float:
        """UCT of ``child``: its mean normalised to 0..1 by the spread, plus the exploration term (unvisited: inf)."""
        if child.visits == 0:
            return math.inf
        spread = self.hi - self.lo
        q = (child.mean - self.lo) / spread if spread > 1e-12 else 0.5
        return q + exploration * math.sqrt(math.log(parent.visits) / child.visits)


def open_leaf(node: TreeNode, depth: int) -> bool:
    """Whether ``node`` still has an untried action to expand within the search's depth."""
    return bool(node.untried) and not node.terminal and node.depth < depth


def select(root: TreeNode, depth: int, spread: Spread, exploration: float) -> list[TreeNode]:
    """The path UCT descends from ``root``, while each node is fully expanded (a failed child is never selected)."""
    node, path = root, [root]
    while not node.untried and not node.terminal and node.depth < depth:
        live = [c for c in node.children if not c.failed]
        if not live:
            break
        parent = node
        node = max(live, key=lambda c: spread.uct(parent, c, exploration))
        path.append(node)
    return path


def backup(path: list[TreeNode], g: float) -> None:
    """A rollout's reward backed up the path as it is (a "max" backup measured no better)."""
    for n in path:
        n.visits += 1
        n.total += g
