"""Over-saturation: garish colours, pushed past the file's range."""
from __future__ import annotations

from ...records import ToolCall
from .base import Defect, Finding, Seen, _at

# Colour spread (Hasler and Suesstrunk's, without the mean term) above which colours are garish: the most colourful
# clean photos here reach 0.25 (scikit-image's retina, I03), and their scale calls 0.23-0.32 "quite" to "highly"
# colourful. A photo past this is brought back into COLOURFUL_TARGETS, the upper range of clean photos.
OVER_COLOURFUL = 0.3
COLOURFUL_TARGETS = (0.24, 0.2)
# ... and only where the colours were pushed past the file's range: the share of colourful pixels whose weakest
# channel is at 0 (metrics.gamut_clipped), as saturation raised in display values leaves them. The defect space's
# over-saturated cases past the spread limit read 0.46-0.70; of the project's photos and 610 of ComfyUI's pictures,
# 2 of the 28 past the spread limit read more (a green screen, an edited product shot); phones' vivid subjects 0-0.34,
# their brightest channel clipped by the exposure instead (a red motorcycle in sun: 72% at 1, none at 0).
OVER_GAMUT = 0.4


def over_saturation(seen: Seen) -> tuple[Finding, list[ToolCall]]:
    """A colour spread past OVER_COLOURFUL with its colours pushed to 0, in this state and in the photo as it came:
    saturation down to COLOURFUL_TARGETS."""
    stats = seen.stats
    spread = stats["colourfulness"]
    # the photo as it came decides too: colours a black point or contrast the search tried pushed to 0 are not garish
    clipped = min(stats.get("gamut_clip", 1.0), stats.get("photo_gamut_clip", 1.0))
    garish = spread > OVER_COLOURFUL and clipped > OVER_GAMUT
    why = (f"colour spread {spread:.3f} (limit {OVER_COLOURFUL}; the most colourful clean photos reach 0.25), "
           f"{clipped:.0%} of the colourful pixels with their weakest channel at 0 (limit {OVER_GAMUT:.0%}: colours "
           "pushed past the file's range; a scene's own vivid colours stay inside it, in the photo as it came)")
    # saturation scales the colour differences, so the spread, by 1 + amount
    amounts = [round(target / max(spread, 1e-6) - 1.0, 2) for target in COLOURFUL_TARGETS]
    return (Finding("over-saturation", spread, OVER_COLOURFUL, garish, why),
            _at("saturation", "amount", amounts, why) if garish else [])


OVER_SATURATION = Defect("over-saturation", ("colourfulness", "gamut_clip"), over_saturation, colour_only=True)
