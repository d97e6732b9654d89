"""The defects a photo is checked for, each declared in its own module (its readings, limits, the reward's penalty on
it, the tool calls it proposes and the findings that hold them back), and what is built from them: the reward's
penalties and the rule perceiver's diagnosis.

Adding a defect: a module here declaring a ``Defect`` (and its tool in tools/), and its place in DEFECTS; a reading
it needs that no metric makes is declared in ``readings.READINGS`` and computed in ``metrics`` (the registry names
any it reads undeclared, at import).
"""
from __future__ import annotations

from typing import Any, Mapping

from ...records import ToolCall
from ..readings import READ_WHERE
from .banding import BANDING
from .base import Defect, Finding, Penalty, Seen
from .blotches import COLOUR_BLOTCHES
from .blur import BLUR
from .cast import COLOUR_CAST
from .chroma import COLOUR_NOISE
from .exposure import OVER_EXPOSURE, UNDER_EXPOSURE
from .fringes import FRINGES
from .impulses import IMPULSE_NOISE
from .jpeg import JPEG_BLOCKS
from .noise import NOISE
from .posterisation import POSTERISATION
from .saturation import OVER_SATURATION
from .tones import LOW_CONTRAST
from .veil import VEIL

# The order the perceiver checks them in, which is the order of its findings and of its proposals: a flag a defect
# raises holds back only the defects after it.
DEFECTS: tuple[Defect, ...] = (UNDER_EXPOSURE, LOW_CONTRAST, VEIL, OVER_EXPOSURE, OVER_SATURATION, FRINGES, COLOUR_CAST,
                               IMPULSE_NOISE, BANDING, NOISE, COLOUR_NOISE, COLOUR_BLOTCHES, POSTERISATION, JPEG_BLOCKS,
                               BLUR)
# The order the reward charges and describes its penalties in (a sum's order moves its last digit); one not listed
# comes after these, in DEFECTS' order.
PENALTY_ORDER = ("compression", "chroma", "veil", "impulses", "fringes", "banding", "blotches", "posterisation",
                 "softness")
_CHARGED = [d.penalty for d in DEFECTS if d.penalty is not None]
PENALTY: dict[str, Penalty] = {p.name: p for p in sorted(
    _CHARGED, key=lambda p: PENALTY_ORDER.index(p.name) if p.name in PENALTY_ORDER else len(PENALTY_ORDER))}

# The reward's fixed penalties, each for a defect that is never intent, counted only beyond what clean photos show:
# (RewardConfig field, raw statistic, its scale, the clean limit, what the trace calls it).
PENALTIES = tuple(p.row() for p in PENALTY.values())
# the penalties on a statistic that is a defect when low, each with the reading under which its shortfall stops
# growing: counted as the log of the shortfall (excess)
FLOOR_PENALTIES = {p.name: p.floor for p in PENALTY.values() if p.floor is not None}
# the penalties whose statistic the texture crops give (texture_statistics); the others are read on the global copy
TEXTURE_PENALTIES = tuple(p.name for p in PENALTY.values() if READ_WHERE.get(p.reading) == "crops")


def _undeclared() -> list[str]:
    """What a defect or a penalty reads that readings.READINGS does not declare (the photo-as-it-came readings are
    the declared ones under a ``photo_`` prefix)."""
    read = [(d.check, r) for d in DEFECTS for r in d.readings + d.needs]
    read += [(f"the {p.name} penalty", p.reading) for p in PENALTY.values()]
    return [f"{who} reads {r}" for who, r in read if r.removeprefix("photo_") not in READ_WHERE]


if _undeclared():  # a defect added with a reading no metric makes: say which, at import
    raise RuntimeError("readings no metric computes (declare them in agents/quality/readings.py and compute them in "
                      "metrics.py): " + "; ".join(_undeclared()))


def excess(raw: Mapping[str, float], penalty: str) -> float:
    """How far ``raw`` is past the clean limit of a penalty of PENALTIES (0 when fine or not measured); for a floor
    penalty (FLOOR_PENALTIES), the log of how far under it. A colour penalty (the veil) is not read in a
    black-and-white photo."""
    return PENALTY[penalty].excess(raw)


def diagnose(stats: Mapping[str, float], scene: str, kernel: Mapping[str, Any] | None = None
             ) -> list[tuple[Finding, list[ToolCall]]]:
    """Each defect that applies (Defect.applies), in DEFECTS' order: its finding and the tool calls it proposes.
    ``kernel``: the photo's blur kernel where it was measured. A defect is held back where a flag it names in
    ``held_back_by`` was raised by a finding before it."""
    out: list[tuple[Finding, list[ToolCall]]] = []
    flags: dict[str, bool] = {}
    for defect in DEFECTS:
        if not defect.applies(stats, scene):
            continue
        held = any(flags.get(flag, False) for flag in defect.held_back_by)
        finding, calls = defect.rule(Seen(stats, scene, kernel, held))
        if defect.raises:
            kept = flags.get(defect.raises, False) and not defect.overwrites
            flags[defect.raises] = kept or finding.defect
        out.append((finding, calls))
    return out
