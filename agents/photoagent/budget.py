"""A search step's budgets: its time, and the calls it may make to an expensive perceiver (a vision brain)."""
from __future__ import annotations

import time


class Budget:
    """The limits of one search step: a deadline for its simulations and a count of expensive perceiver calls."""

    def __init__(self, time_s: float, perceiver_calls: int):
        self.time_s, self.most_calls = time_s, perceiver_calls
        self.calls = 0  # this step's calls to an expensive perceiver
        self.deadline = time.perf_counter() + time_s

    def new_step(self) -> None:
        """A new step: its perceiver calls counted from none (its deadline is set when its simulations start)."""
        self.calls = 0

    def start_clock(self) -> None:
        self.deadline = time.perf_counter() + self.time_s

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def spent(self) -> bool:
        """Whether this step's expensive perceiver calls are all made."""
        return self.calls >= self.most_calls
