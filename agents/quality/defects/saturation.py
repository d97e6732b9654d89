"""Over-saturation: garish colours, pushed past the file's range."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at

# Colour spread (Hasler and Suesstrunk's, without the mean term) above which colours are garish: the most colourful
# clean photos here reach 0.25 (scikit-image's retina, I03), and their scale calls 0.23-0.32 "quite" to "highly"
# colourful. A photo past this is brought back into COLOURFUL_TARGETS, the upper range of clean photos.
OVER_COLOURFUL = 0.3
COLOURFUL_TARGETS = (0.24, 0.2)
# ... and only where the colours were pushed past the file's range: the share of colourful pixels with a channel at
# 0 or 1 (metrics.gamut_clipped). Clean photos and generated pictures read at most 0.25 (0.19 among those past the
# spread limit), saturation raised in display values 0.72-0.85 past it: a vivid scene is the photographer's.
OVER_GAMUT = 0.4


def over_saturation(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """A colour spread past OVER_COLOURFUL with its colours clipped: saturation down to COLOURFUL_TARGETS."""
    stats = seen.stats
    spread = stats["colourfulness"]
    clipped = stats.get("gamut_clip", 1.0)
    garish = spread > OVER_COLOURFUL and clipped > OVER_GAMUT
    why = (f"colour spread {spread:.3f} (limit {OVER_COLOURFUL}; the most colourful clean photos reach 0.25), "
           f"{clipped:.0%} of the colourful pixels clipped in a channel (limit {OVER_GAMUT:.0%}: colours pushed "
           "past the file's range; a scene's own vivid colours stay inside it)")
    # saturation scales the colour differences, so the spread, by 1 + amount
    amounts = [round(target / max(spread, 1e-6) - 1.0, 2) for target in COLOURFUL_TARGETS]
    return (Finding("over-saturation", spread, OVER_COLOURFUL, garish, why),
            _at("saturation", "amount", amounts, why) if garish else [])


OVER_SATURATION = Defect("over-saturation", ("colourfulness", "gamut_clip"), over_saturation, colour_only=True)
