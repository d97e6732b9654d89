"""How many colour cases can a rule on global colour statistics tell from a clean photo?

The colour counterpart of bench/tone_identifiability.py. A rule that reads the photo's global colour (the cast of
its light, as the rule perceiver and the reward do, and how colourful it is) and corrects a photo because it reads a
cast must also correct every photo that reads a stronger cast the same way. So a cast case is *dominated* when some
clean photo (not the case's own original) reads a cast within 22.5 degrees of the case's (in log(R/G), log(B/G),
weighted by how far the estimators agree, as `colour_cast` is) and at least as strong. A washed-out colour case is
dominated by a clean photo no more colourful; an over-saturated one by a clean photo at least as colourful and with at
least as many of its colourful pixels clipped (the perceiver's two readings). A case whose colour reading is that of a
black-and-white photo (no colour to read) is left out, as the defect space leaves it out. The figure bounds what the
offline perceiver can reach on these families without editing a clean picture; it says nothing of rules that read
more than the global colour (a grey card, a vision model).

    python bench/colour_identifiability.py                    # about 20 s
    python bench/colour_identifiability.py --comfy-pictures   # ComfyUI's template pictures counted as clean too
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from photoset import CALIBRATION, EVALUATION, load  # noqa: E402
from tone_identifiability import bound_table, command_line, other_pictures  # noqa: E402

from edit_agents.agents.quality.metrics import global_statistics  # noqa: E402

CLEAN = EVALUATION + CALIBRATION + ("retina",)
CASTS = ("temperature", "tint", "channel-gains")
PALER = ("washed-colour",)
GARISH = ("over-saturated",)
SECTOR = math.radians(22.5)  # casts this close in hue count as the same way (the perceiver's eight hues)


def colour(img) -> dict[str, float]:
    stats = global_statistics(img)
    confidence = stats["cast_confidence"]
    return {"red": stats["cast_red"] * confidence, "blue": stats["cast_blue"] * confidence,
            "colourfulness": stats["colourfulness"], "gamut_clip": stats["gamut_clip"],
            "gray": float(stats["is_gray"])}


def _same_way(a: dict, b: dict) -> bool:
    angle = abs(math.atan2(a["blue"], a["red"]) - math.atan2(b["blue"], b["red"]))
    return min(angle, 2 * math.pi - angle) <= SECTOR


def _strength(c: dict) -> float:
    return math.hypot(c["red"], c["blue"])


def dominated(case: dict, own: str, clean: dict[str, dict], family: str) -> list[str]:
    """The clean photos (not ``own``) a monotone rule on the global colour could not spare while fixing ``case``."""
    others = {p: c for p, c in clean.items() if p != own and not c["gray"]}
    if family in CASTS:
        return [p for p, c in others.items() if _strength(c) >= _strength(case) and _same_way(c, case)]
    if family in PALER:
        return [p for p, c in others.items() if c["colourfulness"] <= case["colourfulness"]]
    return [p for p, c in others.items()
            if c["colourfulness"] >= case["colourfulness"] and c["gamut_clip"] >= case["gamut_clip"]]


def main(per_family: int = 2, comfy: bool = False) -> None:
    clean = {p: colour(load(p)) for p in CLEAN}
    print(f"clean photos ({len(clean)}, {sum(1 for c in clean.values() if c['gray'])} black-and-white): "
          + ", ".join(f"{p} cast {_strength(c):.3f} colour {c['colourfulness']:.3f}"
                      for p, c in clean.items() if not c["gray"]))
    others = other_pictures(colour, comfy)
    # colour made on a black-and-white photo stays grey: no colour case (the defect space leaves it out too)
    bound_table(CASTS + PALER + GARISH, per_family, colour, dominated, clean, others, skip=lambda case: case["gray"])


if __name__ == "__main__":
    command_line(main, __doc__)
