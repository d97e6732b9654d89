"""The rule brain's aggregator role: the experts' praise and criticism merged (the score is roles.verdict's)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .brain import RuleBrain


def merge(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The union of the critiques' positive and negative texts, each in its first order, without repeats."""
    critiques = ctx["critiques"]  # the text merged; the score is computed by roles.verdict, not here
    join = lambda items: "; ".join(dict.fromkeys(i for i in items if i))  # noqa: E731  (union, order kept)
    return {"positive": join(c.positive for c in critiques), "negative": join(c.negative for c in critiques)}, []
