"""The rule brain's competitor role for CCA: keep the candidate with the most checks passed, then the best score."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .brain import RuleBrain


def pick(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The best candidate by (fraction of checks passed, score); stop when it satisfies the request."""
    cands = ctx["candidates"]
    best = max(range(len(cands)), key=lambda i: (cands[i]["yes_fraction"], cands[i]["score"]))
    stop = bool(cands[best]["satisfied"])
    return {"best": best, "stop": stop, "reason": f"candidate {best}: {cands[best]['yes_fraction']:.0%} of checks "
                                                  f"passed, score {cands[best]['score']:.1f}"}, []
