"""What a defect declares: the readings it needs, its limits, the reward's penalty on it, the rule that finds it and
proposes the tool calls that take it out, and the other findings that hold that proposal back.

A defect's own module holds all of it; the registry (``defects/__init__.py``) builds the reward's penalties and the
perceiver's diagnosis from them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ...records import ToolCall


@dataclass(frozen=True)
class Finding:
    """One check of the photo: what was measured, against what, and what it means."""

    check: str
    value: float
    threshold: float
    defect: bool
    reason: str

    def line(self) -> str:
        return f"{self.check}: {'DEFECT' if self.defect else 'fine'} - {self.reason}"


@dataclass(frozen=True)
class Penalty:
    """The reward's fixed penalty on a defect that is never intent, counted only beyond what clean photos show."""

    name: str  # the RewardConfig field that weighs it
    reading: str  # the raw statistic it reads
    scale: float  # the reading times this is compared with ``limit``
    limit: float  # the clean limit, on the scaled reading
    label: str  # what the trace calls it
    # a defect when low: the reading under which its shortfall stops growing (the shortfall counts as its log)
    floor: float | None = None
    colour_only: bool = False  # not read in a black-and-white photo

    def row(self) -> tuple[str, str, float, float, str]:
        """The penalty as reward.PENALTIES lists it: (RewardConfig field, raw statistic, scale, limit, label)."""
        return (self.name, self.reading, self.scale, self.limit, self.label)

    def excess(self, raw: Mapping[str, float]) -> float:
        """How far ``raw`` is past the clean limit (0 when fine or not measured); for a floor, the log of how far
        under it."""
        if self.reading not in raw or (self.colour_only and raw.get("is_gray")):
            return 0.0
        if self.floor is not None:
            return max(0.0, math.log(self.limit / max(raw[self.reading] * self.scale, self.floor)))
        return max(0.0, raw[self.reading] * self.scale - self.limit)


@dataclass(frozen=True)
class Seen:
    """What a defect's rule reads: the raw statistics, the scene, the blur kernel (None: not measured) and whether
    a finding the defect is held back by (Defect.held_back_by) was a defect."""

    stats: Mapping[str, float]
    scene: str
    kernel: Mapping[str, Any] | None = None
    held: bool = False


Rule = Callable[[Seen], "tuple[Finding, list[ToolCall]]"]


@dataclass(frozen=True)
class Defect:
    """One defect as the perceiver checks it and the reward charges it."""

    check: str  # its finding's name in the trace
    readings: tuple[str, ...]  # the raw statistics its rule reads
    rule: Rule  # the finding, and the tool calls proposed where it is a defect
    penalty: Penalty | None = None  # the reward's charge on it, where it is never intent
    needs: tuple[str, ...] = ()  # readings without which it is not checked (those of the texture crops)
    colour_only: bool = False  # not checked in a black-and-white scene
    held_back_by: tuple[str, ...] = ()  # flags of earlier findings under which its tool would make things worse
    raises: str = ""  # the flag its finding raises for the defects after it
    overwrites: bool = False  # its finding sets that flag rather than adding to it (chroma.py says why)

    def applies(self, stats: Mapping[str, float], scene: str) -> bool:
        """Whether the photo is checked for it: its readings were made, and a colour defect in a colour scene."""
        return all(k in stats for k in self.needs) and not (self.colour_only and scene == "black-and-white")


# named _at for tests/test_tool_names.py, which reads the tool names written in its calls
def _at(tool: str, param: str, values: Iterable[float], why: str, **fixed) -> list[ToolCall]:
    """One call of ``tool`` for each value of ``param`` (rounded to 3 places), with the ``fixed`` parameters."""
    return [ToolCall(tool, {**fixed, param: round(float(v), 3)}, why) for v in values]


def penalised(seen: Seen, penalty: Penalty, check: str, limit: float, why: str, tool: str, param: str,
              values: Iterable[float], **fixed) -> tuple[Finding, list[ToolCall]]:
    """A finding on a defect that the reward penalises past a clean limit: the reward's own verdict, and the tool
    that takes the defect out."""
    found = penalty.excess(seen.stats) > 0
    return (Finding(check, seen.stats.get(penalty.reading, 0.0), limit, found, why),
            _at(tool, param, values, why, **fixed) if found else [])
