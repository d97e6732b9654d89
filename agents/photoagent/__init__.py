"""PhotoAgent: a perceiver proposes edits (``perceiver``), a search chooses among them by the reward (``search``:
MCTS, the paper's planner; ``enhance``: a greedy keep-or-revert baseline). The reward is ``agents/quality/reward.py``."""
