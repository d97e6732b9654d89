"""The search's state cache: each state it made, by the key of the path that leads to it, and what was read on it.

A key starts from the step's root (its copy's hash and the reward's scoring text) and adds each edit's key, so a
later step never reuses results computed from an earlier root, while identical paths share them. An edit whose
tool raised is a failed action for the rest of the search (its tool too, when a model file is missing).
"""
from __future__ import annotations

from concurrent.futures import Executor

from ...tools.models import MissingModelError
from ...tools.spec import ToolRegistry
from ..records import ToolCall
from ..trace import Trace
from .improve import failed_call
from .state import State, apply_call
from .tree import STOP


class StateCache:
    """The states made in a search and what was read on them, by path key; the failed actions and broken tools."""

    def __init__(self, tools: ToolRegistry, pool: Executor | None = None, trace: Trace | None = None,
                 agent: str = "photoagent"):
        self.tools, self.pool = tools, pool  # pool: a spare thread (spare_thread) for the crops' edits
        self.trace, self.agent = trace, agent  # where a failed action is reported
        self.states: dict[tuple, State] = {}
        self.scores: dict[tuple, float] = {}
        self.statistics: dict[tuple, dict] = {}  # a state's raw statistics, read by the perceiver and the reward
        self.readings: dict[tuple, dict[str, float]] = {}  # a state's BRISQUE and NIQE, where no curve made it
        self.path_tools: dict[tuple, frozenset[str]] = {}  # the tools already used on the way to a state
        self.path_calls: dict[tuple, tuple[ToolCall, ...]] = {}  # the edits on the way to a state, in this step
        self.failures: dict[str, str] = {}  # actions whose tool raised in this search (by call key): why
        self.broken: dict[str, str] = {}  # tools that cannot run at all here (a model file missing): why
        self.hits = 0
        self.tool_calls = 0  # tool runs on search states (a model tool: one per search edit)

    def runnable(self, calls) -> list[ToolCall]:
        """``calls`` without those that failed in this search, and without tools that cannot run at all."""
        return [c for c in calls if c.key() not in self.failures and c.tool not in self.broken]

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
