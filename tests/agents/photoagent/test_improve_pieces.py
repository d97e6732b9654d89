"""The improve loop's pieces (issue 68): the tree's UCT and backup, the scorer's held readings, the budget, Progress."""
from __future__ import annotations

import math

import numpy as np

from edit_agents.agents.photoagent.budget import Budget
from edit_agents.agents.photoagent.improve import Progress, run_steps
from edit_agents.agents.photoagent.scorer import Scorer
from edit_agents.agents.photoagent.state import root_state
from edit_agents.agents.photoagent.tree import STOP, Spread, TreeNode, backup, open_leaf, select
from edit_agents.agents.records import ToolCall
from edit_agents.agents.quality.reward import ClassicReward
from edit_agents.agents.trace import Trace
from edit_agents.tools import default_registry

TOOLS = default_registry().subset(categories=["classic"])


def _node(depth: int = 0, action: ToolCall | None = None) -> TreeNode:
    return TreeNode(root_state(np.full((32, 32, 3), 0.5, np.float32), 32), depth, (depth,), action)


def test_uct_normalises_by_the_spread_and_tries_an_unvisited_child_first():
    parent, seen, fresh = _node(), _node(1, ToolCall("exposure", {})), _node(1, ToolCall("gamma", {}))
    backup([parent, seen], 0.2)
    backup([parent, seen], 0.4)
    spread = Spread()
    for g in (0.2, 0.4):
        spread.see(g)
    assert (spread.lo, spread.hi) == (0.2, 0.4) and seen.visits == 2 and math.isclose(seen.mean, 0.3)
    assert spread.uct(parent, fresh, 1.0) == math.inf
    assert math.isclose(spread.uct(parent, seen, 1.0), 0.5 + math.sqrt(math.log(2) / 2))
    parent.children = [seen]
    parent.untried = []
    assert select(parent, 3, spread, 1.0) == [parent, seen]  # fully expanded: UCT descends
    parent.untried = [STOP]
    assert select(parent, 3, spread, 1.0) == [parent] and open_leaf(parent, 3) and not open_leaf(parent, 0)


def test_only_a_classic_reward_holds_curves_and_only_where_the_photo_is_not_dark():
    curve, edit = ToolCall("exposure", {"stops": 0.5}), ToolCall("denoise", {"strength": 0.5})
    assert TOOLS.get("exposure").pointwise and not TOOLS.get("denoise").pointwise
    classic = Scorer(ClassicReward())
    assert classic.holds(TOOLS, [edit, curve], {"mean_luma": 0.4})
    assert not classic.holds(TOOLS, [edit], {"mean_luma": 0.4})  # no curve among the edits
    assert not classic.holds(TOOLS, [curve], {"mean_luma": 0.05})  # a dark photo's curves are not held

    class Own:  # a reward of the user's own: no held readings, no spare thread
        def score(self, *args, **kwargs):
            raise AssertionError("not scored here")
    own = Scorer(Own())
    assert not own.holds(TOOLS, [curve], {"mean_luma": 0.4}) and own.pool(object()) == {}
    assert own.kept(TOOLS, "score", np.zeros((8, 8, 3), np.float32), [curve]) == "score"


def test_the_budget_counts_perceiver_calls_per_step():
    budget = Budget(60.0, 2)
    budget.calls += 2
    assert budget.spent()
    budget.new_step()
    budget.start_clock()
    assert not budget.spent() and not budget.out_of_time()


def test_progress_keeps_and_stops_after_patience():
    trace, img = Trace(), np.zeros((4, 4, 3), np.float32)
    progress = Progress(img, None, [img])
    assert not progress.no_gain(trace, "a", 0, 2, "revert: nothing")
    assert progress.no_gain(trace, "a", 1, 2)
    assert [s.action for s in trace.steps] == ["revert: nothing", "stop: no improvement for 2 step(s)"]
    told, ran = [], []
    run_steps(trace, "a", None, 3, lambda n: ran.append(n) or n == 1, lambda *a: told.append(a[2]), "trying")
    assert ran == [0, 1] and told == ["step 1/3: trying", "step 2/3: trying"]
    run_steps(trace, "a", "too small", 3, ran.append, None, "trying")
    assert ran == [0, 1] and trace.steps[-1].action == "stop: too small: left as it is"
