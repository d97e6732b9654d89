"""Posterisation: too few levels, as banded skies show."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Penalty, Seen, penalised

# Posterisation (texture_statistics' level_step: the typical step between the levels the green channel uses, in 8-bit
# levels; tools/restore.level_step): at most 1.0 on the project's clean photos (an 8-bit file uses every level of its
# range) and 1.74 on every other family of the defect space (an S-curve stretching a flat brick); the quantised-linear
# family (16-48 levels a channel in linear light) reads 3.6-19.9. Seldom intent: a poster look made on purpose keeps
# its flat areas when smoothed, since the tool holds each pixel within its own level's step.
STEP_LIMIT = 2.5
PENALTY = Penalty("posterisation", "level_step", 1.0, STEP_LIMIT, "posterisation, step between levels in 8-bit levels")


def posterisation(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """The reward's verdict on the steps: deband."""
    why = (f"the photo steps {seen.stats.get('level_step', 0.0):.1f} levels of 255 from one value it uses to the next "
           f"(limit {STEP_LIMIT}: posterisation, too few levels, as banded skies show)")
    return penalised(seen, PENALTY, "posterisation", STEP_LIMIT, why, "deband", "radius", (2.0, 5.0), strength=1.0)


# sharpening steepens the steps (blur.py)
POSTERISATION = Defect("posterisation", ("level_step",), posterisation, PENALTY, needs=("noise_sigma",),
                       raises="speckled")
