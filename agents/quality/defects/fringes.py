"""Colour fringes: a lens's lateral chromatic aberration, red or blue magnified apart from green."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, penalised

# Colour fringes (global_statistics' fringes: lateral chromatic aberration, red's or blue's magnification apart from
# green in % of the half-diagonal; tools/restore.fringe_scales): 0-0.15 on the project's clean photos but the retina
# (0.68: its blue image, read alike in all four quarters, may be its fundus camera's own aberration) and at most 0.22
# on every other defect of the defect space (a defocus on the coffee). Never intent.
FRINGE_LIMIT = 0.3
PENALTY = Penalty("fringes", "fringes", 1.0, FRINGE_LIMIT, "colour fringes, % of the half-diagonal")


def fringes(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's verdict on the fringes: fix_fringes."""
    why = (f"red and blue magnified apart from green by {seen.stats.get('fringes', 0.0):.2f}% of the half-diagonal, "
           f"alike in all four quarters (limit {FRINGE_LIMIT}%: colour fringes from the lens, widening toward the "
           "corners)")
    return penalised(seen, PENALTY, "colour fringes", FRINGE_LIMIT, why, "fix_fringes", "strength", (1.0,))


FRINGES = Defect("colour fringes", ("fringes",), fringes, PENALTY, colour_only=True)
